package dev.idem.adapter.kafka;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.utils.Time;

/**
 * A single-node Kafka (KRaft, combined broker and controller) inside the test JVM, on two free ports of
 * 127.0.0.1, with its data in a temporary directory. It starts in about four seconds, so suites share one:
 * {@link #shared()} starts it on first use and a JVM shutdown hook stops it and deletes its data.
 *
 * <p>Test support, shared with the end-to-end benchmark in {@code bench} through this module's test JAR.
 * Thread-safe.
 */
public final class EmbeddedKafka implements AutoCloseable {

    private static EmbeddedKafka shared;

    private final Path dir;
    private final int port;
    private final KafkaRaftServer server;
    private final Admin admin;

    private EmbeddedKafka(Path dir, int port, KafkaRaftServer server) {
        this.dir = dir;
        this.port = port;
        this.server = server;
        this.admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()));
    }

    /** The broker of this JVM, started on first call. */
    public static synchronized EmbeddedKafka shared() {
        if (shared == null) {
            EmbeddedKafka kafka = start();
            Runtime.getRuntime().addShutdownHook(new Thread(kafka::close, "embedded-kafka-shutdown"));
            shared = kafka;
        }
        return shared;
    }

    /** Formats a fresh data directory and starts a broker on it; the caller closes it. */
    public static EmbeddedKafka start() {
        return start(null, 0, null);
    }

    /**
     * A broker as {@link #start()} makes, with one more listener, {@code name}, on {@code 127.0.0.1:port},
     * advertised as {@code advertised} ({@code host:port}): a client that bootstraps there is told to connect to
     * {@code advertised} for everything, e.g. a proxy in front of {@code port}, while {@link #bootstrapServers()}
     * and the admin client stay on the direct listener. The caller closes it.
     */
    public static EmbeddedKafka startWithListener(String name, int port, String advertised) {
        return start(name, port, advertised);
    }

    private static EmbeddedKafka start(String extraListener, int extraPort, String extraAdvertised) {
        try {
            Path dir = Files.createTempDirectory("idem-kafka-");
            int port = freePort();
            int controllerPort = freePort();
            Properties p = new Properties();
            p.put("process.roles", "broker,controller");
            p.put("node.id", "1");
            p.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
            String extra = extraListener == null ? "" : "," + extraListener + "://127.0.0.1:" + extraPort;
            p.put("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort + extra);
            p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port
                    + (extraListener == null ? "" : "," + extraListener + "://" + extraAdvertised));
            p.put("controller.listener.names", "CONTROLLER");
            p.put("inter.broker.listener.name", "PLAINTEXT");
            p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
                    + (extraListener == null ? "" : "," + extraListener + ":PLAINTEXT"));
            p.put("log.dirs", dir.resolve("data").toString());
            p.put("num.partitions", "1");
            p.put("offsets.topic.replication.factor", "1");
            p.put("offsets.topic.num.partitions", "4");
            p.put("transaction.state.log.replication.factor", "1");
            p.put("transaction.state.log.min.isr", "1");
            p.put("transaction.state.log.num.partitions", "4");
            p.put("share.coordinator.state.topic.replication.factor", "1");
            p.put("share.coordinator.state.topic.min.isr", "1");
            p.put("group.initial.rebalance.delay.ms", "0");
            p.put("log.flush.interval.messages", Long.toString(Long.MAX_VALUE));
            Path file = dir.resolve("server.properties");
            try (var out = Files.newOutputStream(file)) {
                p.store(out, "idem embedded kafka");
            }
            ByteArrayOutputStream formatOutput = new ByteArrayOutputStream();
            int rc = StorageTool.execute(new String[] {"format", "--config", file.toString(), "--cluster-id",
                    Uuid.randomUuid().toString()}, new PrintStream(formatOutput, true, StandardCharsets.UTF_8));
            if (rc != 0) {
                throw new IllegalStateException("Formatting the embedded Kafka's storage failed (" + rc + "): "
                        + formatOutput.toString(StandardCharsets.UTF_8));
            }
            KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(p, false), Time.SYSTEM);
            server.startup();
            EmbeddedKafka kafka = new EmbeddedKafka(dir, port, server);
            kafka.awaitReady();
            return kafka;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code 127.0.0.1:port}, for {@code bootstrap.servers}. */
    public String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    /** An admin client of this broker, owned by it: do not close. */
    public Admin admin() {
        return admin;
    }

    /**
     * Creates a topic and waits until every partition has a leader that answers offset queries: right after
     * creation, a broker can still reject a first produce (KAFKA-15591).
     */
    public void createTopic(String topic, int partitions) {
        get(admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all());
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int i = 0; i < partitions; i++) {
            latest.put(new TopicPartition(topic, i), OffsetSpec.latest());
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                admin.listOffsets(latest).all().get(5, TimeUnit.SECONDS);
                return;
            } catch (ExecutionException | TimeoutException e) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("Topic '" + topic + "' has no leader for every partition", e);
                }
                sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    /** Deletes a topic if it exists. */
    public void deleteTopic(String topic) {
        try {
            admin.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
                throw new IllegalStateException("Deleting topic '" + topic + "' failed", e);
            }
        } catch (InterruptedException | TimeoutException e) {
            throw new IllegalStateException("Deleting topic '" + topic + "' failed", e);
        }
    }

    /** The committed offsets of a consumer group ({@code -1} for a partition without commit). */
    public long committed(String group, TopicPartition partition) {
        var offsets = get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        var offset = offsets.get(partition);
        return offset == null ? -1 : offset.offset();
    }

    private void awaitReady() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
                return;
            } catch (ExecutionException | TimeoutException e) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("The embedded Kafka did not start within 60s", e);
                }
                sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    private static <T> T get(KafkaFuture<T> future) {
        try {
            return future.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause().getMessage(), e.getCause());
        } catch (InterruptedException | TimeoutException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** A port of 127.0.0.1 free right now, for a listener of {@link #startWithListener}. */
    public static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        }
    }

    @Override
    public void close() {
        admin.close(Duration.ofSeconds(5));
        server.shutdown();
        server.awaitShutdown();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind is harmless
        }
    }
}
