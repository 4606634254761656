package dev.idem.runtime.config;

import static dev.idem.runtime.config.Configs.MINIMAL;
import static dev.idem.runtime.config.Configs.load;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ConfigKey;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ConfigPrinterTest {

    @Test
    void printsTheEffectiveConfigurationWithEveryDefault() {
        String printed = ConfigPrinter.print(load(MINIMAL));

        assertThat(printed).isEqualTo("""
                broker:
                  type: activemq
                  activemq:
                    url: vm://embedded
                    user: admin
                    prefetch: 100
                    persistent: true
                    client: {}
                store:
                  type: caffeine
                  key-digest: none
                  caffeine:
                    maximum-size: 100000
                pipelines:
                  orders:
                    source: orders
                    id:
                      - type: header
                        name: message-id
                    payload:
                      unknown-fields: ignore
                    missing-id: dead-letter
                    fingerprint: sha256
                    fingerprint-mismatch: dead-letter
                    ordering: key
                    concurrency: 4
                    max-in-flight: 1000
                    lease: 30s
                    retention: 7d
                    handler-timeout: 30s
                    retry:
                      max-attempts: 3
                      initial-backoff: 100ms
                      max-backoff: 10s
                      multiplier: 2.0
                      conflict-attempts: 5
                    commit:
                      linger: 1ms
                      batch-size: 100
                      writers: 3
                    max-deliveries: 5
                    transactional: false
                    transactional.group: 10
                    transactional.savepoints: per-message
                    emit:
                      id-header: message-id
                    steps:
                      max-size: 65536
                    reply:
                      max-size: 65536
                    batch:
                      size: 100
                      linger: 5ms
                runtime:
                  shutdown-timeout: 30s
                  summary-interval: 30s
                  handler-create-timeout: 30s
                  http:
                    enabled: true
                    host: 127.0.0.1
                    port: 9464
                """);
    }

    @Test
    void aPasswordInsideAUrlIsMaskedWhenPrinted() {
        String printed = ConfigPrinter.print(load(MINIMAL.replace("url: vm://embedded",
                "url: \"failover:(tcp://admin:hunter2@broker:61616)?password=hunter2\"")));

        assertThat(printed).doesNotContain("hunter2")
                .contains("url: failover:(tcp://admin:******@broker:61616)?password=******");
    }

    @Test
    void masksSecretsAndSecretLookingNativeSettings() {
        String yaml = MINIMAL.replace("url: vm://embedded", """
                url: vm://embedded
                    password: ${AMQ_PASSWORD}
                    client:
                      sasl.jaas.config: module required password="hunter3";
                      max.poll.records: 10""");

        String printed = ConfigPrinter.print(load(yaml, Map.of("AMQ_PASSWORD", "hunter2")));

        assertThat(printed)
                .doesNotContain("hunter")
                .contains("    password: '******'\n")
                .contains("      sasl.jaas.config: '******'\n")
                .contains("max.poll.records: \"10\"");
    }

    @Test
    void aPasswordInALibpqConnectionStringAndSecretNamedStringsAndSettingsAreMasked() {
        FakePlugins plugins = FakePlugins.standard().with(PluginSpecs.Kind.BROKER, "rabbit",
                ConfigKey.string("url").doc("The URL."),
                ConfigKey.string("binding-key").doc("A route."),
                ConfigKey.string("routing-key").doc("A route."),
                ConfigKey.string("tls.key-passphrase").doc("Declared a string, but a secret."),
                ConfigKey.string("signing-key").doc("Declared a string, but a secret."),
                ConfigKey.string("api.token").doc("Declared a string, but a secret."),
                ConfigKey.string("webhook-secret").doc("Declared a string, but a secret."),
                ConfigKey.list("admin-password").doc("Declared a list, but a secret."),
                ConfigKey.map("client").doc("Native settings."));
        String yaml = MINIMAL.replace("type: activemq\n  activemq:\n    url: vm://embedded", """
                type: rabbit
                  rabbit:
                    url: host=db port=5432 password=hunter1 dbname=app
                    binding-key: orders.#
                    routing-key: orders.created
                    tls.key-passphrase: hunter2
                    signing-key: hunter3
                    api.token: hunter4
                    webhook-secret: hunter5
                    admin-password: [hunter6]
                    client:
                      ssl.keystore.key: hunter7
                      gpg-passphrase: hunter8
                      key.serializer: StringSerializer""") + """
                    handler: com.example.OrderHandler
                    handler-settings:
                      db: "host=db password='hunter 9' user=app"
                      hmac-key: hunter10
                      partition-key: customer
                """;

        String printed = ConfigPrinter.print(ConfigLoader.parse(yaml, "test.yaml", Map.of(), plugins));

        assertThat(printed).doesNotContain("hunter")
                .contains("    url: host=db port=5432 password=****** dbname=app\n")
                .contains("    binding-key: orders.#\n", "    routing-key: orders.created\n")
                .contains("      key-passphrase: '******'\n", "    signing-key: '******'\n", "      token: '******'\n",
                        "    webhook-secret: '******'\n", "    admin-password: '******'\n")
                .contains("      ssl.keystore.key: '******'\n", "      gpg-passphrase: '******'\n",
                        "      key.serializer: StringSerializer\n")
                .contains("      db: host=db password=****** user=app\n", "      hmac-key: '******'\n",
                        "      partition-key: customer\n");
        assertThat(Configs.failure(yaml.replace("signing-key: hunter3", "signing-key: [hunter3]"), Map.of(), plugins)
                .problems()).singleElement().asString().doesNotContain("hunter")
                .startsWith("Invalid value '******' for broker.rabbit.signing-key: must be a string");
    }

    @Test
    void printedConfigurationLoadsBackEqual() {
        IdemConfig config = load(Configs.withPipelineKeys("""
                handler: com.example.OrderHandler
                id:
                  - type: json-pointer
                    pointer: /orderId
                  - type: header
                    name: message-id
                missing-id: unprotected
                ordering: none
                concurrency: 32
                lease: 90s
                retry:
                  multiplier: 1.5
                  initial-backoff: 1ms
                dead-letter: orders.DLQ
                """).replace("url: vm://embedded", "url: vm://embedded\n    client: {a.b: 1, c: x}")
                + "  audit:\n    source: audit\n    retention: 1h\nruntime:\n  shutdown-timeout: 0\n");

        IdemConfig reloaded = load(ConfigPrinter.print(config));

        assertThat(reloaded).isEqualTo(config);
        assertThat(reloaded.pipelines().keySet()).containsExactly("orders", "audit");
    }
}
