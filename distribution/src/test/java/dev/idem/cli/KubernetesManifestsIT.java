package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.runtime.config.ConfigLoader;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.plugin.PluginRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * {@code deploy/kubernetes} as {@code kubectl kustomize} renders it: the objects it must hold, the probes on the
 * health endpoints, the scrape annotations, a grace period longer than the configuration's shutdown timeout, a
 * non-root pod, a disruption budget and a Service that select the Deployment's pods, secrets that reach
 * {@code ${VAR}} through the environment, and a ConfigMap whose {@code idem.yaml} {@code bin/idem check} accepts
 * with the environment the Deployment gives it. Needs {@code kubectl} (or {@code IDEM_TEST_KUBECTL}); without it the
 * suite is skipped, or fails with {@code CI=true}.
 */
class KubernetesManifestsIT {

    private static final Duration TIMEOUT = Duration.ofMinutes(1);
    private static final Pattern PLACEHOLDER = Pattern.compile("(?<!\\$)\\$\\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?}");

    private static Path root;
    private static List<Map<String, Object>> objects;
    private static Map<String, Object> deployment;
    private static Map<String, Object> podSpec;
    private static Map<String, Object> container;
    private static String idemYaml;
    private static Map<String, String> podEnv;
    private static IdemConfig config;

    @TempDir
    Path dir;

    @BeforeAll
    static void render() {
        root = ParsedDockerfile.repositoryRoot();
        LocalTool kubectl = LocalTool.locate("kubectl", "IDEM_TEST_KUBECTL", "Install kubectl (apt-get install kubectl"
                + " from the Kubernetes apt repository, Debian's kubernetes-client package, or"
                + " https://kubernetes.io/docs/tasks/tools/); it renders deploy/kubernetes offline, no cluster needed.");
        String rendered = kubectl.check(TIMEOUT, "kustomize", root.resolve("deploy/kubernetes").toString());
        objects = new ArrayList<>();
        for (Object document : new Yaml(new SafeConstructor(new LoaderOptions())).loadAll(rendered)) {
            if (document != null) {
                objects.add(map(document, "a rendered object"));
            }
        }
        deployment = only("Deployment");
        podSpec = map(get(deployment, "spec", "template", "spec"), "the pod spec");
        List<Object> containers = list(podSpec.get("containers"), "containers");
        assertThat(containers).as("one container").hasSize(1);
        container = map(containers.get(0), "the container");

        Map<String, Object> configMap = only("ConfigMap");
        idemYaml = (String) map(configMap.get("data"), "the ConfigMap's data").get("idem.yaml");
        assertThat(idemYaml).as("the ConfigMap holds idem.yaml").isNotBlank();

        // The environment the container gets: literal values, and a dummy for each secret it references.
        podEnv = new HashMap<>();
        for (Object item : list(container.getOrDefault("env", List.of()), "env")) {
            Map<String, Object> env = map(item, "an env entry");
            String name = (String) env.get("name");
            podEnv.put(name, env.containsKey("value") ? String.valueOf(env.get("value")) : "dummy-" + name.toLowerCase());
        }
        for (Object item : list(container.getOrDefault("envFrom", List.of()), "envFrom")) {
            Map<String, Object> source = map(item, "an envFrom entry");
            if (source.containsKey("secretRef")) {
                String name = (String) map(source.get("secretRef"), "secretRef").get("name");
                for (String key : map(named("Secret", name).get("data"), "the Secret's data").keySet()) {
                    podEnv.putIfAbsent(key, "dummy-" + key.toLowerCase());
                }
            }
        }
        config = ConfigLoader.parse(idemYaml, "the ConfigMap's idem.yaml", withHome(podEnv), PluginRegistry.discover());
    }

    @Test
    void rendersTheDeploymentItsConfigurationSecretDisruptionBudgetAndService() {
        assertThat(objects.stream().map(o -> (String) o.get("kind")))
                .containsExactlyInAnyOrder("ConfigMap", "Secret", "Deployment", "PodDisruptionBudget", "Service");
        assertThat(only("PodDisruptionBudget").get("apiVersion")).isEqualTo("policy/v1");
        assertThat(deployment.get("apiVersion")).isEqualTo("apps/v1");
        assertThat((Integer) get(deployment, "spec", "replicas")).as("replicas for the budget to keep").isGreaterThan(1);
        assertThat((String) container.get("image")).startsWith("idem:");
    }

    @Test
    void probesAskTheHealthEndpointsOnTheOpsPortServedOnEveryInterface() {
        int port = config.runtime().http().port();
        assertThat(config.runtime().http().enabled()).isTrue();
        assertThat(config.runtime().http().host()).as("the kubelet probes the pod's IP, not its loopback")
                .isEqualTo("0.0.0.0");
        assertThat(probe("livenessProbe")).containsEntry("path", "/health/live").containsEntry("port", port);
        assertThat(probe("readinessProbe")).containsEntry("path", "/health/ready").containsEntry("port", port);
        if (container.containsKey("startupProbe")) {
            assertThat(probe("startupProbe")).containsEntry("path", "/health/live").containsEntry("port", port);
        }
    }

