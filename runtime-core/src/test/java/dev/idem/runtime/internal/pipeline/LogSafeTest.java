package dev.idem.runtime.internal.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class LogSafeTest {

    @Test
    void lineBreaksAndOtherControlsAreEscapedSoNoValueCanStartALogLine() {
        String forged = "evil\n12:00:00.000 INFO  [main] d.i.r.IdemRuntime   - FORGED LINE\r\u0007\u2028\\";
        assertThat(LogSafe.text(forged))
                .isEqualTo("evil\\n12:00:00.000 INFO  [main] d.i.r.IdemRuntime   - FORGED LINE\\r\\u0007\\u2028\\\\")
                .doesNotContain("\n", "\r");
    }

    @Test
    void printableTextIsReturnedAsItIs() {
        String key = "order-42 ünïcödé 注文";
        assertThat(LogSafe.text(key)).isSameAs(key);
        assertThat(LogSafe.text(null)).isNull();
    }

    @Test
    void keysWithControlCharactersAreInvalid() {
        assertThat(KeyResolver.invalidity("evil\nline")).contains("control character (U+000A) at index 4");
        assertThat(KeyResolver.invalidity("tab\tkey")).contains("U+0009");
        assertThat(KeyResolver.invalidity("nel\u0085")).contains("U+0085");
        assertThat(KeyResolver.invalidity("order-42 ünïcödé")).isNull();
    }
}
