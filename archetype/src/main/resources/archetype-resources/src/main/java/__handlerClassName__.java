package ${package};

import dev.idem.api.HandlerContext;
import dev.idem.api.HandlerLifecycle;
import dev.idem.api.HandlerSettings;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Handles "order placed" events such as {@code {"orderId":"o-17","total":"12.50"}}: logs the order and, when the
 * pipeline's {@code handler-settings} name a {@code confirmations} destination, emits a confirmation there.
 *
 * <p>Bound to a pipeline in {@code conf/idem.yaml}: {@code handler: ${package}.${handlerClassName}}.
 * The runtime creates one instance per pipeline and calls {@link #handle} from up to {@code concurrency} threads at
 * once; the only state is what {@link #init} sets before the first message, so the class is thread-safe. Returning
 * means done (the key completes, then the message is acknowledged); an exception means retry with back-off, then
 * dead-letter; a {@link NonRetryableException} dead-letters at once.
 */
public final class ${handlerClassName} implements MessageHandler, HandlerLifecycle {

    /** One member of a flat JSON object of strings without escapes, then the ',' or '}' after it. */
    private static final Pattern MEMBER = Pattern.compile("\\s*\"([^\"\\\\]*)\"\\s*:\\s*\"([^\"\\\\]*)\"\\s*([,}])");

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
    public void handle(Message message, HandlerContext context) throws Exception {
        Map<String, String> event = parse(message.payloadAsString());
        String orderId = require(event, "orderId");
        BigDecimal total = amount(event, "total");
        context.logger().log(System.Logger.Level.INFO, "Order {0} placed, total {1} (key {2}, attempt {3})",
                orderId, total.toPlainString(), message.idempotencyKey().orElse("none"), message.attempt());

        // The effect goes here. In a transactional pipeline (store.type: jdbc, transactional: true), write through
        // the store's transaction so that it commits or rolls back with the message's claim:
        //   Connection db = context.transaction(Connection.class).orElseThrow();
        // Any other effect (a file, an HTTP call) may run twice after a crash: see dev.idem.api.guard.

        if (confirmations != null) {
            // Leaves after handle returns, with an ID derived from this message's key: a re-run repeats the ID.
            String confirmation = "{\"orderId\":\"" + orderId + "\",\"status\":\"confirmed\"}";
            context.send(confirmations, orderId, confirmation.getBytes(StandardCharsets.UTF_8), Map.of());
        }
    }

    /**
     * Reads a flat JSON object whose values are strings, just enough for this event without a JSON library. Use
     * one (bundled into the JAR) when payloads get richer.
     *
     * @throws NonRetryableException when the payload is anything else: running again cannot fix it
     */
    static Map<String, String> parse(String payload) {
        String text = payload.strip();
        Map<String, String> members = new LinkedHashMap<>();
        if (text.startsWith("{") && text.substring(1).strip().equals("}")) {
            return members;
        }
        Matcher member = MEMBER.matcher(text);
        int position = 1;
        while (true) {
            if (!text.startsWith("{") || !member.region(position, text.length()).lookingAt()) {
                throw malformed("expected a flat JSON object of string values at character " + position, payload);
            }
            if (members.putIfAbsent(member.group(1), member.group(2)) != null) {
                throw malformed("duplicate member \"" + member.group(1) + "\"", payload);
            }
            position = member.end();
            if (member.group(3).equals("}")) {
                break;
            }
        }
        if (position != text.length()) {
            throw malformed("unexpected text after the object at character " + position, payload);
        }
        return members;
    }

    private static String require(Map<String, String> event, String name) {
        String value = event.get(name);
        if (value == null || value.isBlank()) {
            throw new NonRetryableException("Malformed order event: \"" + name + "\" is missing or blank");
        }
        return value;
    }

    private static BigDecimal amount(Map<String, String> event, String name) {
        String value = require(event, name);
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

    private static NonRetryableException malformed(String problem, String payload) {
        String shown = payload.length() > 80 ? payload.substring(0, 80) + "..." : payload;
        return new NonRetryableException("Malformed order event: " + problem + ", in: " + shown);
    }
}