    @Test
    void prometheusScrapesTheMetricsPathOnTheOpsPort() {
        Map<String, Object> annotations = map(get(deployment, "spec", "template", "metadata", "annotations"),
                "the pod's annotations");
        assertThat(annotations).containsEntry("prometheus.io/scrape", "true")
                .containsEntry("prometheus.io/port", String.valueOf(config.runtime().http().port()))
                .containsEntry("prometheus.io/path", "/metrics");
    }

    @Test
    void gracePeriodOutlastsTheShutdownTimeout() {
        Duration shutdown = config.runtime().shutdownTimeout();
        Duration grace = Duration.ofSeconds(((Number) podSpec.get("terminationGracePeriodSeconds")).longValue());
        assertThat(grace).as("terminationGracePeriodSeconds against runtime.shutdown-timeout %s: after the timeout idem"
                + " still releases keys and flushes offsets, so leave it 10s at least", shutdown)
                .isGreaterThanOrEqualTo(shutdown.plusSeconds(10));
    }

    @Test
    void runsAsTheImagesNonRootUserWithoutPrivileges() {
        Map<String, Object> pod = map(podSpec.getOrDefault("securityContext", Map.of()), "the pod's securityContext");
        Map<String, Object> own = map(container.getOrDefault("securityContext", Map.of()), "the container's securityContext");
        Map<String, Object> effective = new HashMap<>(pod);
        effective.putAll(own);
        assertThat(effective).containsEntry("runAsNonRoot", true).containsEntry("allowPrivilegeEscalation", false);
        String imageUser = ParsedDockerfile.read(root.resolve("Dockerfile")).image().last("USER").orElseThrow().args();
        assertThat(String.valueOf(effective.get("runAsUser"))).as("the Dockerfile's USER")
                .isEqualTo(imageUser.split(":")[0]);
        assertThat(list(get(own, "capabilities", "drop"), "dropped capabilities")).contains("ALL");
    }

    @Test
    void writablePathsAreVolumesWhenTheRootFileSystemIsReadOnly() {
        Map<String, Object> own = map(container.getOrDefault("securityContext", Map.of()), "the container's securityContext");
        if (Boolean.TRUE.equals(own.get("readOnlyRootFilesystem"))) {
            assertThat(mountPaths().keySet()).as("what idem and the JVM write")
                    .contains("/opt/idem/data", "/opt/idem/logs", "/tmp");
        }
    }

    @Test
    void disruptionBudgetAndServiceSelectTheDeploymentsPods() {
        Map<String, Object> podLabels = map(get(deployment, "spec", "template", "metadata", "labels"), "the pod's labels");
        Map<String, Object> selector = map(get(deployment, "spec", "selector", "matchLabels"), "the Deployment's selector");
        assertThat(podLabels).containsAllEntriesOf(selector);

        Map<String, Object> pdb = map(only("PodDisruptionBudget").get("spec"), "the budget's spec");
        assertThat(map(get(pdb, "selector", "matchLabels"), "the budget's selector")).isEqualTo(selector);
        assertThat(pdb).as("a budget that lets a drain proceed").containsAnyOf(Map.entry("maxUnavailable", 1),
                Map.entry("minAvailable", 1));

        Map<String, Object> service = map(only("Service").get("spec"), "the Service's spec");
        assertThat(map(service.get("selector"), "the Service's selector")).isEqualTo(selector);
        for (Object p : list(service.get("ports"), "the Service's ports")) {
            assertThat(resolvePort(map(p, "a Service port").get("targetPort"))).isEqualTo(config.runtime().http().port());
        }
    }

    @Test
    void secretsReachTheConfigurationOnlyThroughTheEnvironment() {
        Set<String> required = new LinkedHashSet<>();
        Matcher m = PLACEHOLDER.matcher(idemYaml);
        while (m.find()) {
            if (m.group(2) == null) {
                required.add(m.group(1));
            }
        }
        assertThat(required).as("idem.yaml takes its secrets from ${VAR}").isNotEmpty();
        assertThat(podEnv.keySet()).as("the container's environment defines every ${VAR} without a default")
                .containsAll(required);
        assertThat(idemYaml).as("no literal password in the ConfigMap").doesNotContainPattern("(?m)password: (?!\\$\\{)");

        Map<String, Object> secret = only("Secret");
        Map<String, Object> data = map(secret.get("data"), "the Secret's data");
        String secretName = (String) get(secret, "metadata", "name");
        for (Object item : list(container.getOrDefault("env", List.of()), "env")) {
            Object from = map(item, "an env entry").get("valueFrom");
            if (from != null && map(from, "valueFrom").containsKey("secretKeyRef")) {
                Map<String, Object> ref = map(map(from, "valueFrom").get("secretKeyRef"), "secretKeyRef");
                assertThat(ref.get("name")).as("the rendered Secret's name, hash suffix included").isEqualTo(secretName);
                assertThat(data).containsKey((String) ref.get("key"));
                assertThat(new String(Base64.getDecoder().decode((String) data.get(ref.get("key"))),
                        StandardCharsets.UTF_8)).isNotBlank();
            }
        }
    }

