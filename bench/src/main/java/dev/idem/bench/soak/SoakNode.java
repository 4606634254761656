package dev.idem.bench.soak;

import com.sun.management.GcInfo;
import com.sun.management.UnixOperatingSystemMXBean;
import com.sun.tools.attach.VirtualMachine;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.ThreadMXBean;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.management.MBeanServerConnection;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * One {@code bin/idem run} of the soak: an installation of its own made from the built distribution (its own
 * {@code conf/idem.yaml}, {@link SoakHandler} alone in {@code handlers/}, {@code lib/} and {@code plugins/} linked to
 * the build), the current process, and what the soak reads of it: the outcome counters from {@code /metrics}, the
 * heap after the last GC and the live threads over JMX (the attach API), its open file descriptors and its TCP
 * connections to a port from {@code /proc} (Linux). Not thread-safe: the soak's one thread drives it.
 */
final class SoakNode {

    /** What the soak samples of the process. */
    record Figures(long heapAfterGcBytes, int threads, int fileDescriptors, Map<Integer, Integer> connections) {
    }

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private static final Pattern OUTCOME =
            Pattern.compile("^idem_messages_total\\{[^}]*outcome=\"([a-z-]+)\"[^}]*} ([0-9.eE+]+)$", Pattern.MULTILINE);

    final Path home;
    final int httpPort;
    private final Map<String, String> env;
    private final String javaOpts;
    private Process process;
    private int starts;

    /**
     * @param config the configuration, given the HTTP port
     * @param env the handler's environment
     */
    SoakNode(Path distribution, Path dir, IntFunction<String> config, Map<String, String> env,
            String javaOpts) throws IOException {
        this.home = Files.createDirectories(dir);
        this.httpPort = freePort();
        this.env = Map.copyOf(env);
        this.javaOpts = javaOpts;
        Files.createDirectories(home.resolve("bin"));
        Files.copy(distribution.resolve("bin/idem"), home.resolve("bin/idem"), StandardCopyOption.COPY_ATTRIBUTES,
                StandardCopyOption.REPLACE_EXISTING);
        link(home.resolve("lib"), distribution.resolve("lib"));
        link(home.resolve("plugins"), distribution.resolve("plugins"));
        Files.createDirectories(home.resolve("conf"));
        Files.copy(distribution.resolve("conf/logback.xml"), home.resolve("conf/logback.xml"),
                StandardCopyOption.REPLACE_EXISTING);
        Files.writeString(home.resolve("conf/idem.yaml"), config.apply(httpPort), StandardCharsets.UTF_8);
        Files.createDirectories(home.resolve("handlers"));
        Files.createDirectories(home.resolve("data"));
        Files.createDirectories(home.resolve("logs"));
        packHandler(home.resolve("handlers/soak-handler.jar"));
    }

    private static void link(Path link, Path target) throws IOException {
        if (!Files.exists(link, LinkOption.NOFOLLOW_LINKS)) {
            Files.createSymbolicLink(link, target.toAbsolutePath());
        }
    }

    /** {@link SoakHandler}'s class file alone in a JAR: the handler compiles against idem-api and the JDK only. */
    private static void packHandler(Path jar) throws IOException {
        String entry = SoakHandler.class.getName().replace('.', '/') + ".class";
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        try (InputStream in = SoakHandler.class.getClassLoader().getResourceAsStream(entry);
                OutputStream file = Files.newOutputStream(jar);
                JarOutputStream out = new JarOutputStream(file, manifest)) {
            if (in == null) {
                throw new IllegalStateException("No class file " + entry + " on the class path");
            }
            out.putNextEntry(new JarEntry(entry));
            in.transferTo(out);
            out.closeEntry();
        }
    }

    /** Starts {@code bin/idem run}, its output to {@code logs/run-<n>.log}. */
    void start() throws IOException {
        starts++;
        ProcessBuilder pb = new ProcessBuilder(home.resolve("bin/idem").toString(), "run").directory(home.toFile());
        pb.environment().remove("IDEM_HOME");
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().put("JAVA_OPTS", javaOpts);
        pb.environment().putAll(env);
        process = pb.redirectErrorStream(true).redirectOutput(home.resolve("logs/run-" + starts + ".log").toFile())
                .start();
    }

    long pid() {
        return process.pid();
    }

    boolean alive() {
        return process != null && process.isAlive();
    }

