package dev.idem.examples.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.api.NonRetryableException;
import java.math.BigDecimal;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class OrderEventTest {

    @Test
    void readsTheThreeMembers() {
        OrderEvent event = OrderEvent.parse(OrderEvent.EXAMPLE);

        assertThat(event).isEqualTo(new OrderEvent("o-17", "paid", "12.50"));
        assertThat(event.amountValue()).isEqualByComparingTo(new BigDecimal("12.5"));
    }

    @Test
    void acceptsWhitespaceEscapesAndOtherStringMembers() {
        OrderEvent event = OrderEvent.parse(" {\n\t\"currency\" : \"EUR\",\r\n \"orderId\":\"o\\u002d1\","
                + " \"event\":\"p\\u0061id\", \"amount\":\"3\", \"note\":\"a \\\"quoted\\\" \\\\ note\"} \n");

        assertThat(event).isEqualTo(new OrderEvent("o-1", "paid", "3"));
    }

    @ParameterizedTest(name = "{1}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
        "``                                                              | the payload is empty",
        "`[1]`                                                           | expected a JSON object starting with '{'",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\"}`                      | missing member \"amount\"",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":12.50}`     | the value of \"amount\" must be a JSON string",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"12.505\"}`| amount \"12.505\" must be a positive decimal",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"0.00\"}`  | amount \"0.00\" must be a positive decimal",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"-1\"}`    | amount \"-1\" must be a positive decimal",
        "`{\"orderId\":\"o 1\",\"event\":\"paid\",\"amount\":\"1\"}`     | orderId \"o 1\" must be 1 to 64 of",
        "`{\"orderId\":\"o-1\",\"event\":\"shipped\",\"amount\":\"1\"}`  | event \"shipped\" is not handled",
        "`{\"orderId\":\"o-1\",\"orderId\":\"o-2\"}`                     | duplicate member \"orderId\"",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"1\"} x`   | unexpected 'x' after the object",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"1\"`      | expected ',' or '}' after the value of \"amount\"",
        "`{\"orderId\":\"o-1`                                            | unterminated string",
        "`{\"orderId\":\"o-\\x\"}`                                       | invalid escape \\x",
        "`{orderId:\"o-1\"}`                                             | expected a member name in double quotes",
    })
    void aMalformedPayloadIsNonRetryableAndSaysWhatIsWrong(String payload, String problem) {
        assertThatThrownBy(() -> OrderEvent.parse(payload))
                .isInstanceOf(NonRetryableException.class)
                .hasMessageStartingWith("Malformed order event: ")
                .hasMessageContaining(problem)
                .hasMessageEndingWith("Expected a payload such as " + OrderEvent.EXAMPLE);
    }

    @Test
    void aControlCharacterInAStringIsRejected() {
        assertThatThrownBy(() -> OrderEvent.parse("{\"orderId\":\"o-1\nx\"}"))
                .isInstanceOf(NonRetryableException.class)
                .hasMessageContaining("unescaped control character U+000A");
    }
}
