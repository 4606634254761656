package ${package};

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.api.HandlerSettings;
import dev.idem.api.NonRetryableException;
import dev.idem.api.PayloadException;
import dev.idem.handlertest.TestContext;
import dev.idem.handlertest.TestMessage;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ${handlerClassName}Test {

    private static ${handlerClassName} handler(Map<String, String> settings) {
        ${handlerClassName} handler = new ${handlerClassName}();
        handler.init(HandlerSettings.of("orders", settings));
        return handler;
    }

    @Test
    void anOrderIsConfirmedToTheConfiguredDestination() throws Exception {
        TestMessage message = TestMessage.of("m-1", "{\"orderId\":\"o-17\",\"total\":\"12.50\"}");
        TestContext context = TestContext.of(message);

        handler(Map.of("confirmations", "orders.confirmed")).handle(message, context);

        assertThat(context.sent()).containsExactly(new TestContext.Sent(
                "orders.confirmed", "o-17", "{\"orderId\":\"o-17\",\"status\":\"confirmed\"}", Map.of()));
    }

    @Test
    void withoutTheConfirmationsSettingNothingIsEmitted() throws Exception {
        TestContext context = TestContext.plain();

        handler(Map.of()).handle(TestMessage.of("m-1", " { \"orderId\" : \"o-17\", \"total\" : \"3\" } "), context);

        assertThat(context.sent()).isEmpty();
    }

    /** What is not an order's JSON: the runtime refuses it before the handler runs, saying where and what it expected. */
    @Test
    void aPayloadThatIsNotTheEventsJsonIsNotRetried() {
        assertThatThrownBy(() -> handler(Map.of()).handle(TestMessage.of("m-1", "orderId=o-17"), TestContext.plain()))
                .isInstanceOf(NonRetryableException.class)
                .isInstanceOfSatisfying(PayloadException.class, e -> {
                    assertThat(e.path()).isEqualTo("$");
                    assertThat(e.column()).isEqualTo(1);
                    assertThat(e.expected()).startsWith("JSON String, Number, Array, Object");
                });
        assertThatThrownBy(() -> handler(Map.of()).handle(
                TestMessage.of("m-1", "{\"orderId\":\"o-1\"} trailing"), TestContext.plain()))
                .isInstanceOfSatisfying(PayloadException.class, e -> {
                    assertThat(e.column()).isEqualTo(19);
                    assertThat(e.expected()).isEqualTo("the end of the payload after its one JSON value");
                });
        assertThatThrownBy(() -> handler(Map.of()).handle(
                TestMessage.of("m-1", "{\"orderId\":\"1\",\"orderId\":\"2\"}"), TestContext.plain()))
                .isInstanceOfSatisfying(PayloadException.class, e -> {
                    assertThat(e.path()).isEqualTo("$.orderId");
                    assertThat(e.expected()).startsWith("each name once per object");
                });
        assertThatThrownBy(() -> handler(Map.of()).handle(
                TestMessage.of("m-1", "{\"orderId\":\"o-1\",\"total\":12.50}"), TestContext.plain()))
                .isInstanceOfSatisfying(PayloadException.class, e -> {
                    assertThat(e.path()).isEqualTo("$.total");
                    assertThat(e.expected()).isEqualTo("a string, found a decimal number");
                });
    }

    @Test
    void aMissingOrInvalidTotalIsNotRetried() {
        assertThatThrownBy(() -> handler(Map.of()).handle(
                TestMessage.of("m-1", "{\"orderId\":\"o-17\"}"), TestContext.plain()))
                .isInstanceOf(NonRetryableException.class)
                .hasMessage("Malformed order event: \"total\" is missing or blank");
        assertThatThrownBy(() -> handler(Map.of()).handle(
                TestMessage.of("m-1", "{\"orderId\":\"o-17\",\"total\":\"-1\"}"), TestContext.plain()))
                .isInstanceOf(NonRetryableException.class)
                .hasMessage("Malformed order event: \"total\" is \"-1\", must be a positive decimal such as \"12.50\"");
    }

    @Test
    void anEmptyObjectLacksTheOrderId() {
        assertThatThrownBy(() -> handler(Map.of()).handle(TestMessage.of("m-1", " {  } "), TestContext.plain()))
                .isInstanceOf(NonRetryableException.class)
                .hasMessage("Malformed order event: \"orderId\" is missing or blank");
    }
}
