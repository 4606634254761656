package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.cli.ParsedDockerfile.Instruction;
import dev.idem.cli.ParsedDockerfile.Stage;
import dev.idem.runtime.config.ConfigLoader;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.runtime.config.RuntimeSettings;
import dev.idem.runtime.plugin.PluginRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The repository's {@code Dockerfile} against the built distribution, without a Docker engine: the build stage
 * makes the archive the image unpacks, every path the image uses is in it (or copied from the build context),
 * the user is not root, the port and the health check are the runtime's, the entry point is the exec form, and
 * the image's {@code conf/idem.yaml} (the distribution's, rewritten by {@code deploy/docker/container-config.sed})
 * is valid and serves the ops port on every interface, which the health check script then finds healthy.
 */
class DockerfileIT {

    private static final String HOME = "/opt/idem";
    private static final Pattern HOME_PATH = Pattern.compile(Pattern.quote(HOME) + "(?:/[A-Za-z0-9._-]+)*");

    private static Path root;
    private static ParsedDockerfile dockerfile;
    private static Stage image;
    private static Path built;

    @TempDir
    Path dir;

    @BeforeAll
    static void read() {
        root = ParsedDockerfile.repositoryRoot();
        dockerfile = ParsedDockerfile.read(root.resolve("Dockerfile"));
        image = dockerfile.image();
        built = Installation.built();
    }

    @Test
    void buildStageBuildsTheDistributionWithMavenAndUnpacksItsArchive() {
        Stage build = dockerfile.stage("build").orElseThrow(() -> new AssertionError("no stage named build"));
        assertThat(build.image()).as("the build stage's image").startsWith("maven:").contains("temurin-17");
        String runs = build.all("RUN").stream().map(Instruction::args).collect(Collectors.joining("\n"));
        assertThat(runs).containsPattern("mvn .*-pl distribution").containsPattern("mvn .*-am\\b")
                .containsPattern("mvn .*\\bpackage\\b");

        // The archive the build writes next to the distribution's folder, found by the Dockerfile's glob.
        Matcher unpack = Pattern.compile("tar -xzf (\\S+) -C (\\S+) --strip-components=1").matcher(runs);
        assertThat(unpack.find()).as("the build stage unpacks the distribution's archive:\n" + runs).isTrue();
        Path archive = built.resolveSibling(built.getFileName() + ".tar.gz");
        assertThat(archive).as("the archive mvn package writes").isRegularFile();
        Path glob = Path.of(unpack.group(1));
        assertThat(root.resolve(glob.getParent()).normalize()).isEqualTo(archive.getParent().normalize());
        assertThat(FileSystems.getDefault().getPathMatcher("glob:" + glob.getFileName()).matches(archive.getFileName()))
                .as(glob + " matches " + archive.getFileName()).isTrue();
        assertThat(archiveEntries()).as("every entry of the archive is under the one folder --strip-components removes")
                .allMatch(e -> e.startsWith(built.getFileName() + "/"));

        // The image copies what was unpacked, whole, to its home.
        List<Instruction> fromBuild = copies(true);
        assertThat(fromBuild).as("COPY --from=build").hasSize(1);
        assertThat(fromBuild.get(0).operands()).containsExactly(unpack.group(2), HOME);
        assertThat(fromBuild.get(0).flags()).containsEntry("from", "build");
        assertThat(image.all("ENV").stream().map(Instruction::args)).anyMatch(a -> a.contains("IDEM_HOME=" + HOME));
        assertThat(image.last("WORKDIR").map(Instruction::args)).contains(HOME);
    }

