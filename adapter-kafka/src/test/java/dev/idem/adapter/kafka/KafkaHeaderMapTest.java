package dev.idem.adapter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

/** A record's headers as a delivery's map: what a look-up, an iteration and an equality see. */
class KafkaHeaderMapTest {

    private static RecordHeaders headers() {
        RecordHeaders headers = new RecordHeaders();
        headers.add("message-id", utf8("order-1"));
        headers.add("traceparent", utf8("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
        headers.add("message-id", utf8("order-2"));
        headers.add("empty", null);
        headers.add("name", utf8("Zoë ✓"));
        return headers;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aLookUpReadsTheLastValueOfTheNameDecodedAsUtf8() {
        KafkaHeaderMap map = new KafkaHeaderMap(headers());
        assertThat(map.get("message-id")).isEqualTo("order-2");
        assertThat(map.get("name")).isEqualTo("Zoë ✓");
        assertThat(map.get("empty")).isEmpty();
        assertThat(map.get("absent")).isNull();
        assertThat(map.get(null)).isNull();
        assertThat(map.get(42)).isNull();
        assertThat(map.containsKey("empty")).isTrue();
        assertThat(map.containsKey("absent")).isFalse();
        assertThat(map.getOrDefault("absent", "x")).isEqualTo("x");
    }

    @Test
    void iterationSeesEachNameOnceAtItsFirstPlaceWithItsLastValue() {
        KafkaHeaderMap map = new KafkaHeaderMap(headers());
        assertThat(List.copyOf(map.keySet())).containsExactly("message-id", "traceparent", "empty", "name");
        assertThat(map).hasSize(4).containsEntry("message-id", "order-2");
        Map<String, String> expected = new LinkedHashMap<>();
        expected.put("message-id", "order-2");
        expected.put("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        expected.put("empty", "");
        expected.put("name", "Zoë ✓");
        assertThat(map).isEqualTo(expected);
        assertThat(map.hashCode()).isEqualTo(expected.hashCode());
        assertThat(map.get("message-id")).as("after the map was built").isEqualTo("order-2");
    }

    @Test
    void noHeadersIsAnEmptyMapAndTheMapIsReadOnly() {
        KafkaHeaderMap none = new KafkaHeaderMap(new RecordHeaders());
        assertThat(none).isEmpty();
        assertThat(none.isEmpty()).isTrue();
        KafkaHeaderMap map = new KafkaHeaderMap(headers());
        assertThat(map.isEmpty()).isFalse();
        assertThatThrownBy(() -> map.put("x", "y")).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> map.entrySet().clear()).isInstanceOf(UnsupportedOperationException.class);
    }
}
