package dev.idem.cli.console;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The handler of {@code ConsoleBrowserIT}'s key case, packed by the test into a JAR in {@code handlers/} and loaded by
 * {@code bin/idem run}: it compiles against {@code idem-api} and the JDK alone. A message whose idempotency key starts
 * with {@code stuck} is held, its claim with it, while the file {@value #HOLD_ENV} names exists (until the pipeline's
 * handler timeout interrupts it); before holding it appends its key and a newline to the file {@value #HOLDING_ENV}
 * names, in one unbuffered write, so that a test can wait for the claim. Every other message completes at once.
 * Thread-safe.
 */
public final class HoldingHandler implements MessageHandler {

    /** The file whose existence holds the {@code stuck*} messages. */
    public static final String HOLD_ENV = "IDEM_TEST_HOLD_WHILE";
    /** The file the key of each held message is appended to when its hold begins. */
    public static final String HOLDING_ENV = "IDEM_TEST_HOLDING";

    private final Path hold = Path.of(required(HOLD_ENV));
    private final FileOutputStream holding;

    public HoldingHandler() {
        try {
            holding = new FileOutputStream(required(HOLDING_ENV), true);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open " + System.getenv(HOLDING_ENV), e);
        }
    }

    private static String required(String name) {
        String value = System.getenv(name);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException(HoldingHandler.class.getName() + " needs the environment variable " + name);
        }
        return value;
    }

    @Override
    public void handle(Message message, HandlerContext context) throws InterruptedException {
        String key = message.idempotencyKey().orElse("");
        if (!key.startsWith("stuck")) {
            return;
        }
        synchronized (holding) {
            try {
                holding.write((key + "\n").getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        while (Files.exists(hold)) {
            Thread.sleep(50);
        }
    }
}
