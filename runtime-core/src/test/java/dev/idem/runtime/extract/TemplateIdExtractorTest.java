package dev.idem.runtime.extract;

import static dev.idem.runtime.extract.Messages.create;
import static dev.idem.runtime.extract.Messages.message;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ConfigException;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TemplateIdExtractorTest {

    private static final String ORDER = "{\"orderId\":\"A-17\",\"lineNo\":3,\"items\":[{\"sku\":\"X\"}]}";

    private final TemplateIdExtractorProvider provider = new TemplateIdExtractorProvider();

    private IdExtractor template(String template) {
        return create(provider, "template", template);
    }

    @Test
    void joinsSeveralPayloadFieldsWithLiteralText() {
        assertThat(template("order-{/orderId}-{/lineNo}").extract(message(Map.of(), ORDER)))
                .isEqualTo("order-A-17-3");
    }

    @Test
    void mixesHeadersPayloadAndMessageAttributes() {
        InboundMessage message = message(Map.of("tenant", "acme"), ORDER);

        assertThat(template("{header:tenant}:{/orderId}").extract(message)).isEqualTo("acme:A-17");
        assertThat(template("{source}/{partition}/{key}/{broker-id}").extract(message))
                .isEqualTo("orders/orders-3/customer-7/orders-3-42");
        assertThat(template("{/items/0/sku}").extract(message)).isEqualTo("X");
    }

    @Test
    void samePointerTwiceIsReadOnce() {
        assertThat(template("{/orderId}={/orderId}").extract(message(Map.of(), ORDER))).isEqualTo("A-17=A-17");
    }

    @Test
    void pointerAndAPointerBelowItBothResolve() {
        assertThat(template("{/items/0}|{/items/0/sku}").extract(message(Map.of(), ORDER)))
                .isEqualTo("{\"sku\":\"X\"}|X");
    }

    @Test
    void doubledBracesAreLiteralBraces() {
        assertThat(template("{{{/orderId}}}").extract(message(Map.of(), ORDER))).isEqualTo("{A-17}");
    }

    @Test
    void anyMissingFieldMeansNoKey() {
        assertThat(template("{header:tenant}:{/orderId}").extract(message(Map.of(), ORDER))).isNull();
        assertThat(template("{header:tenant}:{/missing}").extract(message(Map.of("tenant", "acme"), ORDER)))
                .isNull();
        assertThat(template("{key}-{/orderId}").extract(new InboundMessage("orders", null, null, Map.of(),
                ORDER.getBytes(), null, false, 1))).isNull();
    }

    @Test
    void messageMissingAHeaderIsNotParsedAtAll() {
        // Not JSON, but the header is missing first, so the payload is never read.
        assertThat(template("{header:tenant}:{/orderId}").extract(message(Map.of(), "not json"))).isNull();
    }

    @Test
    void aPayloadThatRepeatsANameOnAFieldsPathIsAnInvalidKey() {
        String repeated = "{\"orderId\":\"A-17\",\"lineNo\":3,\"lineNo\":4}";

        assertThatThrownBy(() -> template("order-{/orderId}-{/lineNo}").extract(message(Map.of(), repeated)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Payload repeats the name \"lineNo\" in the payload's top-level object");
        assertThatThrownBy(() -> template("{/items/0}|{/items/0/sku}")
                .extract(message(Map.of(), "{\"items\":[{\"sku\":\"X\",\"sku\":\"Y\"}]}")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Payload repeats a name in an object inside the value at /items/0");
    }

    @Test
    void payloadThatIsNotJsonIsAnInvalidKey() {
        assertThatThrownBy(() -> template("{header:tenant}:{/orderId}")
                .extract(message(Map.of("tenant", "acme"), "not json")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Payload is not valid JSON");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "order-{/orderId        | unclosed '{' at character 7",
        "order-}{/orderId}      | unmatched '}' at character 7; write '}}' for a literal '}'",
        "{/id-{/line}           | '{' at character 6 inside the placeholder opened at character 1",
        "{orderId}              | unknown placeholder '{orderId}' at character 1 (a payload field is {/orderId})",
        "{topic}-{/id}          | unknown placeholder '{topic}' at character 1",
        "{}                     | unknown placeholder '{}' at character 1; use {/json/pointer}, {header:name}",
        "{header:}              | placeholder '{header:}' at character 1 names no header",
        "{/a~2}                 | placeholder '{/a~2}' at character 1 has a '~' not followed by 0 or 1",
        "order-{{static}}       | has no placeholder",
    })
    void badTemplateIsAConfigErrorNamingItAndWhatIsWrong(String template, String problem) {
        assertThatThrownBy(() -> template(template))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("Invalid value '" + template + "' for pipelines.orders.id[0].template: ")
                .hasMessageContaining(problem);
    }
}
