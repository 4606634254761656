package dev.idem.examples.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.api.NonRetryableException;
import dev.idem.api.PayloadException;
import dev.idem.runtime.TypedPayloads;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * An order event as the handlers get it: decoded by the runtime from the payload ({@link TypedPayloads} decodes as a
 * pipeline does), then checked by {@link OrderEvent#validate}. Either way a payload that does not fit is not retried
 * and says what is wrong: the runtime's refusal names the JSON path, the position and what was expected there; the
 * event's own check names the value and the rule.
 */
class OrderEventTest {

    /** What the runtime hands the handler, which then checks it, as a run does. */
    private static OrderEvent received(String payload) {
        return TypedPayloads.decode(payload.getBytes(StandardCharsets.UTF_8), OrderEvent.class).validate();
    }

    @Test
    void readsTheThreeMembers() {
        OrderEvent event = received(OrderEvent.EXAMPLE);

        assertThat(event).isEqualTo(new OrderEvent("o-17", "paid", "12.50"));
        assertThat(event.amountValue()).isEqualByComparingTo(new BigDecimal("12.5"));
    }

    @Test
    void acceptsWhitespaceEscapesAndOtherMembers() {
        OrderEvent event = received(" {\n\t\"currency\" : \"EUR\",\r\n \"orderId\":\"o\\u002d1\","
                + " \"event\":\"p\\u0061id\", \"amount\":\"3\", \"note\":\"a \\\"quoted\\\" \\\\ note\", \"lines\": [1, 2]} \n");

        assertThat(event).isEqualTo(new OrderEvent("o-1", "paid", "3"));
    }

    /** The event's own rules: what JSON cannot say. */
    @ParameterizedTest(name = "{1}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
        "`{\"orderId\":\"o-1\",\"event\":\"paid\"}`                      | missing member \"amount\"",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"12.505\"}`| amount \"12.505\" must be a positive decimal",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"0.00\"}`  | amount \"0.00\" must be a positive decimal",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"-1\"}`    | amount \"-1\" must be a positive decimal",
        "`{\"orderId\":\"o 1\",\"event\":\"paid\",\"amount\":\"1\"}`     | orderId \"o 1\" must be 1 to 64 of",
        "`{\"orderId\":\"o-1\",\"event\":\"shipped\",\"amount\":\"1\"}`  | event \"shipped\" is not handled",
    })
    void anEventThatBreaksARuleIsNonRetryableAndSaysWhatIsWrong(String payload, String problem) {
        assertThatThrownBy(() -> received(payload))
                .isInstanceOf(NonRetryableException.class)
                .hasMessageStartingWith("Malformed order event: ")
                .hasMessageContaining(problem)
                .hasMessageEndingWith("Expected a payload such as " + OrderEvent.EXAMPLE);
    }

    /**
     * What is not an order event's JSON: the runtime refuses it before the handler runs (dead-lettered as
     * {@code invalid-payload}), and says where and what it expected, never the payload's content.
     */
    @ParameterizedTest(name = "[{index}] {1}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
        "``                                                           | $          | a JSON value, found an empty payload",
        "`[1]`                                                        | $          | an object (OrderEvent), found an array",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":12.50}`  | $.amount   | a string, found a decimal number",
        "`{\"orderId\":\"o-1\",\"orderId\":\"o-2\"}`                  | $.orderId  | each name once per object",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"1\"} x`| $          | the end of the payload after its one JSON value",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"1\"`   | $.amount   | the rest of the JSON value",
        "`{\"orderId\":\"o-1`                                         | $.orderId  | the rest of the JSON value",
        "`{\"orderId\":\"o-\\x\"}`                                    | $.orderId  | a valid escape",
        "`{orderId:\"o-1\"}`                                          | $          | double-quote to start field name",
    })
    void aPayloadThatIsNotAnEventsJsonIsNonRetryableAndSaysWhereAndWhat(String payload, String path, String expected) {
        assertThatThrownBy(() -> received(payload))
                .isInstanceOfSatisfying(PayloadException.class, e -> {
                    assertThat(e).isInstanceOf(NonRetryableException.class);
                    assertThat(e.path()).isEqualTo(path);
                    assertThat(e.line()).isEqualTo(1);
                    assertThat(e.column()).isPositive();
                    assertThat(e.expected()).contains(expected);
                });
    }

    @Test
    void aControlCharacterInAStringIsRejected() {
        assertThatThrownBy(() -> received("{\"orderId\":\"o-1\nx\"}"))
                .isInstanceOfSatisfying(PayloadException.class,
                        e -> assertThat(e.expected()).contains("escaped").endsWith("not U+000A"));
    }
}
