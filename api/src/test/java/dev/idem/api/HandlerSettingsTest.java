package dev.idem.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HandlerSettingsTest {

    private final HandlerSettings settings = HandlerSettings.of("orders",
            Map.of("db.url", "jdbc:h2:mem:a", "db.password", "hunter2", "pool", " 4 ", "fsync", "TRUE"));

    @Test
    void aMissingRequiredSettingNamesItsPathAndHowToSetIt() {
        assertThatThrownBy(() -> settings.require("db.user"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Missing handler setting pipelines.orders.handler-settings.db.user: set it in the"
                        + " configuration, e.g. db.user: ${DB_USER}");
    }

    @Test
    void typedGettersParseOrFallBackToTheDefault() {
        assertThat(settings.require("db.url")).isEqualTo("jdbc:h2:mem:a");
        assertThat(settings.getInt("pool", 1)).isEqualTo(4);
        assertThat(settings.getInt("absent", 7)).isEqualTo(7);
        assertThat(settings.getBoolean("fsync", false)).isTrue();
        assertThat(settings.getBoolean("absent", true)).isTrue();
        assertThat(settings.get("absent")).isEmpty();
    }

    @Test
    void aMalformedValueNamesThePathTheValueAndTheRule() {
        assertThatThrownBy(() -> settings.getInt("db.url", 1))
                .hasMessage("Invalid value 'jdbc:h2:mem:a' for handler setting pipelines.orders.handler-settings.db.url:"
                        + " must be an integer from -2147483648 to 2147483647");
        assertThatThrownBy(() -> settings.getBoolean("pool", false))
                .hasMessage("Invalid value ' 4 ' for handler setting pipelines.orders.handler-settings.pool:"
                        + " must be true or false");
    }

    @Test
    void toStringShowsTheNamesNeverTheValues() {
        assertThat(settings.toString()).startsWith("HandlerSettings[pipeline=orders, names=[")
                .contains("db.password").doesNotContain("hunter2");
    }

    @Test
    void theSettingsAreACopyAndCannotBeChanged() {
        Map<String, String> source = new HashMap<>(Map.of("a", "1"));
        HandlerSettings copy = HandlerSettings.of("orders", source);
        source.put("b", "2");

        assertThat(copy.asMap()).containsOnlyKeys("a");
        assertThatThrownBy(() -> copy.asMap().put("c", "3")).isInstanceOf(UnsupportedOperationException.class);
        assertThat(copy).isEqualTo(HandlerSettings.of("orders", Map.of("a", "1")))
                .isNotEqualTo(HandlerSettings.of("audit", Map.of("a", "1")));
    }

    @Test
    void nullValuesAreRefused() {
        Map<String, String> withNull = new HashMap<>();
        withNull.put("a", null);

        assertThatThrownBy(() -> HandlerSettings.of("orders", withNull)).isInstanceOf(NullPointerException.class)
                .hasMessage("value of a");
    }
}
