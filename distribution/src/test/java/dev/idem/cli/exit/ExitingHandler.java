package dev.idem.cli.exit;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The handler of {@code HandlerExitIT}, packed by the test into a JAR in {@code handlers/}: it calls
 * {@code System.exit(0)} where {@value #EXIT_IN_ENV} says ({@code constructor} or {@code handle}); otherwise it
 * appends each message's ID to the file {@value #RECORD_ENV} names.
 */
public final class ExitingHandler implements MessageHandler {

    /** {@code constructor}, {@code handle}, or unset. */
    public static final String EXIT_IN_ENV = "IDEM_TEST_EXIT_IN";
    /** The file each handled message's ID is appended to, when the handler does not exit. */
    public static final String RECORD_ENV = "IDEM_TEST_RECORD";

    private final String exitIn = String.valueOf(System.getenv(EXIT_IN_ENV));

    public ExitingHandler() {
        if (exitIn.equals("constructor")) {
            System.exit(0);
        }
    }

    @Override
    public void handle(Message message, HandlerContext context) {
        if (exitIn.equals("handle")) {
            System.exit(0);
        }
        try {
            Files.writeString(Path.of(System.getenv(RECORD_ENV)), message.idempotencyKey().orElse("(none)") + "\n",
                    StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