    @Test
    void everyPathTheImageUsesExistsInTheDistributionOrTheBuildContext() {
        Set<String> imageFiles = new HashSet<>();
        for (String entry : archiveEntries()) {
            String stripped = entry.substring(entry.indexOf('/') + 1).replaceAll("/$", "");
            imageFiles.add(stripped.isEmpty() ? HOME : HOME + "/" + stripped);
        }
        List<String> ignored = dockerignore();
        List<String> fromContext = new ArrayList<>(List.of("deploy/docker/container-config.sed"));
        for (Stage stage : dockerfile.stages) {
            for (Instruction copy : stage.all("COPY")) {
                if (!copy.flags().containsKey("from")) {
                    List<String> operands = copy.operands();
                    operands.subList(0, operands.size() - 1).forEach(fromContext::add);
                }
            }
        }
        for (String source : fromContext) {
            assertThat(root.resolve(source)).as("the build context holds %s", source).exists();
            assertThat(ignored).as(".dockerignore must not exclude %s", source)
                    .noneMatch(p -> source.equals(p) || source.startsWith(p + "/"));
        }
        for (Instruction copy : copies(false)) {
            List<String> operands = copy.operands();
            imageFiles.add(operands.get(operands.size() - 1).replaceAll("/$", ""));
        }
        List<String> missing = new ArrayList<>();
        for (Instruction i : image.instructions()) {
            Matcher m = HOME_PATH.matcher(i.args());
            while (m.find()) {
                if (!imageFiles.contains(m.group())) {
                    missing.add(m.group() + " (" + i + ")");
                }
            }
        }
        assertThat(missing).as("paths the image uses that neither the distribution nor a COPY provides").isEmpty();
        assertThat(imageFiles).contains(HOME + "/bin/idem", HOME + "/conf/idem.yaml", HOME + "/handlers", HOME + "/data",
                HOME + "/logs");
    }

    @Test
    void runsAsAFixedNonRootUserThatOwnsDataAndLogs() {
        Instruction user = image.last("USER").orElseThrow(() -> new AssertionError("the image sets no USER: root"));
        assertThat(user.args()).as(user.toString()).matches("\\d+(:\\d+)?");
        String uid = user.args().split(":")[0];
        assertThat(uid).as("numeric, so Kubernetes' runAsNonRoot can verify it, and not root").isNotEqualTo("0");
        String runs = image.all("RUN").stream().map(Instruction::args).collect(Collectors.joining("\n"));
        assertThat(runs).as("the user is created with the uid USER names").contains("useradd").contains("--uid " + uid);
        if (user.args().contains(":")) {
            assertThat(runs).contains("--gid " + user.args().split(":")[1]);
        }
        assertThat(runs).as("data/ and logs/ are the user's, everything else root's")
                .containsPattern("chown (-R )?" + uid + "(:\\d+)? " + HOME + "/data " + HOME + "/logs");
        int userLine = user.line();
        assertThat(image.all("RUN")).as("nothing runs as root after USER").allMatch(r -> r.line() < userLine);
        assertThat(image.all("VOLUME").stream().map(Instruction::args)).as("data/ is a volume")
                .anyMatch(a -> a.contains(HOME + "/data"));
    }

    @Test
    void exposesTheDefaultOpsPortAndChecksLivenessThere() throws IOException {
        int port = RuntimeConfigSpecs.HTTP_PORT.defaultValue();
        assertThat(image.all("EXPOSE").stream().flatMap(e -> e.operands().stream()).map(p -> p.replace("/tcp", "")))
                .as("EXPOSE the default runtime.http.port").contains(String.valueOf(port));

        Instruction healthcheck = image.last("HEALTHCHECK").orElseThrow(() -> new AssertionError("no HEALTHCHECK"));
        Matcher cmd = Pattern.compile("^(.*?)\\bCMD\\s+(.*)$").matcher(healthcheck.args());
        assertThat(cmd.matches()).as(healthcheck.toString()).isTrue();
        Instruction command = new Instruction("CMD", cmd.group(2), healthcheck.line());
        assertThat(command.execForm()).as("exec form: no shell needed to start it, %s", healthcheck).isTrue();
        String script = command.execArgs().get(0);
        Path source = contextSourceOf(script);
        String text = Files.readString(source, StandardCharsets.UTF_8);
        assertThat(text).contains("/health/live").contains("${IDEM_HTTP_PORT:-" + port + "}").startsWith("#!/usr/bin/env bash");
        assertThat(Files.isExecutable(source)).as(source + " is executable").isTrue();
        assertThat(copies(false)).as("the script is copied executable").anyMatch(c -> c.args().contains(
                root.relativize(source).toString()) && c.flags().getOrDefault("chmod", "").endsWith("755"));
    }

