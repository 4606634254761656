package dev.idem.runtime.extract;

import static dev.idem.runtime.extract.Messages.create;
import static dev.idem.runtime.extract.Messages.json;
import static dev.idem.runtime.extract.Messages.payload;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.PluginConfig;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class JsonPointerIdExtractorTest {

    private final JsonPointerIdExtractorProvider provider = new JsonPointerIdExtractorProvider();

    private IdExtractor pointer(String pointer) {
        return create(provider, "pointer", pointer);
    }

    @Test
    void readsATopLevelString() {
        assertThat(pointer("/orderId").extract(json("{\"other\":1,\"orderId\":\"A-17\"}"))).isEqualTo("A-17");
    }

    @Test
    void readsIntoNestedObjectsAndArrays() {
        String payload = "{\"meta\":{\"skip\":[1,{\"id\":\"no\"}]},"
                + "\"items\":[{\"id\":\"first\",\"tags\":[\"x\"]},{\"id\":\"second\"}]}";

        assertThat(pointer("/items/0/id").extract(json(payload))).isEqualTo("first");
        assertThat(pointer("/items/1/id").extract(json(payload))).isEqualTo("second");
        assertThat(pointer("/items/0/tags/0").extract(json(payload))).isEqualTo("x");
    }

    @Test
    void unescapesTildeOneAsSlashAndTildeZeroAsTilde() {
        String payload = "{\"a/b\":\"slash\",\"m~n\":\"tilde\",\"~1\":\"literal\"}";

        assertThat(pointer("/a~1b").extract(json(payload))).isEqualTo("slash");
        assertThat(pointer("/m~0n").extract(json(payload))).isEqualTo("tilde");
        assertThat(pointer("/~01").extract(json(payload))).isEqualTo("literal");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "{\"n\":42}             | 42",
        "{\"n\":-7}             | -7",
        "{\"n\":1.50}           | 1.50",
        "{\"n\":1e3}            | 1e3",
        "{\"n\":12345678901234567890123} | 12345678901234567890123",
        "{\"n\":true}           | true",
        "{\"n\":false}          | false",
    })
    void numbersAndBooleansAreTheirJsonText(String payload, String key) {
        assertThat(pointer("/n").extract(json(payload))).isEqualTo(key);
    }

    @Test
    void objectsAndArraysAreTheirCompactJson() {
        String payload = "{ \"k\" : { \"b\" : [ 1 , 2.50 ] , \"a\" : \"x\" } }";

        assertThat(pointer("/k").extract(json(payload))).isEqualTo("{\"b\":[1,2.50],\"a\":\"x\"}");
        assertThat(pointer("/k/b").extract(json(payload))).isEqualTo("[1,2.50]");
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "{\"other\":1}",
        "{\"orderId\":null}",
        "{\"orderId\":\"\"}",
        "{\"orderId\":\"   \"}",
        "[1,2]",
        "\"orderId\"",
        "{\"order\":{\"orderId\":1}}",
    })
    void missingNullOrBlankValueIsNoKey(String payload) {
        assertThat(pointer("/orderId").extract(json(payload))).isNull();
    }

    @Test
    void pointerIntoAScalarOrPastAnArrayIsNoKey() {
        assertThat(pointer("/a/b").extract(json("{\"a\":5}"))).isNull();
        assertThat(pointer("/items/2").extract(json("{\"items\":[1,2]}"))).isNull();
        assertThat(pointer("/items/-").extract(json("{\"items\":[1,2]}"))).isNull();
        assertThat(pointer("/items/01").extract(json("{\"items\":[1,2]}"))).isNull();
    }

    @Test
    void arrayIndexTokensAreNamesInObjects() {
        assertThat(pointer("/items/01").extract(json("{\"items\":{\"01\":\"named\"}}"))).isEqualTo("named");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "/id         | {\"id\":\"first\",\"id\":\"second\"}                         | \"id\" in the payload's top-level object",
        "/id         | {\"id\":\"same\",\"x\":[1,{\"y\":2}],\"id\":\"same\"}       | \"id\" in the payload's top-level object",
        "/id         | {\"id\":null,\"id\":\"second\"}                             | \"id\" in the payload's top-level object",
        "/order/id   | {\"order\":{\"id\":1},\"order\":{\"id\":2}}                | \"order\" in the payload's top-level object",
        "/order/id   | {\"order\":{\"id\":1,\"id\":2}}                           | \"id\" in the object at /order",
        "/items/0/id | {\"items\":[{\"id\":1,\"n\":2,\"id\":3}]}                  | \"id\" in the object at /items/0",
        "/a~1b       | {\"a/b\":1,\"a/b\":2}                                   | \"a/b\" in the payload's top-level object",
    })
    void aPayloadThatRepeatsANameOnThePointersPathHasAnInvalidKey(String pointer, String payload, String where) {
        // Jackson's ObjectMapper, as a handler would read it, takes the last value: the key must not be the first.
        assertThatThrownBy(() -> pointer(pointer).extract(json(payload)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Payload repeats the name " + where)
                .hasMessageContaining("send each name once");
    }

    @Test
    void aValueReadWholeThatRepeatsANameInsideIsAnInvalidKey() {
        assertThatThrownBy(() -> pointer("/order").extract(json("{\"order\":{\"id\":1,\"tags\":[{\"t\":1,\"t\":2}]}}")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Payload repeats a name in an object inside the value at /order")
                .satisfies(e -> assertThat(e.getMessage()).as("no payload text").doesNotContain("\"t\""));
    }

    @Test
    void namesRepeatedOffThePointersPathDoNotMatter() {
        assertThat(pointer("/id").extract(json("{\"meta\":{\"v\":1,\"v\":2},\"id\":\"A-1\",\"x\":1,\"x\":2}")))
                .isEqualTo("A-1");
        assertThat(pointer("/items/1/id").extract(json("{\"items\":[{\"id\":1,\"id\":2},{\"id\":3}]}")))
                .isEqualTo("3");
    }

    @ParameterizedTest
    @ValueSource(strings = {"hello", "{\"orderId\":", "{orderId: 1}", "{'orderId':'1'}", ""})
    void payloadThatIsNotJsonIsAnInvalidKey(String payload) {
        assertThatThrownBy(() -> pointer("/orderId").extract(json(payload)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Payload is not");
    }

    @Test
    void parseErrorSaysWhereAndKeepsThePayloadOutOfTheMessage() {
        assertThatThrownBy(() -> pointer("/orderId").extract(json("{\"secret\":\"hunter2\" oops}")))
                .hasMessageContaining("line 1, column")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("hunter2"));
    }

    @Test
    void invalidUtf8IsAnInvalidKeyWhetherReadOrSkipped() {
        byte[] inKey = {'{', '"', 'i', 'd', '"', ':', '"', (byte) 0xFF, '"', '}'};
        byte[] inSkipped = {'{', '"', 'x', '"', ':', '"', (byte) 0xC3, '(', '"', ',',
            '"', 'i', 'd', '"', ':', '1', '}'};

        assertThatThrownBy(() -> pointer("/id").extract(payload(inKey)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-8");
        assertThatThrownBy(() -> pointer("/id").extract(payload(inSkipped)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("UTF-8");
    }

    @Test
    void utf16JsonIsRejectedRatherThanGuessed() {
        byte[] utf16 = "{\"id\":\"1\"}".getBytes(StandardCharsets.UTF_16LE);

        assertThatThrownBy(() -> pointer("/id").extract(payload(utf16)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not UTF-8");
    }

    @Test
    void readsToTheEndOfTheTopLevelValueSoThatARepeatAfterTheValueIsSeen() {
        assertThatThrownBy(() -> pointer("/id").extract(json("{\"id\":\"early\", this is broken")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Payload is not valid JSON");
        assertThat(pointer("/id").extract(json("{\"id\":\"early\"} trailing text is not read"))).isEqualTo("early");
    }

    @Test
    void nonAsciiKeysAreDecoded() {
        assertThat(pointer("/clé").extract(json("{\"clé\":\"Grüße-✓\"}"))).isEqualTo("Grüße-✓");
    }

    @ParameterizedTest
    @ValueSource(strings = {"orderId", "", "/a~2b", "/a~"})
    void invalidPointerIsRejectedWhenTheConfigurationIsRead(String bad) {
        assertThatThrownBy(() -> pointer(bad))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("Invalid value '" + bad + "' for pipelines.orders.id[0].pointer")
                .hasMessageContaining("must be a JSON pointer starting with '/'");
    }

    @Test
    void createRejectsAnInvalidPointerEvenIfTheLoaderSkippedTheKeysRules() {
        PluginConfig unchecked = new PluginConfig() {
            @Override
            @SuppressWarnings("unchecked")
            public <T> T get(ConfigKey<T> key) {
                return (T) "/a~x";
            }

            @Override
            public String path() {
                return Messages.PATH;
            }
        };

        assertThatThrownBy(() -> provider.create(unchecked))
                .isInstanceOf(ConfigException.class)
                .hasMessage("Invalid configuration: Invalid value '/a~x' for pipelines.orders.id[0].pointer:"
                        + " has a '~' not followed by 0 or 1; write '~' as ~0 and '/' as ~1");
    }
}
