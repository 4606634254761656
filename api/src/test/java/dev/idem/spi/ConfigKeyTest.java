package dev.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class ConfigKeyTest {

    @ParameterizedTest
    @CsvSource({"500ms,PT0.5S", "30s,PT30S", "5m,PT5M", "2h,PT2H", "7d,PT168H", "0,PT0S", "PT30S,PT30S",
            "pt1m,PT1M", "250us,PT0.00025S", "15 s,PT15S"})
    void durationsAreReadInTheirUsualForms(String text, String iso) {
        assertThat(ConfigKey.parseDuration(text)).isEqualTo(Duration.parse(iso));
    }

    @ParameterizedTest
    @CsvSource({"''", "s", "30", "30x", "thirty seconds", "1.5s"})
    void malformedDurationsSayWhatIsAccepted(String text) {
        assertThatThrownBy(() -> ConfigKey.parseDuration(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("500ms, 30s, 5m, 2h, 7d");
    }

    @ParameterizedTest
    @CsvSource({"2562047788015d", "106752d", "P300000D"})
    void durationsLongerThanTheNanosecondClockAreRefusedNotOverflowedLater(String text) {
        assertThatThrownBy(() -> ConfigKey.parseDuration(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("must be at most 106751d, the longest the runtime's nanosecond clock can time");
        assertThat(ConfigKey.parseDuration("106751d")).isEqualTo(Duration.ofDays(106_751));
    }

    @Test
    void durationsAreFormattedTheWayUsersWriteThem() {
        assertThat(ConfigKey.formatDuration(Duration.ofMillis(250))).isEqualTo("250ms");
        assertThat(ConfigKey.formatDuration(Duration.ofSeconds(30))).isEqualTo("30s");
        assertThat(ConfigKey.formatDuration(Duration.ofMinutes(90))).isEqualTo("90m");
        assertThat(ConfigKey.formatDuration(Duration.ofDays(7))).isEqualTo("7d");
        assertThat(ConfigKey.formatDuration(Duration.ZERO)).isEqualTo("0");
    }

    @Test
    void rulesAreAppliedAndDescribed() {
        ConfigKey<Duration> lease = ConfigKey.duration("lease").atLeast(Duration.ofSeconds(1))
                .atMost(Duration.ofHours(1));
        assertThat(lease.parse("30s")).isEqualTo(Duration.ofSeconds(30));
        assertThatThrownBy(() -> lease.parse("-5s")).hasMessage("must be at least 1s");
        assertThat(lease.describeAccepted()).endsWith("that must be at least 1s and be at most 1h");
    }

    @Test
    void scalarsAcceptYamlTypesAndText() {
        assertThat(ConfigKey.integer("n").parse(5)).isEqualTo(5);
        assertThat(ConfigKey.integer("n").parse("5")).isEqualTo(5);
        assertThat(ConfigKey.bool("b").parse("TRUE")).isTrue();
        assertThat(ConfigKey.decimal("d").parse(2)).isEqualTo(2.0);
        assertThat(ConfigKey.list("l").parse("a, b,,c")).containsExactly("a", "b", "c");
        assertThat(ConfigKey.list("l").parse(List.of("a", 1))).containsExactly("a", "1");
        assertThatThrownBy(() -> ConfigKey.integer("n").parse("five")).hasMessageContaining("an integer");
        assertThatThrownBy(() -> ConfigKey.string("s").parse(Map.of("a", 1))).hasMessageContaining("not a map");
        assertThatThrownBy(() -> ConfigKey.oneOf("o", "a", "b").parse("c")).hasMessage("must be one of [a, b]");
    }

    @Test
    void mapKeysFlattenTheirSubtree() {
        Map<String, String> flat = ConfigKey.map("client").parse(Map.of("max", Map.of("poll", Map.of("records", 10))));
        assertThat(flat).containsExactly(Map.entry("max.poll.records", "10"));
    }

    @Test
    void secretsAreMaskedWhenPrinted() {
        Secret secret = ConfigKey.secret("password").parse("hunter2");
        assertThat(secret.reveal()).isEqualTo("hunter2");
        assertThat(secret).hasToString("******");
        assertThat(String.valueOf(List.of(secret))).doesNotContain("hunter2");
    }

    @Test
    void keyNamesAreLowercaseDashedAndDotted() {
        assertThat(ConfigKey.string("retry.max-attempts").name()).isEqualTo("retry.max-attempts");
        assertThatThrownBy(() -> ConfigKey.string("maxAttempts")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ConfigSpec.builder().define(ConfigKey.string("a")).define(ConfigKey.bool("a")))
                .hasMessageContaining("declared twice");
    }
}
