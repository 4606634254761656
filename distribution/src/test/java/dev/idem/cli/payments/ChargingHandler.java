package dev.idem.cli.payments;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The handler of {@code DurableStepsIT}, packed by the test into a JAR in {@code handlers/} and loaded by
 * {@code bin/idem run}; it compiles against {@code idem-api} and the JDK alone. Each run charges the message's order
 * once through the payment service at {@value #URL_ENV} ({@code POST /charges}, the order's ID as the body), in one of
 * three ways ({@value #MODE_ENV}):
 * <ul>
 *   <li>{@code plain}: the call itself, as a handler without durable steps or keys would make it;</li>
 *   <li>{@code step}: the call in a durable step ({@code context.step}), whose result a later run replays;</li>
 *   <li>{@code step-key}: the call in a durable step, with the key the runtime derives for it
 *       ({@code context.idempotencyKey("charge")}) as its {@code Idempotency-Key} header.</li>
 * </ul>
 * Thread-safe: the HTTP client is.
 */
public final class ChargingHandler implements MessageHandler {

    /** The payment service's base URL. */
    public static final String URL_ENV = "IDEM_PAYMENTS_URL";
    /** {@code plain}, {@code step} or {@code step-key}. */
    public static final String MODE_ENV = "IDEM_PAYMENTS_MODE";

    private final URI charges;
    private final String mode;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    public ChargingHandler() {
        String url = System.getenv(URL_ENV);
        String configured = System.getenv(MODE_ENV);
        if (url == null || configured == null) {
            throw new IllegalStateException(ChargingHandler.class.getName() + " needs " + URL_ENV + " and " + MODE_ENV);
        }
        charges = URI.create(url + "/charges");
        mode = configured.trim();
        if (!mode.equals("plain") && !mode.equals("step") && !mode.equals("step-key")) {
            throw new IllegalStateException(MODE_ENV + " must be plain, step or step-key, not " + mode);
        }
    }

    @Override
    public void handle(Message message, HandlerContext context) throws Exception {
        String order = message.idempotencyKey()
                .orElseThrow(() -> new NonRetryableException("ChargingHandler needs an idempotency key"));
        switch (mode) {
            case "plain" -> charge(order, null);
            case "step" -> context.step("charge", String.class, () -> charge(order, null));
            default -> context.step("charge", String.class, () -> charge(order, context.idempotencyKey("charge")));
        }
    }

    /** Charges {@code order}; answers the charge's ID. A failed call throws, and the run is retried. */
    private String charge(String order, String idempotencyKey) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(charges).timeout(Duration.ofSeconds(10))
                .POST(HttpRequest.BodyPublishers.ofString(order, StandardCharsets.UTF_8));
        if (idempotencyKey != null) {
            request.header("Idempotency-Key", idempotencyKey);
        }
        HttpResponse<String> response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() / 100 != 2) {
            throw new IOException("The payment service answered " + response.statusCode() + ": " + response.body());
        }
        return response.body();
    }
}
