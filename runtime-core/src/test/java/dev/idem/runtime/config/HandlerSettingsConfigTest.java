package dev.idem.runtime.config;

import static dev.idem.runtime.config.Configs.load;
import static dev.idem.runtime.config.Configs.withPipelineKeys;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.api.HandlerSettings;
import dev.idem.spi.ConfigException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code pipelines.<name>.handler-settings}: bound flat, placeholders resolved, secrets never shown. */
class HandlerSettingsConfigTest {

    private static HandlerSettings settings(String yaml, Map<String, String> env) {
        return load(yaml, env).pipelines().get("orders").handlerSettings();
    }

    @Test
    void nestedSectionsAreFlattenedToDottedNamesWithStringValues() {
        HandlerSettings settings = settings(withPipelineKeys("""
                handler-settings:
                  db:
                    url: jdbc:postgresql://db:5432/shop
                    pool-size: 4
                  ledger.fsync: true
                  regions: [eu, us]
                  amount: "1.10"
                """), Map.of());

        assertThat(settings.pipeline()).isEqualTo("orders");
        assertThat(settings.asMap()).containsExactly(
                Map.entry("db.url", "jdbc:postgresql://db:5432/shop"),
                Map.entry("db.pool-size", "4"),
                Map.entry("ledger.fsync", "true"),
                Map.entry("regions", "eu,us"),
                Map.entry("amount", "1.10"));
        assertThat(settings.getInt("db.pool-size", 1)).isEqualTo(4);
        assertThat(settings.getBoolean("ledger.fsync", false)).isTrue();
    }

    @Test
    void dottedKeysBesideThePipelineKeysMergeIntoTheMap() {
        HandlerSettings settings = settings(withPipelineKeys("""
                handler-settings.db.url: jdbc:h2:mem:a
                handler-settings:
                  db.user: app
                """), Map.of());

        assertThat(settings.asMap()).containsOnly(Map.entry("db.url", "jdbc:h2:mem:a"), Map.entry("db.user", "app"));
    }

    @Test
    void noSettingsGiveAnEmptyMapNeverNull() {
        HandlerSettings settings = settings(Configs.MINIMAL, Map.of());

        assertThat(settings.asMap()).isEmpty();
        assertThat(settings.pipeline()).isEqualTo("orders");
    }

    @Test
    void placeholdersResolveFromTheEnvironmentWithDefaults() {
        HandlerSettings settings = settings(withPipelineKeys("""
                handler-settings:
                  db:
                    url: jdbc:postgresql://${DB_HOST:-localhost}:5432/shop
                    password: ${DB_PASSWORD}
                    user: ${DB_USER:-}
                  ledger:
                """), Map.of("DB_PASSWORD", "hunter2"));

        assertThat(settings.asMap()).containsOnly(
                Map.entry("db.url", "jdbc:postgresql://localhost:5432/shop"),
                Map.entry("db.password", "hunter2"));
        assertThat(settings.get("db.user")).as("an empty placeholder leaves the setting unset").isEmpty();
    }

    @Test
    void anUnsetVariableIsAProblemNamingTheSettingsPath() {
        ConfigException e = Configs.failure(withPipelineKeys("""
                handler-settings:
                  db:
                    password: ${DB_PASSWORD}
                """), Map.of(), FakePlugins.standard());

        assertThat(e.problems()).containsExactly("Environment variable DB_PASSWORD is not set, for"
                + " pipelines.orders.handler-settings.db.password. Set it, or give a default: ${DB_PASSWORD:-default}");
    }

    @Test
    void settingsThatAreNotAMapAreRefusedWithCredentialsMasked() {
        assertThat(Configs.problems(withPipelineKeys("""
                handler-settings: "jdbc:postgresql://app:hunter2@db/shop"
                """))).containsExactly("Invalid value 'jdbc:postgresql://app:******@db/shop' for"
                + " pipelines.orders.handler-settings: must be a map of settings");
    }

    @Test
    void aMisspelledKeyIsUnknownWithASuggestion() {
        assertThat(Configs.problems(withPipelineKeys("""
                handler-setting:
                  db.url: jdbc:h2:mem:a
                """))).singleElement().asString()
                .startsWith("Unknown key pipelines.orders.handler-setting. Did you mean 'handler-settings'?");
    }

    @Test
    void aSettingGivenTwiceIsAProblem() {
        assertThat(Configs.problems(withPipelineKeys("""
                handler-settings.db: x
                handler-settings:
                  db: y
                """))).containsExactly("Key pipelines.orders.handler-settings.db is given twice; keep one");
    }

    @Test
    void secretsAndCredentialsInUrlsAreMaskedWhenPrintedAndTheRestLoadsBack() {
        IdemConfig config = load(withPipelineKeys("""
                handler: com.example.OrderHandler
                handler-settings:
                  db:
                    url: jdbc:postgresql://app:hunter1@db:5432/shop?password=hunter2
                    password: ${DB_PASSWORD}
                    pool-size: 4
                  api-key: hunter3
                  ledger.file: /var/lib/idem/ledger.log
                """), Map.of("DB_PASSWORD", "hunter4"));

        String printed = ConfigPrinter.print(config);

        assertThat(printed).doesNotContain("hunter")
                .contains("""
                            handler: com.example.OrderHandler
                            handler-settings:
                              db.url: jdbc:postgresql://app:******@db:5432/shop?password=******
                              db.password: '******'
                              db.pool-size: "4"
                              api-key: '******'
                              ledger.file: /var/lib/idem/ledger.log
                            id:
                        """);
        HandlerSettings reloaded = load(printed).pipelines().get("orders").handlerSettings();
        assertThat(reloaded.asMap()).containsEntry("ledger.file", "/var/lib/idem/ledger.log")
                .containsEntry("db.pool-size", "4");
    }

    @Test
    void aPipelineWithoutSettingsPrintsNone() {
        assertThat(ConfigPrinter.print(load(Configs.MINIMAL))).doesNotContain("handler-settings");
    }

    @Test
    void theValuesNeverShowInTheConfigurationsToString() {
        IdemConfig config = load(withPipelineKeys("""
                handler-settings:
                  db.password: ${DB_PASSWORD}
                """), Map.of("DB_PASSWORD", "hunter2"));

        assertThat(config.toString()).doesNotContain("hunter2").contains("names=[db.password]");
    }

    @Test
    void otherProblemsOfThePipelineNeverShowTheSettingsValues() {
        ConfigException e = Configs.failure(withPipelineKeys("""
                lease: -5s
                handler-settings:
                  db.password: ${DB_PASSWORD}
                """), Map.of("DB_PASSWORD", "hunter2"), FakePlugins.standard());

        assertThat(e.problems()).containsExactly("Invalid value '-5s' for pipelines.orders.lease: must be at least 1s");
        assertThat(e.getMessage()).doesNotContain("hunter2");
    }
}
