package dev.idem.cli.typed;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.TypedHandler;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Base64;

/**
 * The handler of {@code TypedPayloadsIT}, packed by the test into a JAR in {@code handlers/} (with {@link Order}) and
 * loaded by {@code bin/idem run}; it compiles against {@code idem-api} and the JDK alone. Every run appends one line
 * to the file {@value #RUNS_ENV} names, under one lock for all its instances (one per pipeline):
 * {@code pipeline, message-id, attempt, orderId, total (plain), customer} separated by tabs, the text fields as
 * Base64 of their UTF-8 ({@code -} for {@code null}), so that any text, tabs and newlines included, is recorded exactly.
 * Thread-safe.
 */
public final class OrderRecordingHandler implements TypedHandler<Order> {

    /** The file every run appends its line to. */
    public static final String RUNS_ENV = "IDEM_TYPED_RUNS";

    private static final Object LOCK = new Object();

    private final Path runs;

    public OrderRecordingHandler() {
        String file = System.getenv(RUNS_ENV);
        if (file == null || file.isBlank()) {
            throw new IllegalStateException(OrderRecordingHandler.class.getName() + " needs the environment variable "
                    + RUNS_ENV);
        }
        runs = Path.of(file);
    }

    @Override
    public void handle(Order order, Message message, HandlerContext context) {
        String line = context.pipeline() + '\t' + message.header("message-id").orElse("-") + '\t' + message.attempt()
                + '\t' + encode(order.orderId()) + '\t' + (order.total() == null ? "-" : order.total().toPlainString())
                + '\t' + encode(order.customer()) + '\n';
        synchronized (LOCK) {
            try {
                Files.write(runs, line.getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND, StandardOpenOption.WRITE);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** Base64 of the UTF-8 of {@code text}, or {@code -} for {@code null}. */
    public static String encode(String text) {
        return text == null ? "-" : Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    /** The text {@link #encode} wrote. */
    public static String decode(String field) {
        return field.equals("-") ? null : new String(Base64.getDecoder().decode(field), StandardCharsets.UTF_8);
    }
}
