package dev.idem.store.redis;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A Redis Cluster of a test's own: {@code redis-server} processes on free ports, joined with
 * {@code redis-cli --cluster create}, without replicas, keeping nothing on disk but their files in {@code dir}.
 * Without the binaries the calling test is skipped (see {@link RedisServerProcess#requireBinary}). Stopped by
 * {@link #close()}.
 */
final class RedisTestCluster implements AutoCloseable {

    private final List<RedisServerProcess> nodes = new ArrayList<>();

    private RedisTestCluster() {
    }

    /** Starts {@code size} masters and waits until every one reports the cluster ok. */
    static RedisTestCluster start(Path dir, int size) throws IOException, InterruptedException {
        Path server = RedisServerProcess.requireBinary("redis-server");
        Path cli = RedisServerProcess.requireBinary("redis-cli");
        RedisTestCluster cluster = new RedisTestCluster();
        try {
            List<String> create = new ArrayList<>(List.of(cli.toString(), "--cluster", "create"));
            for (int i = 0; i < size; i++) {
                int port = RedisServerProcess.freePort();
                Path nodeDir = Files.createDirectories(dir.resolve("node-" + port));
                RedisServerProcess node = new RedisServerProcess(server, port, nodeDir, "--cluster-enabled", "yes",
                        "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000");
                cluster.nodes.add(node);
                node.start();
                create.add("127.0.0.1:" + port);
            }
            create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
            run(create);
            for (RedisServerProcess node : cluster.nodes) {
                awaitClusterOk(cli, node.port());
            }
            return cluster;
        } catch (IOException | InterruptedException | RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    /** The URL of the first node, from which a cluster client discovers the others. */
    String url() {
        return nodes.get(0).url();
    }

    @Override
    public void close() throws InterruptedException {
        for (RedisServerProcess node : nodes) {
            node.close();
        }
    }

    private static void run(List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed:\n" + output);
        }
    }

    private static void awaitClusterOk(Path cli, int port) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            Process process = new ProcessBuilder(cli.toString(), "-p", Integer.toString(port), "cluster", "info")
                    .redirectErrorStream(true).start();
            String info = new String(process.getInputStream().readAllBytes());
            process.waitFor(10, TimeUnit.SECONDS);
            if (info.contains("cluster_state:ok")) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("Cluster node " + port + " not ready: " + info);
            }
            Thread.sleep(100);
        }
    }
}
