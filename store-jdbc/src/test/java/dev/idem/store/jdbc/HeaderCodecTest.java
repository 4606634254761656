package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class HeaderCodecTest {

    @Test
    void oddHeadersComeBackExactlyFromPureAscii() {
        Map<String, String> odd = new LinkedHashMap<>();
        odd.put("quote", "say \"hi\" and 'bye'");
        odd.put("lines", "one\ntwo\r\nthree\ttab\bback\fform");
        odd.put("backslash", "C:\\path\\u0041 \\");
        odd.put("unicode", "caf\u00e9 \u2713 \u65e5\u672c \uD83D\uDE00");
        odd.put("control", "nul\u0000soh\u0001us\u001fdel\u007f");
        odd.put("unpaired", "\uD800 then \uDC00");
        odd.put("", "");
        odd.put("slash", "a/b");

        String json = HeaderCodec.encode(odd);

        assertThat(json).matches("[\\x20-\\x7e]*");
        assertThat(HeaderCodec.decode(json)).isEqualTo(odd);
    }

    @Test
    void keysAreWrittenSortedSoEqualHeadersMakeEqualText() {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("b", "2");
        headers.put("a", "1\n");

        assertThat(HeaderCodec.encode(headers)).isEqualTo("{\"a\":\"1\\n\",\"b\":\"2\"}");
        assertThat(HeaderCodec.encode(Map.of())).isEqualTo("{}");
    }

    @Test
    void randomHeadersOfEveryUtf16UnitRoundTrip() {
        Random random = new Random(11);
        for (int round = 0; round < 2_000; round++) {
            Map<String, String> headers = new HashMap<>();
            int size = random.nextInt(5);
            for (int i = 0; i < size; i++) {
                headers.put(randomText(random), randomText(random));
            }
            assertThat(HeaderCodec.decode(HeaderCodec.encode(headers))).isEqualTo(headers);
        }
    }

    private static String randomText(Random random) {
        StringBuilder text = new StringBuilder();
        int length = random.nextInt(12);
        for (int i = 0; i < length; i++) {
            text.append(random.nextInt(4) == 0 ? (char) random.nextInt(0x10000) : (char) random.nextInt(0x80));
        }
        return text.toString();
    }

    @Test
    void jsonAsAPersonWritesItIsRead() {
        assertThat(HeaderCodec.decode(" {\n  \"a\" : \"x\\/y\\u00E9\" ,\t\"b\":\"\" }\n"))
                .containsExactly(Map.entry("a", "x/y\u00e9"), Map.entry("b", ""));
        assertThat(HeaderCodec.decode("{ }")).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "not json", "[]", "{", "{\"a\"}", "{\"a\":1}", "{\"a\":\"b\",}", "{\"a\":\"b\"} x",
            "{\"a\":\"b\" \"c\":\"d\"}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{\"a\":\"\\u12g4\"}",
            "{\"a\":\"b\",\"a\":\"c\"}", "{\"a\":\"line\nbreak\"}", "{\"a\":null}", "{'a':'b'}"})
    void anythingButAJsonObjectOfStringsIsRejected(String text) {
        assertThatThrownBy(() -> HeaderCodec.decode(text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Not a JSON object of strings at character ");
    }
}
