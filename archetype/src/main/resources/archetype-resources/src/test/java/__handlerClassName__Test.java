package ${package};

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.api.HandlerSettings;
import dev.idem.api.NonRetryableException;
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
        TestContext context = new TestContext();

        handler(Map.of("confirmations", "orders.confirmed"))
                .handle(TestMessage.of("m-1", "{\"orderId\":\"o-17\",\"total\":\"12.50\"}"), context);

        assertThat(context.sent).containsExactly(new TestContext.Sent(
                "orders.confirmed", "o-17", "{\"orderId\":\"o-17\",\"status\":\"confirmed\"}", Map.of()));
    }

    @Test
    void withoutTheConfirmationsSettingNothingIsEmitted() throws Exception {
        TestContext context = new TestContext();

        handler(Map.of()).handle(TestMessage.of("m-1", " { \"orderId\" : \"o-17\", \"total\" : \"3\" } "), context);

        assertThat(context.sent).isEmpty();
    }

    @Test
    void aPayloadThatIsNotAFlatObjectIsNotRetried() {
        assertThatThrownBy(() -> handler(Map.of()).handle(TestMessage.of("m-1", "orderId=o-17"), new TestContext()))
                .isInstanceOf(NonRetryableException.class)
                .hasMessage("Malformed order event: expected a flat JSON object of string values at character 1,"
                        + " in: orderId=o-17");
        assertThatThrownBy(() -> ${handlerClassName}.parse("{\"orderId\":\"o-1\"} trailing"))
                .isInstanceOf(NonRetryableException.class)
                .hasMessageContaining("unexpected text after the object at character 17");
        assertThatThrownBy(() -> ${handlerClassName}.parse("{\"a\":\"1\",\"a\":\"2\"}"))
                .hasMessageContaining("duplicate member \"a\"");
    }

    @Test
    void aMissingOrInvalidTotalIsNotRetried() {
        assertThatThrownBy(() -> handler(Map.of()).handle(
                TestMessage.of("m-1", "{\"orderId\":\"o-17\"}"), new TestContext()))
                .isInstanceOf(NonRetryableException.class)
                .hasMessage("Malformed order event: \"total\" is missing or blank");
        assertThatThrownBy(() -> handler(Map.of()).handle(
                TestMessage.of("m-1", "{\"orderId\":\"o-17\",\"total\":\"-1\"}"), new TestContext()))
                .isInstanceOf(NonRetryableException.class)
                .hasMessage("Malformed order event: \"total\" is \"-1\", must be a positive decimal such as \"12.50\"");
    }

    @Test
    void anEmptyObjectParsesToNoMembers() {
        assertThat(${handlerClassName}.parse(" {  } ")).isEmpty();
    }
}
