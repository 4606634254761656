package dev.idem.cli.dlq;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/**
 * The handler of {@code DlqReplayIT}'s case on RocketMQ, packed by the test into a JAR in {@code handlers/} and loaded
 * by {@code bin/idem run}: it compiles against {@code idem-api} and the JDK alone. While the file {@value #BROKEN_ENV}
 * names exists, it fails every message with a {@link NonRetryableException} ("broken until fixed"), as a handler with a
 * bug does; once the file is gone (the bug fixed), it appends one line per message to the file {@value #PROCESSED_ENV}:
 * its {@code message-id} header, key, payload and headers ({@code name=value}), separated by tabs, in one unbuffered
 * write. Thread-safe.
 */
public final class ReplayHandler implements MessageHandler {

    /** The file whose existence means "broken". */
    public static final String BROKEN_ENV = "IDEM_REPLAY_BROKEN";
    /** The file the processed messages are appended to. */
    public static final String PROCESSED_ENV = "IDEM_REPLAY_PROCESSED";

    private final Path broken = Path.of(required(BROKEN_ENV));
    private final FileOutputStream processed;

    public ReplayHandler() {
        try {
            processed = new FileOutputStream(required(PROCESSED_ENV), true);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot open " + System.getenv(PROCESSED_ENV), e);
        }
    }

    private static String required(String name) {
        String value = System.getenv(name);
        if (value == null || value.isBlank()) {
            throw new IllegalStateException(ReplayHandler.class.getName() + " needs the environment variable " + name);
        }
        return value;
    }

    @Override
    public void handle(Message message, HandlerContext context) {
        if (Files.exists(broken)) {
            throw new NonRetryableException("broken until fixed");
        }
        StringBuilder line = new StringBuilder().append(message.headers().get("message-id")).append('\t')
                .append(message.key()).append('\t').append(message.payloadAsString());
        for (Map.Entry<String, String> h : new TreeMap<>(message.headers()).entrySet()) {
            line.append('\t').append(h.getKey()).append('=').append(h.getValue());
        }
        line.append('\n');
        synchronized (processed) {
            try {
                processed.write(line.toString().getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
