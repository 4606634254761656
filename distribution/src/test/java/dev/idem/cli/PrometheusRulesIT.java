package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * What operators plug into their own stack, against the runtime: the alert rules of {@code deploy/prometheus}
 * ({@code promtool check rules}, and {@code promtool test rules} on {@code idem-alerts.test.yaml} with every alert
 * tested firing and not firing), the Grafana dashboard of {@code deploy/grafana} (its queries parsed by promtool, each
 * selector of a pipeline's metric filtered by the {@code pipeline} variable) and the KEDA {@code ScaledObject} of
 * {@code deploy/kubernetes} (it targets the Deployment, it is not in the default kustomization). Every metric name
 * they query, the labels they match, group and show, and the values they match for Idem's own labels
 * ({@code outcome}, {@code operation}...) must be in what {@code bin/idem run} serves on {@code /metrics}: a run of
 * the built distribution on its embedded default, with a plain, a transactional (outbox) and a sequence-guarded
 * pipeline, scraped once every pipeline reports its backlog. Only {@code up} (Prometheus) and
 * {@code kube_pod_status_ready} (kube-state-metrics) come from elsewhere. Needs {@code promtool} (or
 * {@code IDEM_TEST_PROMTOOL}) for the promtool tests; without it they are skipped, or fail with {@code CI=true}.
 */
class PrometheusRulesIT {

    private static final Duration TIMEOUT = Duration.ofMinutes(1);
    /** Series of other exporters the rules and the dashboard join with Idem's, and their labels. */
    private static final Map<String, Set<String>> OTHER_EXPORTERS = Map.of(
            "up", Set.of("job", "instance"),
            "kube_pod_status_ready", Set.of("job", "instance", "namespace", "pod", "uid", "condition"));
    /** Labels the scrape configuration adds to every series (not in {@code /metrics}). */
    private static final Set<String> TARGET_LABELS = Set.of("job", "instance", "namespace", "pod");
    /** Labels whose values are the configuration's (pipeline names, partitions), not the runtime's. */
    private static final Set<String> CONFIGURED_VALUES = Set.of("pipeline", "partition");
    /** The pipelines of the scraped run: a plain one, a transactional one (the outbox relay), a sequence-guarded one. */
    private static final String PIPELINES = """
              payments:
                source: payments
                handler: dev.idem.examples.orders.TransactionalOrderPaymentHandler
                transactional: true
              sequenced:
                source: sequenced
                handler: dev.idem.examples.orders.OrderPaymentHandler
                handler-settings: {ledger.file: "${IDEM_HOME}/data/sequenced.log"}
                sequence:
                  aggregate: [{type: header, name: order-id}]
                  number: [{type: header, name: sequence}]
            """;

    private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)})?\\s+\\S+.*$");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");
    private static final Pattern STRING = Pattern.compile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'");
    private static final Pattern RANGE = Pattern.compile("\\[[^]]*]");
    private static final Pattern MATCHER =
            Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");
    private static final Pattern GROUPING =
            Pattern.compile("(?<![\\w:])(by|without|on|ignoring|group_left|group_right)\\s*\\(([^)]*)\\)");
    /** A series selector in a query whose strings, ranges and grouping clauses are blanked: a name, not a function's. */
    private static final Pattern SELECTOR =
            Pattern.compile("(?<![\\w:.$#])([a-zA-Z_:][a-zA-Z0-9_:]*+)(?!\\s*\\()(?:\\s*\\{([^}]*)})?");
    private static final Pattern LITERAL_VALUES = Pattern.compile("[A-Za-z0-9_.-]+(\\|[A-Za-z0-9_.-]+)*");
    private static final Pattern LABEL_VALUES = Pattern.compile("^label_values\\(\\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\\s*,"
            + "\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*\\)$");
    private static final Pattern LEGEND_LABEL = Pattern.compile("\\{\\{\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*}}");
    private static final Set<String> KEYWORDS = Set.of("and", "or", "unless", "bool", "offset", "by", "without", "on",
            "ignoring", "group_left", "group_right", "atan2", "inf", "nan");

    @TempDir
    static Path dir;

    private static Path root;
    /** What {@code /metrics} served: series name, then label, then the values seen. */
    private static Map<String, Map<String, Set<String>>> exposed;
    private static Map<String, Object> rules;
    private static JsonNode dashboard;
    private static Map<String, Object> scaledObject;

    @BeforeAll
    static void scrapeARunningIdem() throws Exception {
        root = ParsedDockerfile.repositoryRoot();
        rules = yaml(root.resolve("deploy/prometheus/idem-alerts.yaml"));
        dashboard = new ObjectMapper().readTree(root.resolve("deploy/grafana/idem-dashboard.json").toFile());
        scaledObject = yaml(root.resolve("deploy/kubernetes/keda-scaled-object.yaml"));

        Installation idem = Installation.in(dir);
        int port = Installation.freePort();
        String shipped = Files.readString(idem.config());
        String config = shipped.replaceFirst("(?m)^runtime:\n", "runtime:\n  http.port: " + port + "\n")
                .replaceFirst("(?m)^pipelines:\n", "pipelines:\n" + Matcher.quoteReplacement(PIPELINES));
        assertThat(config).as("the shipped idem.yaml has runtime: and pipelines: sections")
                .contains("http.port: " + port).contains("sequenced:");
        idem.writeConfig(config);
        Installation.Running running = idem.start("run");
        try {
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
            String[] body = new String[1];
            try {
                await().atMost(TIMEOUT).pollInterval(Duration.ofMillis(200)).ignoreExceptions().until(() -> {
                    body[0] = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                            .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
                    // The backlog gauges appear once each subscription published its first figures.
                    return body[0].contains("idem_backlog{") && parse(body[0]).getOrDefault("idem_backlog", Map.of())
                            .getOrDefault("pipeline", Set.of()).containsAll(Set.of("orders", "payments", "sequenced"));
                });
            } catch (RuntimeException e) {
                throw new AssertionError("bin/idem run did not serve every pipeline's backlog on /metrics\n"
                        + running.log() + "\n--- last /metrics\n" + body[0], e);
            }
            exposed = parse(body[0]);
        } finally {
            running.terminate(TIMEOUT);
        }
    }

    @Test
    void promtoolChecksTheRules() {
        String out = promtool().check(TIMEOUT, "check", "rules", root.resolve("deploy/prometheus/idem-alerts.yaml")
                .toString());
        assertThat(out).contains("SUCCESS: " + alerts().size() + " rules found");
    }

    @Test
    void promtoolUnitTestsOfTheRulesPass() {
        String out = promtool().check(TIMEOUT, "test", "rules", root.resolve("deploy/prometheus/idem-alerts.test.yaml")
                .toString());
        assertThat(out).contains("SUCCESS");
    }

    @Test
    void everyAlertIsTestedFiringAndNotFiring() {
        Map<String, Object> tests = yaml(root.resolve("deploy/prometheus/idem-alerts.test.yaml"));
        assertThat(list(tests.get("rule_files"), "rule_files")).containsExactly("idem-alerts.yaml");
        Set<String> firing = new TreeSet<>();
        Set<String> silent = new TreeSet<>();
        for (Object test : list(tests.get("tests"), "tests")) {
            for (Object c : list(map(test, "a test").getOrDefault("alert_rule_test", List.of()), "alert_rule_test")) {
                Map<String, Object> check = map(c, "an alert_rule_test");
                Object expected = check.get("exp_alerts");
                (expected == null || list(expected, "exp_alerts").isEmpty() ? silent : firing)
                        .add((String) check.get("alertname"));
            }
        }
        Set<String> names = alerts().keySet();
        assertThat(firing).as("alerts tested firing").containsAll(names);
        assertThat(silent).as("alerts tested not firing").containsAll(names);
        assertThat(names).as("the alerts issue 29 asks for").contains("IdemBacklogGrowing", "IdemDeadLetters",
                "IdemStoreDown", "IdemSuspectKey", "IdemOutboxLagging", "IdemNotReady");
    }

    @Test
    void everyAlertHasASeverityASummaryAndADescriptionAndIsDocumented() throws IOException {
        String readme = Files.readString(root.resolve("README.md"));
        alerts().forEach((name, rule) -> {
            assertThat(map(rule.getOrDefault("labels", Map.of()), name + " labels")).as(name)
                    .containsKey("severity");
            assertThat(map(rule.getOrDefault("annotations", Map.of()), name + " annotations")).as(name)
                    .containsKeys("summary", "description");
            assertThat(readme).as("the README lists " + name + " and its threshold").contains("`" + name + "`");
        });
    }

    @Test
    void theRulesQueryOnlyWhatTheRuntimeExposes() {
        alerts().forEach((name, rule) -> checkNames("alert " + name, (String) rule.get("expr")));
    }

    @Test
    void theDashboardQueriesOnlyWhatTheRuntimeExposesEachPipelineAsChosen() {
        Map<String, String> queries = dashboardQueries();
        assertThat(queries).isNotEmpty();
        Set<String> used = new TreeSet<>();
        queries.forEach((where, expr) -> used.addAll(checkNames(where, grafanaVariables(expr))));
        for (JsonNode variable : dashboard.path("templating").path("list")) {
            if (variable.path("type").asText().equals("query")) {
                String query = variable.path("definition").asText();
                Matcher m = LABEL_VALUES.matcher(query);
                assertThat(m.matches()).as("variable " + variable.path("name") + ": label_values(metric, label)")
                        .isTrue();
                assertThat(exposed).as("variable " + variable.path("name")).containsKey(m.group(1));
                assertThat(exposed.get(m.group(1))).as("variable " + variable.path("name")).containsKey(m.group(2));
            }
        }
        // The console overview's figures (issue 29): rates by outcome, backlog, in flight and its age, the store's
        // health and latency, the outbox, readiness.
        assertThat(used).contains("idem_messages_total", "idem_backlog", "idem_inflight",
                "idem_inflight_oldest_age_seconds", "idem_store_duration_seconds_sum",
                "idem_store_duration_seconds_count", "idem_outbox_backlog", "idem_outbox_oldest_age_seconds", "up",
                "kube_pod_status_ready");
        String all = String.join("\n", queries.values());
        for (String outcome : List.of("processed", "duplicate", "stale", "rejected", "retried", "dead-lettered",
                "store-unavailable")) {
            assertThat(all).as("a panel shows the outcome " + outcome).contains(outcome);
        }
    }

    @Test
    void everyPipelineMetricOfTheDashboardIsFilteredByThePipelineVariable() {
        dashboardQueries().forEach((where, expr) -> {
            for (Selector selector : selectors(expr)) {
                Map<String, Set<String>> labels = exposed.get(selector.name());
                if (labels != null && labels.containsKey("pipeline")) {
                    assertThat(selector.matchers()).as(where + ": " + selector.name() + " filtered by $pipeline")
                            .contains("pipeline=~\"$pipeline\"");
                }
            }
        });
        Set<String> variables = new HashSet<>();
        dashboard.path("templating").path("list").forEach(v -> variables.add(v.path("name").asText()));
        assertThat(variables).contains("pipeline", "datasource");
    }

    @Test
    void theDashboardIsWellFormed() {
        Set<Integer> ids = new HashSet<>();
        for (JsonNode panel : dashboard.path("panels")) {
            assertThat(ids.add(panel.path("id").asInt())).as("panel ids are unique: " + panel.path("id")).isTrue();
            JsonNode grid = panel.path("gridPos");
            assertThat(grid.path("x").asInt() + grid.path("w").asInt()).as(panel.path("title") + " fits 24 columns")
                    .isLessThanOrEqualTo(24);
            if (!panel.path("type").asText().equals("row")) {
                assertThat(panel.path("datasource").path("uid").asText()).as(panel.path("title").asText())
                        .isEqualTo("${datasource}");
                assertThat(panel.path("targets").size()).as(panel.path("title") + " has queries").isPositive();
            }
        }
        assertThat(dashboard.path("uid").asText()).isNotBlank();
    }

    @Test
    void promtoolParsesEveryDashboardAndScaledObjectQuery() throws IOException {
        List<Map<String, Object>> recorded = new ArrayList<>();
        Map<String, String> queries = new LinkedHashMap<>(dashboardQueries());
        queries.put("the ScaledObject", kedaQuery());
        int n = 0;
        for (Map.Entry<String, String> q : queries.entrySet()) {
            String expr = grafanaVariables(q.getValue());
            assertThat(expr).as(q.getKey() + ": a Grafana variable other than $pipeline or $__rate_interval")
                    .doesNotContain("$");
            Map<String, Object> rule = new LinkedHashMap<>();
            rule.put("record", "idem_it:query_" + ++n);
            rule.put("expr", expr);
            recorded.add(rule);
        }
        DumperOptions options = new DumperOptions();
        options.setDefaultFlowStyle(DumperOptions.FlowStyle.BLOCK);
        Path file = dir.resolve("queries.yaml");
        Files.writeString(file, new Yaml(options).dump(Map.of("groups", List.of(Map.of("name", "queries", "rules",
                recorded)))), StandardCharsets.UTF_8);
        String out = promtool().check(TIMEOUT, "check", "rules", file.toString());
        assertThat(out).contains("SUCCESS: " + recorded.size() + " rules found");
    }

    @Test
    void theScaledObjectScalesTheDeploymentOnTheBacklogAndStaysOutOfTheDefaultKustomization() {
        assertThat(scaledObject.get("apiVersion")).isEqualTo("keda.sh/v1alpha1");
        assertThat(scaledObject.get("kind")).isEqualTo("ScaledObject");
        Map<String, Object> spec = map(scaledObject.get("spec"), "spec");
        Map<String, Object> target = map(spec.get("scaleTargetRef"), "scaleTargetRef");
        Map<String, Object> deployment = yaml(root.resolve("deploy/kubernetes/deployment.yaml"));
        assertThat(target.getOrDefault("kind", "Deployment")).isEqualTo(deployment.get("kind"));
        assertThat(target.get("name")).isEqualTo(map(deployment.get("metadata"), "metadata").get("name"));
        assertThat(((Number) spec.get("minReplicaCount")).intValue()).isPositive()
                .isLessThanOrEqualTo(((Number) spec.get("maxReplicaCount")).intValue());
        assertThat(checkNames("the ScaledObject", kedaQuery())).contains("idem_backlog");

        Map<String, Object> kustomization = yaml(root.resolve("deploy/kubernetes/kustomization.yaml"));
        assertThat(list(kustomization.get("resources"), "resources")).as("kubectl kustomize deploy/kubernetes"
                + " must not need KEDA's CRD").doesNotContain("keda-scaled-object.yaml");
    }

    /** The alerting rules by name. */
    private static Map<String, Map<String, Object>> alerts() {
        Map<String, Map<String, Object>> alerts = new LinkedHashMap<>();
        for (Object group : list(rules.get("groups"), "groups")) {
            for (Object r : list(map(group, "a group").get("rules"), "rules")) {
                Map<String, Object> rule = map(r, "a rule");
                assertThat(rule).as("an alerting rule").containsKey("alert");
                assertThat(alerts.put((String) rule.get("alert"), rule)).as("alert " + rule.get("alert") + " once")
                        .isNull();
            }
        }
        return alerts;
    }

    /** Each query of the dashboard, by panel and query, with its legend's labels checked. */
    private static Map<String, String> dashboardQueries() {
        Map<String, String> queries = new LinkedHashMap<>();
        for (JsonNode panel : dashboard.path("panels")) {
            for (JsonNode target : panel.path("targets")) {
                String where = "panel '" + panel.path("title").asText() + "' query " + target.path("refId").asText();
                String expr = target.path("expr").asText();
                assertThat(expr).as(where).isNotBlank();
                queries.put(where, expr);
                Matcher legend = LEGEND_LABEL.matcher(target.path("legendFormat").asText());
                while (legend.find()) {
                    assertThat(allLabels()).as(where + ": legend label").contains(legend.group(1));
                }
            }
        }
        return queries;
    }

    private static String kedaQuery() {
        Map<String, Object> spec = map(scaledObject.get("spec"), "spec");
        List<Object> triggers = list(spec.get("triggers"), "triggers");
        assertThat(triggers).hasSize(1);
        Map<String, Object> trigger = map(triggers.get(0), "the trigger");
        assertThat(trigger.get("type")).isEqualTo("prometheus");
        Map<String, Object> metadata = map(trigger.get("metadata"), "the trigger's metadata");
        assertThat(metadata).containsKeys("serverAddress", "threshold");
        return (String) metadata.get("query");
    }

    /** The Grafana variables replaced as Grafana would: every pipeline, a rate interval. */
    private static String grafanaVariables(String expr) {
        return expr.replace("$__rate_interval", "5m").replace("$pipeline", ".+");
    }

    /**
     * Checks that {@code expr} queries only series the runtime exposes (or {@link #OTHER_EXPORTERS}), with their
     * labels, and for Idem's own labels values it serves; returns the series names it uses.
     */
    private static Set<String> checkNames(String where, String expr) {
        assertThat(expr).as(where).isNotBlank();
        Set<String> names = new TreeSet<>();
        for (Selector selector : selectors(expr)) {
            String name = selector.name();
            names.add(name);
            Map<String, Set<String>> labels = known(where, name);
            Matcher matcher = MATCHER.matcher(selector.matchers());
            while (matcher.find()) {
                String label = matcher.group(1);
                String value = matcher.group(3);
                if (OTHER_EXPORTERS.containsKey(name)) {
                    assertThat(OTHER_EXPORTERS.get(name)).as(where + ": a label of " + name).contains(label);
                    continue;
                }
                if (TARGET_LABELS.contains(label)) {
                    continue;
                }
                assertThat(labels).as(where + ": " + name + " has the label " + label + " (it has " + labels.keySet()
                        + ")").containsKey(label);
                if (!CONFIGURED_VALUES.contains(label) && LITERAL_VALUES.matcher(value).matches()) {
                    for (String v : value.split("\\|")) {
                        assertThat(labels.get(label)).as(where + ": " + name + "{" + label + "} takes the value " + v)
                                .contains(v);
                    }
                }
            }
        }
        Matcher grouping = GROUPING.matcher(blanked(expr, false));
        while (grouping.find()) {
            for (String label : grouping.group(2).split(",")) {
                if (!label.isBlank()) {
                    assertThat(allLabels()).as(where + ": " + grouping.group(1) + " (" + label.trim() + ")")
                            .contains(label.trim());
                }
            }
        }
        return names;
    }

    /** A series selector of a query: its metric name and its label matchers (empty without braces). */
    private record Selector(String name, String matchers) {
    }

    /** The series selectors of {@code expr}, named or not (a selector without a name fails). */
    private static List<Selector> selectors(String expr) {
        List<Selector> selectors = new ArrayList<>();
        String blanked = blanked(expr, true);
        assertThat(blanked).as(expr + ": a selector without a metric name").doesNotContainPattern("(^|[^\\w:\\s])\\s*\\{");
        Matcher m = SELECTOR.matcher(blanked);
        while (m.find()) {
            if (!KEYWORDS.contains(m.group(1))) {
                selectors.add(new Selector(m.group(1), m.group(2) == null ? "" : expr.substring(m.start(2), m.end(2))));
            }
        }
        return selectors;
    }

    /**
     * {@code expr} with the same length and positions but the contents of its strings as {@code #}, and its ranges
     * ({@code [5m]}), and with {@code groupings} its {@code by (...)}, {@code on (...)}... clauses, as spaces.
     */
    private static String blanked(String expr, boolean groupings) {
        StringBuilder b = new StringBuilder(expr);
        Matcher string = STRING.matcher(expr);
        while (string.find()) {
            for (int i = string.start() + 1; i < string.end() - 1; i++) {
                b.setCharAt(i, '#');
            }
        }
        for (Pattern p : groupings ? List.of(RANGE, GROUPING) : List.of(RANGE)) {
            Matcher m = p.matcher(b.toString());
            while (m.find()) {
                for (int i = m.start(); i < m.end(); i++) {
                    b.setCharAt(i, ' ');
                }
            }
        }
        return b.toString();
    }

    private static Map<String, Set<String>> known(String where, String name) {
        if (OTHER_EXPORTERS.containsKey(name)) {
            return Map.of();
        }
        assertThat(exposed.keySet()).as(where + ": '" + name + "' is not a series bin/idem run serves on /metrics")
                .contains(name);
        return exposed.get(name);
    }

    /** Every label of every series served, those of the other exporters and those the scrape adds. */
    private static Set<String> allLabels() {
        Set<String> all = new TreeSet<>(TARGET_LABELS);
        exposed.values().forEach(labels -> all.addAll(labels.keySet()));
        OTHER_EXPORTERS.values().forEach(all::addAll);
        return all;
    }

    /** Prometheus text: series name, then label, then values. */
    private static Map<String, Map<String, Set<String>>> parse(String text) {
        Map<String, Map<String, Set<String>>> series = new TreeMap<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            Matcher m = SAMPLE.matcher(line);
            if (!m.matches()) {
                throw new AssertionError("Not a Prometheus sample: " + line);
            }
            Map<String, Set<String>> labels = series.computeIfAbsent(m.group(1), n -> new TreeMap<>());
            if (m.group(2) != null) {
                Matcher label = LABEL.matcher(m.group(2));
                while (label.find()) {
                    labels.computeIfAbsent(label.group(1), l -> new LinkedHashSet<>()).add(label.group(2));
                }
            }
        }
        return series;
    }

    private static LocalTool promtool() {
        return LocalTool.locate("promtool", "IDEM_TEST_PROMTOOL", "Install promtool (apt-get install prometheus:"
                + " Debian's package has it, or a release from https://prometheus.io/download/); it checks and"
                + " unit-tests deploy/prometheus offline, no server needed.");
    }

    private static Map<String, Object> yaml(Path file) {
        try {
            return map(new Yaml(new SafeConstructor(new LoaderOptions())).load(Files.readString(file)),
                    file.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
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