    @Test
    void entryPointIsTheExecFormOfBinIdemWhichExecsJava() throws IOException {
        Instruction entrypoint = image.last("ENTRYPOINT").orElseThrow(() -> new AssertionError("no ENTRYPOINT"));
        assertThat(entrypoint.execForm()).as("exec form, so no shell sits between the container and bin/idem: %s",
                entrypoint).isTrue();
        assertThat(entrypoint.execArgs()).containsExactly(HOME + "/bin/idem");
        Instruction cmd = image.last("CMD").orElseThrow(() -> new AssertionError("no CMD"));
        assertThat(cmd.execForm()).as(cmd.toString()).isTrue();
        assertThat(cmd.execArgs()).containsExactly("run");
        image.last("STOPSIGNAL").ifPresent(s -> assertThat(s.args()).isIn("SIGTERM", "15"));
        assertThat(Files.readAllLines(built.resolve("bin/idem"))).as("bin/idem replaces itself with the JVM")
                .anyMatch(l -> l.startsWith("exec \"$java_cmd\""));
    }

    @Test
    void imageConfigurationIsValidAndServesOnEveryInterface() throws IOException {
        Path config = imageConfig();
        Map<String, String> env = new HashMap<>(Map.of("IDEM_HOME", HOME));
        RuntimeSettings.Http http = load(config, env).runtime().http();
        assertThat(http.host()).isEqualTo("0.0.0.0");
        assertThat(http.port()).isEqualTo(RuntimeConfigSpecs.HTTP_PORT.defaultValue());

        env.put("IDEM_HTTP_HOST", "127.0.0.1");
        env.put("IDEM_HTTP_PORT", "9000");
        http = load(config, env).runtime().http();
        assertThat(http.host()).isEqualTo("127.0.0.1");
        assertThat(http.port()).isEqualTo(9000);
    }