    /** {@code kill -9}: {@code bin/idem} execs Java, so this is the JVM dying without a chance to clean up. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor();
    }

    /** SIGTERM, and the exit code once the graceful stop ended (143 expected). */
    int terminate(Duration timeout) throws InterruptedException {
        process.destroy();
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly().waitFor();
            return -1;
        }
        return process.exitValue();
    }

    /** The {@code idem.messages} counters by outcome; empty while the process does not serve. */
    Map<String, Long> outcomes() {
        Map<String, Long> counts = new HashMap<>();
        try {
            HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + httpPort + "/metrics")).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString());
            Matcher m = OUTCOME.matcher(response.body());
            while (m.find()) {
                counts.merge(m.group(1), (long) Double.parseDouble(m.group(2)), Long::sum);
            }
        } catch (IOException e) {
            return counts;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return counts;
    }

    boolean serving() {
        return outcomes().containsKey("processed");
    }

    /**
     * The process's figures now: heap after its last GC and live threads over JMX (attaching starts the JVM's
     * local management agent once, which adds a few RMI threads to what follows), open file descriptors and
     * established TCP connections to each of {@code ports} from {@code /proc}. A figure that could not be read is
     * -1.
     */
    Figures figures(int... ports) {
        long heap = -1;
        int threads = -1;
        int fds = -1;
        long pid = process.pid();
        try {
            VirtualMachine vm = VirtualMachine.attach(Long.toString(pid));
            try {
                String address = vm.startLocalManagementAgent();
                try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
                    MBeanServerConnection connection = connector.getMBeanServerConnection();
                    threads = ManagementFactory.newPlatformMXBeanProxy(connection,
                            ManagementFactory.THREAD_MXBEAN_NAME, ThreadMXBean.class).getThreadCount();
                    heap = heapAfterLastGc(connection);
                    fds = (int) ManagementFactory.newPlatformMXBeanProxy(connection,
                            ManagementFactory.OPERATING_SYSTEM_MXBEAN_NAME, UnixOperatingSystemMXBean.class)
                            .getOpenFileDescriptorCount();
                }
            } finally {
                vm.detach();
            }
        } catch (Exception e) {
            // A process that just restarted may not answer yet: its figures are missing from this sample.
        }
        Map<Integer, Integer> connections = new HashMap<>();
        Set<Long> sockets = socketInodes(pid);
        for (int port : ports) {
            connections.put(port, sockets == null ? -1 : established(sockets, port));
        }
        if (fds < 0) {
            String[] listing = Path.of("/proc", Long.toString(pid), "fd").toFile().list();
            fds = listing == null ? -1 : listing.length;
        }
        return new Figures(heap, threads, fds, connections);
    }

    /** The heap's pools as the most recent GC (of any collector) left them, summed. */
    private static long heapAfterLastGc(MBeanServerConnection connection) throws IOException {
        Set<String> heapPools = new HashSet<>();
        for (MemoryPoolMXBean pool : ManagementFactory.getPlatformMXBeans(connection, MemoryPoolMXBean.class)) {
            if (pool.getType() == MemoryType.HEAP) {
                heapPools.add(pool.getName());
            }
        }
        GcInfo last = null;
        for (com.sun.management.GarbageCollectorMXBean gc
                : ManagementFactory.getPlatformMXBeans(connection, com.sun.management.GarbageCollectorMXBean.class)) {
            GcInfo info = gc.getLastGcInfo();
            if (info != null && (last == null || info.getEndTime() > last.getEndTime())) {
                last = info;
            }
        }
        if (last == null) {
            return -1;
        }
        long sum = 0;
        for (var pool : last.getMemoryUsageAfterGc().entrySet()) {
            if (heapPools.contains(pool.getKey())) {
                sum += pool.getValue().getUsed();
            }
        }
        return sum;
    }

    /** The inodes of the process's sockets ({@code /proc/<pid>/fd/* -> socket:[inode]}), or null off Linux. */
    private static Set<Long> socketInodes(long pid) {
        Path fdDir = Path.of("/proc", Long.toString(pid), "fd");
        if (!Files.isDirectory(fdDir)) {
            return null;
        }
        Set<Long> inodes = new HashSet<>();
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(fdDir)) {
            for (Path fd : fds) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith("socket:[")) {
                        inodes.add(Long.parseLong(target.substring(8, target.length() - 1)));
                    }
                } catch (IOException | NumberFormatException gone) {
                    // Closed meanwhile.
                }
            }
        } catch (IOException e) {
            return null;
        }
        return inodes;
    }

    /** How many of {@code sockets} are established TCP connections to remote {@code port}. */
    private static int established(Set<Long> sockets, int port) {
        int count = 0;
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            List<String> lines;
            try {
                lines = Files.readAllLines(Path.of(table));
            } catch (IOException e) {
                continue;
            }
            for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
                String[] f = line.trim().split("\\s+");
                if (f.length < 10 || !f[3].equals("01")) {
                    continue;
                }
                String remote = f[2];
                int remotePort = Integer.parseInt(remote.substring(remote.indexOf(':') + 1), 16);
                if (remotePort == port && sockets.contains(Long.parseLong(f[9]))) {
                    count++;
                }
            }
        }
        return count;
    }

    /** The last lines of the current process's log. */
    String logTail() {
        try {
            List<String> lines = Files.readAllLines(home.resolve("logs/run-" + starts + ".log"));
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** Every log line of every process of this node containing {@code text}. */
    List<String> logLines(String text) {
        List<String> found = new ArrayList<>();
        try (Stream<Path> logs = Files.list(home.resolve("logs"))) {
            for (Path log : logs.sorted().toList()) {
                for (String line : Files.readAllLines(log)) {
                    if (line.contains(text)) {
                        found.add(log.getFileName() + ": " + line);
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return found;
    }

    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    @Override
    public String toString() {
        return "bin/idem run in " + home
                + (process == null ? "" : " (pid " + process.pid() + ", start " + starts + ")");
    }
}
