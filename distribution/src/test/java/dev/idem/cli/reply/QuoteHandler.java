package dev.idem.cli.reply;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;
import java.util.UUID;

/**
 * The handler of {@code RequestReplyIT}, packed by the test into a JAR in {@code handlers/}; it compiles against
 * {@code idem-api} and the JDK alone. Each run of a request inserts one row {@code (message_id, pid)} into the table
 * {@value #TABLE_ENV} names through the store's transaction (the effect, committed with the key or not at all) and
 * replies {@code <id> <a random UUID>}: a value of that run only, so a second run of one request would answer with
 * another reply than the first.
 */
public final class QuoteHandler implements MessageHandler {

    /** The business table ({@code message_id VARCHAR, pid BIGINT}). */
    public static final String TABLE_ENV = "IDEM_REPLY_TABLE";

    private final String table = System.getenv(TABLE_ENV);
    private final long pid = ProcessHandle.current().pid();

    @Override
    public void handle(Message message, HandlerContext context) throws SQLException {
        String id = message.idempotencyKey().orElseThrow();
        Connection connection = context.transaction(Connection.class).orElseThrow(() -> new IllegalStateException(
                "pipeline '" + context.pipeline() + "' must be transactional"));
        try (PreparedStatement insert = connection.prepareStatement(
                "INSERT INTO " + table + " (message_id, pid) VALUES (?, ?)")) {
            insert.setString(1, id);
            insert.setLong(2, pid);
            insert.executeUpdate();
        }
        context.reply((id + " " + UUID.randomUUID()).getBytes(StandardCharsets.UTF_8), Map.of("quoted-by", "" + pid));
    }
}
