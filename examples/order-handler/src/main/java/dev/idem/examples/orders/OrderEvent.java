package dev.idem.examples.orders;

import dev.idem.api.NonRetryableException;
import java.math.BigDecimal;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * One order event as both handlers read it: {@code {"orderId":"o-17","event":"paid","amount":"12.50"}}.
 *
 * <p>{@link #parse} is strict: a payload that does not fit throws {@link NonRetryableException}, because
 * running the handler again cannot repair it; the runtime dead-letters it at once instead of retrying.
 * Members other than the three are ignored, so producers may add fields; they must be strings too.
 *
 * @param orderId the order, 1 to 64 of {@code A-Z a-z 0-9 . _ : -}
 * @param event   what happened; this example handles {@value #PAID} only
 * @param amount  the amount paid, positive, at most two decimals, kept as written ({@code "12.50"})
 */
record OrderEvent(String orderId, String event, String amount) {

    static final String PAID = "paid";

    static final String EXAMPLE = "{\"orderId\":\"o-17\",\"event\":\"paid\",\"amount\":\"12.50\"}";

    private static final Pattern ORDER_ID = Pattern.compile("[A-Za-z0-9._:-]{1,64}");
    private static final Pattern AMOUNT = Pattern.compile("(0|[1-9][0-9]{0,16})(\\.[0-9]{1,2})?");

    /** The amount as a number, for the database. */
    BigDecimal amountValue() {
        return new BigDecimal(amount);
    }

    /**
     * Reads an event from a payload.
     *
     * @throws NonRetryableException naming the problem and showing the expected shape
     */
    static OrderEvent parse(String payload) {
        Map<String, String> members;
        try {
            members = FlatJson.parseObject(payload);
        } catch (IllegalArgumentException e) {
            throw malformed(e.getMessage(), e);
        }
        String orderId = required(members, "orderId");
        String event = required(members, "event");
        String amount = required(members, "amount");
        if (!ORDER_ID.matcher(orderId).matches()) {
            throw malformed("orderId \"" + orderId + "\" must be 1 to 64 of A-Z a-z 0-9 . _ : -", null);
        }
        if (!PAID.equals(event)) {
            throw malformed("event \"" + event + "\" is not handled; this handler takes \"" + PAID + "\" only"
                    + " (route other events to another pipeline)", null);
        }
        if (!AMOUNT.matcher(amount).matches() || new BigDecimal(amount).signum() <= 0) {
            throw malformed("amount \"" + amount + "\" must be a positive decimal with at most two decimals,"
                    + " such as \"12.50\"", null);
        }
        return new OrderEvent(orderId, event, amount);
    }

    private static String required(Map<String, String> members, String name) {
        String value = members.get(name);
        if (value == null) {
            throw malformed("missing member \"" + name + "\"", null);
        }
        return value;
    }

    private static NonRetryableException malformed(String problem, Throwable cause) {
        return new NonRetryableException("Malformed order event: " + problem + ". Expected a payload such as "
                + EXAMPLE, cause);
    }
}
