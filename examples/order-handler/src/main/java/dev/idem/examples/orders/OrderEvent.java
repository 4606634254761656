package dev.idem.examples.orders;

import dev.idem.api.NonRetryableException;
import java.math.BigDecimal;
import java.util.regex.Pattern;

/**
 * One order event as both handlers take it: {@code {"orderId":"o-17","event":"paid","amount":"12.50"}}. The runtime
 * decodes the payload into this record before the handler runs ({@code TypedHandler<OrderEvent>}): a payload that is
 * not JSON, holds a member twice, or has a member of another JSON type (a number for {@code amount}) never reaches
 * the handler; it is dead-lettered as {@code invalid-payload}, naming the path and the position. Members other than
 * the three are ignored, so producers may add fields; a member left out is {@code null} here.
 *
 * <p>{@link #validate} checks what JSON cannot say, and the handlers call it first: a value that does not fit throws
 * {@link NonRetryableException}, because running the handler again cannot repair it; the runtime dead-letters the
 * message at once instead of retrying.
 *
 * @param orderId the order, 1 to 64 of {@code A-Z a-z 0-9 . _ : -}
 * @param event   what happened; this example handles {@value #PAID} only
 * @param amount  the amount paid, positive, at most two decimals, kept as written ({@code "12.50"})
 */
public record OrderEvent(String orderId, String event, String amount) {

    static final String PAID = "paid";

    static final String EXAMPLE = "{\"orderId\":\"o-17\",\"event\":\"paid\",\"amount\":\"12.50\"}";

    private static final Pattern ORDER_ID = Pattern.compile("[A-Za-z0-9._:-]{1,64}");
    private static final Pattern AMOUNT = Pattern.compile("(0|[1-9][0-9]{0,16})(\\.[0-9]{1,2})?");

    /** The amount as a number, for the database. */
    BigDecimal amountValue() {
        return new BigDecimal(amount);
    }

    /**
     * Checks the members' values.
     *
     * @return this event
     * @throws NonRetryableException naming the problem and showing the expected shape
     */
    public OrderEvent validate() {
        required(orderId, "orderId");
        required(event, "event");
        required(amount, "amount");
        if (!ORDER_ID.matcher(orderId).matches()) {
            throw malformed("orderId \"" + orderId + "\" must be 1 to 64 of A-Z a-z 0-9 . _ : -");
        }
        if (!PAID.equals(event)) {
            throw malformed("event \"" + event + "\" is not handled; this handler takes \"" + PAID + "\" only"
                    + " (route other events to another pipeline)");
        }
        if (!AMOUNT.matcher(amount).matches() || new BigDecimal(amount).signum() <= 0) {
            throw malformed("amount \"" + amount + "\" must be a positive decimal with at most two decimals,"
                    + " such as \"12.50\"");
        }
        return this;
    }

    private static void required(String value, String name) {
        if (value == null) {
            throw malformed("missing member \"" + name + "\"");
        }
    }

    private static NonRetryableException malformed(String problem) {
        return new NonRetryableException("Malformed order event: " + problem + ". Expected a payload such as "
                + EXAMPLE);
    }
}
