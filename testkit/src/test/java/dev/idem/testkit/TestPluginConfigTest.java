package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.Secret;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class TestPluginConfigTest {

    private static final ConfigKey<Long> SIZE = ConfigKey.longValue("maximum-size").defaultValue(10L).atLeast(1L);
    private static final ConfigKey<Duration> LEASE = ConfigKey.duration("lease").defaultValue(Duration.ofSeconds(30));
    private static final ConfigKey<Secret> PASSWORD = ConfigKey.secret("password").required();
    private static final ConfigKey<String> UNDECLARED = ConfigKey.string("other");
    private static final ConfigSpec SPEC = ConfigSpec.builder().define(SIZE).define(LEASE).define(PASSWORD).build();

    @Test
    void configHoldsDeclaredDefaults() {
        TestPluginConfig config = TestPluginConfig.defaults("store.test", SPEC);

        assertThat(config.get(SIZE)).isEqualTo(10L);
        assertThat(config.get(LEASE)).isEqualTo(Duration.ofSeconds(30));
        assertThat(config.get(PASSWORD)).isNull();
        assertThat(config.path()).isEqualTo("store.test");
    }

    @Test
    void configParsesValuesAsWrittenInYaml() {
        TestPluginConfig defaults = TestPluginConfig.defaults("store.test", SPEC);

        TestPluginConfig config = defaults.with("maximum-size", 5).with("lease", "250ms").with("password", "s3cret");

        assertThat(config.get(SIZE)).isEqualTo(5L);
        assertThat(config.get(LEASE)).isEqualTo(Duration.ofMillis(250));
        assertThat(config.get(PASSWORD).reveal()).isEqualTo("s3cret");
        assertThat(defaults.get(SIZE)).as("the original is unchanged").isEqualTo(10L);
    }

    @Test
    void configRejectsValueBreakingKeysRuleNamingPathAndRule() {
        TestPluginConfig config = TestPluginConfig.defaults("store.test", SPEC);

        assertThatThrownBy(() -> config.with("maximum-size", 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Invalid value '0' for store.test.maximum-size: must be at least 1");
    }

    @Test
    void configRejectsUndeclaredKeys() {
        TestPluginConfig config = TestPluginConfig.defaults("store.test", SPEC);

        assertThatThrownBy(() -> config.get(UNDECLARED))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'other' is not declared under store.test");
        assertThatThrownBy(() -> config.with("other", "x")).isInstanceOf(IllegalArgumentException.class);
    }
}
