package dev.idem.runtime.config;

import static dev.idem.runtime.config.Configs.MINIMAL;
import static dev.idem.runtime.config.Configs.load;
import static dev.idem.runtime.config.Configs.withPipelineKeys;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.runtime.config.PipelineConfig.FingerprintMode;
import dev.idem.runtime.config.PipelineConfig.MismatchPolicy;
import dev.idem.runtime.config.PipelineConfig.MissingIdPolicy;
import dev.idem.runtime.config.PipelineConfig.Ordering;
import dev.idem.spi.ConfigException;
import dev.idem.spi.Secret;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ConfigLoaderTest {

    @Test
    void minimalFileGetsEveryDefault() {
        IdemConfig config = load(MINIMAL);

        PipelineConfig p = config.pipelines().get("orders");
        assertThat(p.name()).isEqualTo("orders");
        assertThat(p.source()).isEqualTo("orders");
        assertThat(p.handler()).isNull();
        assertThat(p.missingId()).isEqualTo(MissingIdPolicy.DEAD_LETTER);
        assertThat(p.fingerprint()).isEqualTo(FingerprintMode.SHA256);
        assertThat(p.fingerprintMismatch()).isEqualTo(MismatchPolicy.DEAD_LETTER);
        assertThat(p.ordering()).isEqualTo(Ordering.KEY);
        assertThat(p.concurrency()).isEqualTo(4);
        assertThat(p.maxInFlight()).isEqualTo(1000);
        assertThat(p.lease()).isEqualTo(Duration.ofSeconds(30));
        assertThat(p.retention()).isEqualTo(Duration.ofDays(7));
        assertThat(p.handlerTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(p.retry()).isEqualTo(new RetryPolicy(3, Duration.ofMillis(100), Duration.ofSeconds(10), 2.0));
        assertThat(p.maxDeliveries()).isEqualTo(5);
        assertThat(p.deadLetter()).isNull();
        assertThat(config.runtime().shutdownTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(config.keyDigest()).isEqualTo(KeyDigest.NONE);
    }

    @Test
    void keyDigestIsReadBesideTheStoresTypeAndLeavesTheStoresSectionAlone() {
        IdemConfig config = load(MINIMAL.replace("type: caffeine",
                "type: caffeine\n  key-digest: sha256-128\n  caffeine:\n    maximum-size: 5"));

        assertThat(config.keyDigest()).isEqualTo(KeyDigest.SHA256_128);
        assertThat(config.store().type()).isEqualTo("caffeine");
        assertThat(config.store().config().get(FakePlugins.CAFFEINE_MAX)).isEqualTo(5L);
    }

    @Test
    void defaultIdExtractorIsTheMessageIdHeaderValidatedLikeAWrittenOne() {
        PipelineConfig p = load(MINIMAL).pipelines().get("orders");

        assertThat(p.idExtractors()).hasSize(1);
        PluginSection header = p.idExtractors().get(0);
        assertThat(header.type()).isEqualTo("header");
        assertThat(header.config().get(FakePlugins.HEADER_NAME)).isEqualTo("message-id");
        assertThat(header.config().path()).isEqualTo("pipelines.orders.id[0]");
    }

    @Test
    void pluginSectionsGetTheUsersValuesAndTheDefaults() {
        IdemConfig config = load(MINIMAL);

        assertThat(config.broker().type()).isEqualTo("activemq");
        assertThat(config.broker().config().path()).isEqualTo("broker.activemq");
        assertThat(config.broker().config().get(FakePlugins.AMQ_URL)).isEqualTo("vm://embedded");
        assertThat(config.broker().config().get(FakePlugins.AMQ_USER)).isEqualTo("admin");
        assertThat(config.broker().config().get(FakePlugins.AMQ_PASSWORD)).isNull();
        assertThat(config.broker().config().get(FakePlugins.AMQ_PREFETCH)).isEqualTo(100);
        assertThat(config.broker().config().get(FakePlugins.AMQ_CLIENT)).isEmpty();
        assertThat(config.store().type()).isEqualTo("caffeine");
        assertThat(config.store().config().path()).isEqualTo("store.caffeine");
        assertThat(config.store().config().get(FakePlugins.CAFFEINE_MAX)).isEqualTo(100_000L);
    }

    @Test
    void everyPipelineKeyIsBoundAsWritten() {
        PipelineConfig p = load(withPipelineKeys("""
                handler: com.example.OrderHandler
                id:
                  - type: header
                    name: x-order-id
                  - type: json-pointer
                    pointer: /orderId
                missing-id: hash
                fingerprint: none
                fingerprint-mismatch: skip
                ordering: partition
                concurrency: 16
                max-in-flight: 64
                lease: 2m
                retention: 36h
                handler-timeout: 250ms
                retry:
                  max-attempts: 5
                  initial-backoff: 1s
                  max-backoff: 1m
                  multiplier: 1.5
                max-deliveries: 9
                dead-letter: orders.DLQ
                """)).pipelines().get("orders");

        assertThat(p.handler()).isEqualTo("com.example.OrderHandler");
        assertThat(p.idExtractors()).extracting(PluginSection::type).containsExactly("header", "json-pointer");
        assertThat(p.idExtractors().get(0).config().get(FakePlugins.HEADER_NAME)).isEqualTo("x-order-id");
        assertThat(p.idExtractors().get(1).config().get(FakePlugins.POINTER)).isEqualTo("/orderId");
        assertThat(p.idExtractors().get(1).config().path()).isEqualTo("pipelines.orders.id[1]");
        assertThat(p.missingId()).isEqualTo(MissingIdPolicy.HASH);
        assertThat(p.fingerprint()).isEqualTo(FingerprintMode.NONE);
        assertThat(p.fingerprintMismatch()).isEqualTo(MismatchPolicy.SKIP);
        assertThat(p.ordering()).isEqualTo(Ordering.PARTITION);
        assertThat(p.concurrency()).isEqualTo(16);
        assertThat(p.maxInFlight()).isEqualTo(64);
        assertThat(p.lease()).isEqualTo(Duration.ofMinutes(2));
        assertThat(p.retention()).isEqualTo(Duration.ofHours(36));
        assertThat(p.handlerTimeout()).isEqualTo(Duration.ofMillis(250));
        assertThat(p.retry()).isEqualTo(new RetryPolicy(5, Duration.ofSeconds(1), Duration.ofMinutes(1), 1.5));
        assertThat(p.maxDeliveries()).isEqualTo(9);
        assertThat(p.deadLetter()).isEqualTo("orders.DLQ");
    }

    @ParameterizedTest(name = "{0}: {1}")
    @CsvSource({
            "missing-id, dead-letter, DEAD_LETTER",
            "missing-id, hash, HASH",
            "missing-id, unprotected, UNPROTECTED",
            "fingerprint, sha256, SHA256",
            "fingerprint, none, NONE",
            "fingerprint-mismatch, dead-letter, DEAD_LETTER",
            "fingerprint-mismatch, skip, SKIP",
            "fingerprint-mismatch, process, PROCESS",
            "ordering, partition, PARTITION",
            "ordering, key, KEY",
            "ordering, none, NONE"})
    void eachEnumValueMapsToItsConstant(String key, String value, String constant) {
        Map<String, Function<PipelineConfig, Enum<?>>> field = Map.of(
                "missing-id", PipelineConfig::missingId,
                "fingerprint", PipelineConfig::fingerprint,
                "fingerprint-mismatch", PipelineConfig::fingerprintMismatch,
                "ordering", PipelineConfig::ordering);

        PipelineConfig p = load(withPipelineKeys(key + ": " + value)).pipelines().get("orders");

        assertThat(field.get(key).apply(p).name()).isEqualTo(constant);
    }

    @Test
    void nestedSectionsAndDottedNamesAreTheSame() {
        PipelineConfig nested = load(withPipelineKeys("retry:\n  max-attempts: 7")).pipelines().get("orders");
        PipelineConfig dotted = load(withPipelineKeys("retry.max-attempts: 7")).pipelines().get("orders");

        assertThat(nested.retry().maxAttempts()).isEqualTo(7);
        assertThat(dotted).isEqualTo(nested);
    }

    @Test
    void mapKeyPassesItsWholeSubtreeThroughAsDottedStrings() {
        IdemConfig config = load("""
                broker:
                  type: activemq
                  activemq:
                    url: vm://embedded
                    client:
                      max.poll.records: 10
                      ssl:
                        enabled: true
                        protocols: [TLSv1.3, TLSv1.2]
                      client.fetch.min.bytes: 1
                      ignored:
                store:
                  type: caffeine
                pipelines:
                  orders:
                    source: orders
                """);

        assertThat(config.broker().config().get(FakePlugins.AMQ_CLIENT)).containsExactly(
                Map.entry("max.poll.records", "10"),
                Map.entry("ssl.enabled", "true"),
                Map.entry("ssl.protocols", "TLSv1.3,TLSv1.2"),
                Map.entry("client.fetch.min.bytes", "1"));
    }

    @Test
    void mapKeySettingsMayAlsoBeWrittenFlatBesideIt() {
        IdemConfig config = load(MINIMAL.replace("url: vm://embedded", """
                url: vm://embedded
                    client:
                      a: 1
                    client.b.c: 2"""));

        assertThat(config.broker().config().get(FakePlugins.AMQ_CLIENT))
                .containsExactly(Map.entry("a", "1"), Map.entry("b.c", "2"));
    }

    @Test
    void keyWithNothingAfterItCountsAsAbsent() {
        IdemConfig config = load(MINIMAL.replace("type: caffeine", "type: caffeine\n  caffeine:")
                + "    lease:\n    retry:\n    handler:\nruntime:\n");

        PipelineConfig p = config.pipelines().get("orders");
        assertThat(p.lease()).isEqualTo(Duration.ofSeconds(30));
        assertThat(p.retry().maxAttempts()).isEqualTo(3);
        assertThat(p.handler()).isNull();
        assertThat(config.store().config().get(FakePlugins.CAFFEINE_MAX)).isEqualTo(100_000L);
        assertThat(config.runtime().shutdownTimeout()).isEqualTo(Duration.ofSeconds(30));
    }

    @Test
    void twoPipelinesKeepFileOrder() {
        IdemConfig config = load(MINIMAL.replace("pipelines:\n", """
                pipelines:
                  zeta:
                    source: z
                    concurrency: 2
                """));

        assertThat(config.pipelines().keySet()).containsExactly("zeta", "orders");
        assertThat(config.pipelines().get("zeta").concurrency()).isEqualTo(2);
        assertThat(config.pipelines().get("orders").concurrency()).isEqualTo(4);
    }

    @Test
    void quotedNumbersAndBooleansAreParsedByTheKeysType() {
        IdemConfig config = load(MINIMAL.replace("url: vm://embedded", "url: vm://embedded\n    persistent: 'false'")
                + "    concurrency: '8'\n    retry:\n      multiplier: '3'\n");

        assertThat(config.pipelines().get("orders").concurrency()).isEqualTo(8);
        assertThat(config.pipelines().get("orders").retry().multiplier()).isEqualTo(3.0);
        assertThat(config.broker().config().get(FakePlugins.AMQ_PERSISTENT)).isFalse();
    }

    @Test
    void aStringKeepsTheTextAsWrittenWhateverYamlWouldTypeItAs() {
        // Regression: YAML's implicit typing turned source: no into "false", 010 into "8", a password 0123 into "83".
        String yaml = MINIMAL.replace("type: caffeine", """
                type: redis
                  redis:
                    password: 0123""").replace("pipelines:\n", """
                pipelines:
                  a:
                    source: no
                  b:
                    source: 010
                  c:
                    source: 0x1F
                  d:
                    source: 1e3
                  e:
                    source: on
                  f:
                    source: 1_000
                    handler-settings:
                      pin: 0123
                      ratio: 1.50
                      flag: yes
                      unset: ~
                      list: [07, off, 2.0]
                """);

        IdemConfig config = load(yaml);

        assertThat(config.pipelines().values()).extracting(PipelineConfig::source)
                .containsExactly("no", "010", "0x1F", "1e3", "on", "1_000", "orders");
        assertThat(config.store().config().get(FakePlugins.REDIS_PASSWORD).reveal()).isEqualTo("0123");
        assertThat(config.pipelines().get("f").handlerSettings().asMap()).containsExactly(
                Map.entry("pin", "0123"), Map.entry("ratio", "1.50"), Map.entry("flag", "yes"),
                Map.entry("list", "07,off,2.0"));
    }

    @Test
    void numbersAndBooleansAreReadFromTheTextByTheKeysType() {
        IdemConfig config = load(MINIMAL.replace("url: vm://embedded", "url: vm://embedded\n    persistent: FALSE")
                + "    concurrency: 010\n    retry:\n      multiplier: 1e1\n");

        assertThat(config.pipelines().get("orders").concurrency()).as("decimal, not octal").isEqualTo(10);
        assertThat(config.pipelines().get("orders").retry().multiplier()).isEqualTo(10.0);
        assertThat(config.broker().config().get(FakePlugins.AMQ_PERSISTENT)).isFalse();

        assertThat(Configs.problems(MINIMAL.replace("url: vm://embedded", "url: vm://embedded\n    persistent: yes\n"
                + "    prefetch: 0x10"))).containsExactly(
                "Invalid value '0x10' for broker.activemq.prefetch: must be an integer that must be at least 1",
                "Invalid value 'yes' for broker.activemq.persistent: must be true or false");
    }

    @Test
    void aConfigurationLargerThanOneMebibyteIsRefusedBeforeItIsParsed(@TempDir Path dir) throws Exception {
        String huge = MINIMAL.replace("source: orders", "source: " + "x".repeat(16 * 1024 * 1024));
        Path file = dir.resolve("huge.yaml");
        Files.writeString(file, huge, StandardCharsets.UTF_8);

        long start = System.nanoTime();
        assertThatThrownBy(() -> ConfigLoader.load(file, Map.of(), FakePlugins.standard()))
                .isInstanceOf(ConfigException.class)
                .hasMessage("Invalid configuration: Configuration file " + file + " is larger than 1048576 bytes"
                        + " (1 MiB), the most a configuration may be; is it the right file?");
        assertThatThrownBy(() -> load(huge))
                .isInstanceOf(ConfigException.class)
                .hasMessage("Invalid configuration: The configuration in test.yaml is " + huge.length()
                        + " characters long; at most 1048576 (1 MiB) are read");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("refused at once").isLessThan(Duration.ofSeconds(5));

        String justUnder = MINIMAL.replace("source: orders", "source: " + "x".repeat(1_000_000));
        Files.writeString(file, justUnder, StandardCharsets.UTF_8);
        assertThat(ConfigLoader.load(file, Map.of(), FakePlugins.standard()).pipelines().get("orders").source())
                .hasSize(1_000_000);
    }

    @Test
    void runtimeSectionIsRead() {
        IdemConfig config = load(MINIMAL + "runtime:\n  shutdown-timeout: 5s\n");

        assertThat(config.runtime().shutdownTimeout()).isEqualTo(Duration.ofSeconds(5));
    }

    @Test
    void secretsArriveRevealableButPrintMasked() {
        IdemConfig config = load(MINIMAL.replace("type: caffeine", """
                type: redis
                  redis:
                    password: hunter2"""));

        Secret password = config.store().config().get(FakePlugins.REDIS_PASSWORD);
        assertThat(password.reveal()).isEqualTo("hunter2");
        assertThat(config.store().config().toString())
                .isEqualTo("store.redis{url=redis://localhost:6379, password=******}");
    }

    @Test
    void listKeyAcceptsAYamlListOrCommaSeparatedText() {
        String kafka = MINIMAL.replace("type: activemq\n  activemq:\n    url: vm://embedded", "type: kafka\n  kafka:\n    ");

        assertThat(load(kafka.replace("kafka:\n    ", "kafka:\n    bootstrap-servers: [\"a:9092\", \"b:9092\"]"))
                .broker().config().get(FakePlugins.KAFKA_SERVERS)).containsExactly("a:9092", "b:9092");
        assertThat(load(kafka.replace("kafka:\n    ", "kafka:\n    bootstrap-servers: a:9092, b:9092"))
                .broker().config().get(FakePlugins.KAFKA_SERVERS)).containsExactly("a:9092", "b:9092");
    }

    @Test
    void loadReadsTheFile(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("idem.yaml");
        Files.writeString(file, MINIMAL, StandardCharsets.UTF_8);

        IdemConfig config = ConfigLoader.load(file, Map.of(), FakePlugins.standard());

        assertThat(config.pipelines()).containsOnlyKeys("orders");
    }

    @Test
    void missingFileIsAConfigExceptionNamingIt(@TempDir Path dir) {
        Path file = dir.resolve("nope.yaml");

        assertThatThrownBy(() -> ConfigLoader.load(file, Map.of(), FakePlugins.standard()))
                .isInstanceOf(ConfigException.class)
                .hasMessage("Invalid configuration: Configuration file " + file.toAbsolutePath() + " does not exist");
    }

    @Test
    void fileThatIsNotUtf8IsAConfigException(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("latin1.yaml");
        Files.write(file, (MINIMAL + "# caf\u00e9\n").getBytes(StandardCharsets.ISO_8859_1));

        assertThatThrownBy(() -> ConfigLoader.load(file, Map.of(), FakePlugins.standard()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("is not valid UTF-8");
    }

    @Test
    void yamlSyntaxErrorNamesTheSourceAndLine() {
        ConfigException e = Configs.failure("broker:\n  type: [activemq\nstore: x\n");

        assertThat(e.problems()).singleElement().asString()
                .startsWith("Cannot parse test.yaml as YAML: ")
                .contains("line ");
    }

    @Test
    void aYamlAliasIsRefusedNotReadAsItsAnchorsName() {
        ConfigException e = Configs.failure(Configs.withPipelineKeys("dead-letter: *q"));

        assertThat(e.problems()).singleElement().asString()
                .startsWith("Cannot use the alias *q in test.yaml (line 10, column 18)")
                .contains("anchors and aliases are not supported");
    }

    @Test
    void aYamlAnchorIsRefusedToo() {
        ConfigException e = Configs.failure(Configs.withPipelineKeys("dead-letter: &q orders.DLQ"));

        assertThat(e.problems()).singleElement().asString().startsWith("Cannot use the anchor &q in test.yaml");
    }

    @Test
    void duplicateKeyIsAnErrorNotASilentOverwrite() {
        ConfigException e = Configs.failure(MINIMAL + "  orders:\n    source: other\n");

        assertThat(e.problems()).singleElement().asString()
                .startsWith("Cannot parse test.yaml as YAML: ")
                .contains("Duplicate field 'orders'");
    }

    @Test
    void everyConfigValueInThePipelineIsImmutable() {
        IdemConfig config = load(MINIMAL);

        assertThatThrownBy(() -> config.pipelines().clear()).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> config.broker().config().get(FakePlugins.AMQ_CLIENT).put("a", "b"))
                .isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> config.pipelines().get("orders").idExtractors().clear())
                .isInstanceOf(UnsupportedOperationException.class);
        assertThat(List.copyOf(config.pipelines().values())).hasSize(1);
    }
}
