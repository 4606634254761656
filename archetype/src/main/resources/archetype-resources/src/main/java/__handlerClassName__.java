package ${package};

import dev.idem.api.HandlerContext;
import dev.idem.api.HandlerLifecycle;
import dev.idem.api.HandlerSettings;
import dev.idem.api.Message;
import dev.idem.api.NonRetryableException;
import dev.idem.api.TypedHandler;
import java.math.BigDecimal;
import java.util.Map;

/**
 * Handles "order placed" events such as {@code {"orderId":"o-17","total":"12.50"}}: logs the order and, when the
 * pipeline's {@code handler-settings} name a {@code confirmations} destination, emits a confirmation there.
 *
 * <p>A typed handler: the runtime decodes each payload into {@link OrderPlaced} before the run, with its own Jackson
 * (no JSON library in this JAR, no annotations needed), and a payload that is not such JSON never reaches
 * {@link #handle}: it is dead-lettered as {@code invalid-payload}, naming the JSON path and the position. The
 * pipeline's {@code payload.format} may be left out: a typed handler implies {@code json}.
 *
 * <p>Bound to a pipeline in {@code conf/idem.yaml}: {@code handler: ${package}.${handlerClassName}}.
 * The runtime creates one instance per pipeline and calls {@link #handle} from up to {@code concurrency} threads at
 * once; the only state is what {@link #init} sets before the first message, so the class is thread-safe. Returning
 * means done (the key completes, then the message is acknowledged); an exception means retry with back-off, then
 * dead-letter; a {@link NonRetryableException} dead-letters at once.
 */
public final class ${handlerClassName} implements TypedHandler<${handlerClassName}.OrderPlaced>, HandlerLifecycle {

    /**
     * The event, as the runtime decodes it: a record binds by its components' names; a member the payload leaves out
     * is {@code null}, one it adds is ignored.
     *
     * @param orderId the order
     * @param total   the order's total, a positive decimal kept as written ({@code "12.50"})
     */
    public record OrderPlaced(String orderId, String total) {
    }

    /** What the handler emits: {@code context.send} writes it as JSON. */
    public record Confirmation(String orderId, String status) {
    }

    /** Where to emit confirmations, or null for none. Written by init before any handle, so not volatile. */
    private String confirmations;

    /** The runtime creates handlers through a public no-arg constructor; open connections in init, not here. */
    public ${handlerClassName}() {
    }

    @Override
    public void init(HandlerSettings settings) {
        confirmations = settings.get("confirmations").orElse(null);
    }

    @Override
    public void handle(OrderPlaced order, Message message, HandlerContext context) throws Exception {
        String orderId = require(order.orderId(), "orderId");
        BigDecimal total = amount(order.total(), "total");
        context.logger().log(System.Logger.Level.INFO, "Order {0} placed, total {1} (key {2}, attempt {3})",
                orderId, total.toPlainString(), message.idempotencyKey().orElse("none"), message.attempt());

        // The effect goes here. In a transactional pipeline (store.type: jdbc, transactional: true), write through
        // the store's transaction so that it commits or rolls back with the message's claim:
        //   Connection db = context.transaction(Connection.class).orElseThrow();
        // Any other effect (a file, an HTTP call) may run twice after a crash: see dev.idem.api.guard.

        if (confirmations != null) {
            // Leaves after handle returns, with an ID derived from this message's key: a re-run repeats the ID.
            context.send(confirmations, orderId, new Confirmation(orderId, "confirmed"), Map.of());
        }
    }

    private static String require(String value, String name) {
        if (value == null || value.isBlank()) {
            throw new NonRetryableException("Malformed order event: \"" + name + "\" is missing or blank");
        }
        return value;
    }

    private static BigDecimal amount(String value, String name) {
        require(value, name);
        try {
            BigDecimal amount = new BigDecimal(value);
            if (amount.signum() > 0) {
                return amount;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new NonRetryableException("Malformed order event: \"" + name + "\" is \"" + value
                + "\", must be a positive decimal such as \"12.50\"");
    }
}