    @Test
    void healthCheckPassesWhileTheImageConfigurationRunsAndFailsOnceStopped() throws Exception {
        Installation idem = Installation.in(dir);
        idem.writeConfig(Files.readString(imageConfig(), StandardCharsets.UTF_8));
        int port = Installation.freePort();
        idem.env.put("IDEM_HTTP_PORT", String.valueOf(port));
        Path script = root.resolve("deploy/docker/idem-healthcheck");
        assertThat(healthCheck(script, port)).as("nothing listens yet").isEqualTo(1);

        Installation.Running running = idem.start("run");
        boolean served = false;
        try {
            Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(250))
                    .until(() -> healthCheck(script, port) == 0 || !running.process.isAlive());
            assertThat(running.process.isAlive()).as("idem run on the image's configuration\n" + running.log()).isTrue();
            // Bound to every interface: reachable on an address other than loopback, as a probe from outside is.
            Optional<InetAddress> external = nonLoopbackAddress();
            if (external.isPresent()) {
                try (Socket socket = new Socket()) {
                    socket.connect(new InetSocketAddress(external.get(), port), 2000);
                }
            } else {
                System.err.println("[DockerfileIT] this machine has no non-loopback address; the bind to every"
                        + " interface is only checked through the configuration");
            }
            served = true;
        } finally {
            int exit = running.terminate(Duration.ofSeconds(60));
            if (served) {
                assertThat(exit).as("a graceful stop on SIGTERM\n" + running.log()).isEqualTo(143);
            }
        }
        assertThat(healthCheck(script, port)).as("stopped").isEqualTo(1);
    }

    /** The distribution's conf/idem.yaml as the image has it: each line of the sed script rewrites one line. */
    private Path imageConfig() throws IOException {
        Path sed = root.resolve("deploy/docker/container-config.sed");
        assertThat(dockerfile.stage("build").orElseThrow().all("RUN").stream().map(Instruction::args))
                .as("the build stage applies " + sed).anyMatch(a -> a.contains("sed -i -f " + root.relativize(sed)));
        String original = Files.readString(built.resolve("conf/idem.yaml"), StandardCharsets.UTF_8);
        List<String> expressions = Files.readAllLines(sed, StandardCharsets.UTF_8).stream()
                .filter(l -> !l.isBlank() && !l.startsWith("#")).toList();
        assertThat(expressions).isNotEmpty();
        for (String expression : expressions) {
            String rewritten = sed(original, "-e", expression);
            assertThat(changedLines(original, rewritten)).as("'%s' rewrites one line of conf/idem.yaml", expression)
                    .isEqualTo(1);
        }
        Path config = dir.resolve("image-idem.yaml");
        Files.writeString(config, sed(original, "-f", sed.toString()), StandardCharsets.UTF_8);
        return config;
    }

    private static Optional<InetAddress> nonLoopbackAddress() throws IOException {
        for (NetworkInterface nic : NetworkInterface.networkInterfaces().toList()) {
            if (nic.isUp() && !nic.isLoopback()) {
                Optional<InetAddress> address = nic.inetAddresses().filter(a -> a instanceof Inet4Address).findFirst();
                if (address.isPresent()) {
                    return address;
                }
            }
        }
        return Optional.empty();
    }

    private static IdemConfig load(Path config, Map<String, String> env) {
        return ConfigLoader.load(config, env, PluginRegistry.discover());
    }

    private static String sed(String input, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of("sed"));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try (var in = process.getOutputStream()) {
            in.write(input.getBytes(StandardCharsets.UTF_8));
        }
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            assertThat(process.waitFor()).as("sed " + String.join(" ", args)).isZero();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
        return out;
    }

    private static int changedLines(String a, String b) {
        List<String> left = a.lines().toList();
        List<String> right = b.lines().toList();
        assertThat(right).hasSameSizeAs(left);
        int changed = 0;
        for (int i = 0; i < left.size(); i++) {
            changed += left.get(i).equals(right.get(i)) ? 0 : 1;
        }
        return changed;
    }

    private static int healthCheck(Path script, int port) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(script.toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("IDEM_HTTP_PORT", String.valueOf(port));
        Process process = pb.start();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
            throw new AssertionError(script + " did not end within 20s");
        }
        return process.exitValue();
    }

    /** The COPY instructions of the image stage: from another stage, or from the build context. */
    private static List<Instruction> copies(boolean fromStage) {
        return image.all("COPY").stream().filter(c -> c.flags().containsKey("from") == fromStage).toList();
    }

    /** The build-context file a COPY put at {@code imagePath}. */
    private static Path contextSourceOf(String imagePath) {
        for (Instruction copy : copies(false)) {
            List<String> operands = copy.operands();
            if (operands.size() == 2 && operands.get(1).equals(imagePath)) {
                return root.resolve(operands.get(0));
            }
        }
        throw new AssertionError(imagePath + " is not copied from the build context");
    }

    /** The archive's entries, as tar lists them. */
    private static List<String> archiveEntries() {
        Path archive = built.resolveSibling(built.getFileName() + ".tar.gz");
        try {
            Process process = new ProcessBuilder("tar", "-tzf", archive.toString())
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            List<String> entries = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines()
                    .toList();
            assertThat(process.waitFor()).as("tar -tzf " + archive).isZero();
            return entries;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** The patterns of .dockerignore, without comments and trailing slashes. */
    private static List<String> dockerignore() {
        Path file = root.resolve(".dockerignore");
        try {
            return Files.isRegularFile(file) ? Files.readAllLines(file).stream().map(String::strip)
                    .filter(l -> !l.isEmpty() && !l.startsWith("#")).map(l -> l.replaceAll("/$", "")).toList() : List.of();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
