package dev.idem.runtime.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.Secret;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SectionConfigTest {

    private final SectionConfig broker = (SectionConfig) Configs.load(Configs.MINIMAL.replace("url: vm://embedded", """
            url: vm://embedded
                password: hunter2
                client:
                  sasl.jaas.config: secret-module required password=hunter3;
                  max.poll.records: 10""")).broker().config();

    @Test
    void toStringMasksSecretsAndSecretLookingNativeSettings() {
        assertThat(broker).hasToString("broker.activemq{url=vm://embedded, user=admin, password=******, prefetch=100,"
                + " persistent=true, client={sasl.jaas.config=******, max.poll.records=10}}");
    }

    @Test
    void getReturnsTypedValues() {
        assertThat(broker.get(FakePlugins.AMQ_PASSWORD)).isEqualTo(new Secret("hunter2"));
        assertThat(broker.get(FakePlugins.AMQ_CLIENT)).containsEntry("max.poll.records", "10");
    }

    @Test
    void getAcceptsAnEquivalentDeclarationOfTheSameKey() {
        assertThat(broker.get(ConfigKey.integer("prefetch"))).isEqualTo(100);
    }

    @Test
    void getOfAnUndeclaredKeyIsAProgrammingError() {
        assertThatThrownBy(() -> broker.get(ConfigKey.string("host")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Config key host (string) is not declared for broker.activemq."
                        + " Declared: [url, user, password, prefetch, persistent, client]");
        assertThatThrownBy(() -> broker.get(ConfigKey.string("prefetch")))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void equalWhenPathAndValuesAreEqual() {
        SectionConfig again = (SectionConfig) Configs.load(Configs.MINIMAL.replace("url: vm://embedded", """
                url: vm://embedded
                    password: hunter2
                    client: {sasl.jaas.config: secret-module required password=hunter3;, max.poll.records: '10'}"""))
                .broker().config();

        assertThat(again).isEqualTo(broker).hasSameHashCodeAs(broker);
        assertThat(again.isGiven("user")).isFalse();
        assertThat(again.isGiven("url")).isTrue();
    }

    @Test
    void sensitiveNativeSettingNamesAreRecognised() {
        assertThat(Map.of(
                "sasl.jaas.config", true,
                "ssl.key.password", true,
                "basic.auth.user.info", true,
                "api-key", true,
                "access.token", true,
                "max.poll.records", false,
                "bootstrap.servers", false,
                "routing-key", false))
                .allSatisfy((name, sensitive) -> assertThat(Masking.isSensitive(name)).as(name).isEqualTo(sensitive));
    }
}