    @Test
    void theConfigMapIsMountedWhereRunReadsIt() {
        List<Object> args = list(container.get("args"), "the container's args");
        assertThat(args).as("bin/idem run").startsWith("run");
        int i = args.indexOf("--config");
        assertThat(i).as("run --config FILE").isPositive();
        Path file = Path.of((String) args.get(i + 1));
        String volume = mountPaths().get(file.getParent().toString());
        assertThat(volume).as("a volume mounted at " + file.getParent()).isNotNull();
        Map<String, Object> configVolume = list(podSpec.get("volumes"), "volumes").stream().map(v -> map(v, "a volume"))
                .filter(v -> volume.equals(v.get("name"))).findFirst().orElseThrow();
        assertThat(get(configVolume, "configMap", "name")).isEqualTo(get(only("ConfigMap"), "metadata", "name"));
        assertThat(file.getFileName().toString()).isEqualTo("idem.yaml");
    }

    @Test
    void binIdemCheckAcceptsTheConfigMapWithTheDeploymentsEnvironment() throws IOException {
        Installation idem = Installation.in(dir);
        Path file = Files.writeString(dir.resolve("idem.yaml"), idemYaml, StandardCharsets.UTF_8);
        idem.env.putAll(podEnv);
        idem.env.remove("JAVA_OPTS");
        Installation.Result result = idem.run(TIMEOUT, "check", "--config", file.toString());
        assertThat(result.exitCode()).as(result.toString()).isZero();
        assertThat(result.out()).contains("is valid").contains("Broker: " + config.broker().type())
                .contains("Store:  " + config.store().type());
    }

    private static Map<String, String> withHome(Map<String, String> env) {
        Map<String, String> all = new HashMap<>(env);
        all.putIfAbsent("IDEM_HOME", "/opt/idem");
        return all;
    }

    /** path and port of a probe's httpGet, the port resolved to a number. */
    private static Map<String, Object> probe(String name) {
        Map<String, Object> httpGet = map(get(container, name, "httpGet"), name + ".httpGet");
        return Map.of("path", httpGet.get("path"), "port", resolvePort(httpGet.get("port")));
    }

    /** A port number, or a container port's name resolved to its number. */
    private static int resolvePort(Object port) {
        if (port instanceof Number n) {
            return n.intValue();
        }
        for (Object p : list(container.get("ports"), "the container's ports")) {
            Map<String, Object> named = map(p, "a container port");
            if (port.equals(named.get("name"))) {
                return ((Number) named.get("containerPort")).intValue();
            }
        }
        throw new AssertionError("The container has no port named " + port);
    }

    /** mount path → volume name. */
    private static Map<String, String> mountPaths() {
        Map<String, String> mounts = new HashMap<>();
        for (Object m : list(container.getOrDefault("volumeMounts", List.of()), "volumeMounts")) {
            Map<String, Object> mount = map(m, "a volume mount");
            mounts.put((String) mount.get("mountPath"), (String) mount.get("name"));
        }
        return mounts;
    }

    private static Map<String, Object> only(String kind) {
        List<Map<String, Object>> found = objects.stream().filter(o -> kind.equals(o.get("kind"))).toList();
        assertThat(found).as("one " + kind).hasSize(1);
        return found.get(0);
    }

    private static Map<String, Object> named(String kind, String name) {
        return objects.stream().filter(o -> kind.equals(o.get("kind")) && name.equals(get(o, "metadata", "name")))
                .findFirst().orElseThrow(() -> new AssertionError("no " + kind + " named " + name));
    }

    private static Object get(Map<String, Object> from, String... path) {
        Object at = from;
        for (String key : path) {
            at = map(at, String.join(".", path)).get(key);
            if (at == null) {
                throw new AssertionError("No " + String.join(".", path) + " (missing " + key + ")");
            }
        }
        return at;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object value, String what) {
        assertThat(value).as(what + " is a map").isInstanceOf(Map.class);
        return (Map<String, Object>) value;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object value, String what) {
        assertThat(value).as(what + " is a list").isInstanceOf(List.class);
        return (List<Object>) value;
    }
}
