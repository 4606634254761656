package dev.idem.store.jdbc;

import dev.idem.spi.OutboundMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.OutboxStore.Backlog;
import dev.idem.spi.OutboxStore.Emitted;
import dev.idem.spi.OutboxStore.Publisher;
import dev.idem.spi.StoreException;
import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import java.lang.reflect.UndeclaredThrowableException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.statement.PreparedBatch;

/**
 * The JDBC store's outbox ({@link OutboxStore}) on its {@link OutboxTable}.
 *
 * <p>{@code append} is one JDBC batch of inserts on the handler's transaction's connection (in chunks of
 * {@value OutboxTable#MAX_ROWS_PER_BATCH} rows), which it neither commits nor rolls back. {@code relay} is one
 * transaction on a connection of the store's pool: it locks the oldest rows no other transaction holds
 * ({@link OutboxTable#lockOldest}), publishes them in id order while holding them, deletes those published (a
 * JDBC batch of deletes by id, {@link OutboxTable#delete}; never a range, which would reach rows other relays
 * hold) and commits.
 * So a relay holds a pooled connection, and its rows' locks, for as long as its publishes take. A relay that
 * crashes or loses its connection leaves its rows unlocked and undeleted, to be published again.
 *
 * <p>Times: {@code created_at} is written and read on the database's clock; what a caller sees is the age of a
 * row by that clock, subtracted from this host's clock when the answer arrives (as {@code inspect} does for
 * keys), so neither session time zones nor a skew between the clocks shows.
 *
 * <p>Thread-safe: each call takes its own connection.
 */
final class JdbcOutbox {

    private final JdbcCalls calls;
    private final OutboxTable table;
    private final Failures failures;

    /** {@link OutboxTable#lockOldest} for the server, read from its metadata on the first relay. */
    private volatile String lockOldest;

    JdbcOutbox(JdbcCalls calls, OutboxTable table, Failures failures) {
        this.calls = calls;
        this.table = table;
        this.failures = failures;
    }

    // ------------------------------------------------------------------ append

    /**
     * @throws IllegalArgumentException when the transaction offers no {@link Connection}, or a text field of a
     *         message holds NUL or an unpaired surrogate, which not every database stores as written
     */
    void append(StoreTransaction transaction, String namespace, List<Emitted> messages) {
        Objects.requireNonNull(transaction, "transaction");
        checkText(Objects.requireNonNull(namespace, "namespace"), "namespace");
        Objects.requireNonNull(messages, "messages");
        if (messages.isEmpty()) {
            return;
        }
        List<String> headers = new ArrayList<>(messages.size());
        for (Emitted emitted : messages) {
            OutboundMessage message = emitted.message();
            checkText(emitted.destination(), "destination");
            checkText(message.messageId(), "message ID");
            checkText(message.key(), "message key");
            headers.add(HeaderCodec.encode(message.headers()));
        }
        Connection connection = transaction.unwrap(Connection.class);
        if (connection == null) {
            throw new IllegalArgumentException("The transaction " + transaction + " offers no java.sql.Connection: pass "
                    + "the one the store's runOnce handed to the work");
        }
        String operation = "appending " + messages.size() + (messages.size() == 1 ? " message" : " messages")
                + " to outbox table " + table.name;
        try (PreparedStatement insert = connection.prepareStatement(table.insert())) {
            for (int i = 0; i < messages.size(); i++) {
                Emitted emitted = messages.get(i);
                OutboundMessage message = emitted.message();
                insert.setString(1, namespace);
                insert.setString(2, emitted.destination());
                setText(insert, 3, message.messageId());
                setText(insert, 4, message.key());
                insert.setString(5, headers.get(i));
                insert.setBytes(6, message.payload());
                insert.addBatch();
                if ((i + 1) % OutboxTable.MAX_ROWS_PER_BATCH == 0 || i == messages.size() - 1) {
                    insert.executeBatch();
                }
            }
        } catch (SQLException | RuntimeException e) {
            throw failures.of(operation, e);
        }
    }

    private static void setText(PreparedStatement statement, int index, String value) throws SQLException {
        if (value == null) {
            statement.setNull(index, Types.VARCHAR);
        } else {
            statement.setString(index, value);
        }
    }

    /** Rejects what a text column would not give back as written: NUL (PostgreSQL) and unpaired surrogates. */
    private static void checkText(String value, String what) {
        if (value == null) {
            return;
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == 0) {
                throw new IllegalArgumentException("The " + what + " '" + value.replace('\0', '?')
                        + "' holds a NUL character at index " + i + ", which the outbox does not store");
            }
            if (Character.isHighSurrogate(c) && i + 1 < value.length() && Character.isLowSurrogate(value.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("The " + what + " holds an unpaired surrogate at index " + i
                        + ", which is not text the outbox can store as written");
            }
        }
    }

    // ------------------------------------------------------------------ relay

    /** One locked row as read, decoded only when its turn comes, so a row that cannot be decoded stops there. */
    private record Row(long id, String namespace, String destination, String messageId, String key, String headers,
            byte[] payload, Instant createdAt) {

        OutboxRecord record() {
            return new OutboxRecord(id, namespace, destination,
                    new OutboundMessage(messageId, key, HeaderCodec.decode(headers), payload), createdAt);
        }
    }

    int relay(int limit, Publisher publisher) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        Objects.requireNonNull(publisher, "publisher");
        String operation = "relaying the outbox (table " + table.name + ")";
        calls.checkNotClosed(operation);
        Handle handle = calls.open(operation);
        try {
            List<Row> rows = lock(handle, limit);
            int published = 0;
            Throwable failure = null;
            for (Row row : rows) {
                OutboxRecord record;
                try {
                    record = row.record();
                } catch (IllegalArgumentException e) {
                    failure = failures.of(operation, "row " + row.id() + " has headers that are not a JSON object of "
                            + "strings (" + e.getMessage() + "); correct or delete it, and the relay goes on", false);
                    break;
                }
                try {
                    publisher.publish(record);
                } catch (Throwable t) {
                    failure = t;
                    break;
                }
                published++;
            }
            deleteAndCommit(handle, rows.subList(0, published), failure);
            if (failure != null) {
                throw rethrow(failure);
            }
            return published;
        } finally {
            JdbcCalls.closeQuietly(handle);
        }
    }

    private List<Row> lock(Handle handle, int limit) {
        try {
            String sql = lockOldest;
            if (sql == null) {
                sql = table.lockOldest(table.skipsLockedRows(handle.getConnection().getMetaData()));
                lockOldest = sql;
            }
            handle.begin();
            return handle.createQuery(sql)
                    .bind(0, limit)
                    .map((rs, ctx) -> new Row(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4),
                            rs.getString(5), rs.getString(6), rs.getBytes(7),
                            ago(rs.getLong(8))))
                    .list();
        } catch (SQLException | RuntimeException e) {
            rollback(handle, e);
            throw failures.of("taking rows from outbox table " + table.name, e);
        }
    }

    /**
     * Deletes the published rows and commits, which also lets go of the rows not published. A failure is
     * thrown as a store failure, with {@code publishFailure}, the one that stopped the relay, added to it.
     */
    private void deleteAndCommit(Handle handle, List<Row> published, Throwable publishFailure) {
        try {
            if (!published.isEmpty()) {
                PreparedBatch delete = handle.prepareBatch(table.delete());
                for (Row row : published) {
                    delete.bind(0, row.id()).add();
                }
                delete.execute();
            }
            handle.commit();
        } catch (RuntimeException e) {
            rollback(handle, e);
            StoreException failure = failures.of("deleting " + published.size() + " published rows from outbox table "
                    + table.name + " (they stay, to be published again)", e);
            if (publishFailure != null) {
                failure.addSuppressed(publishFailure);
            }
            throw failure;
        }
    }

    private static RuntimeException rethrow(Throwable failure) {
        if (failure instanceof RuntimeException e) {
            throw e;
        }
        if (failure instanceof Error e) {
            throw e;
        }
        // A publisher cannot throw a checked exception but by cheating the compiler; it is passed on wrapped.
        throw new UndeclaredThrowableException(failure);
    }

    // ------------------------------------------------------------------ backlog

    Backlog backlog() {
        String operation = "counting the rows of outbox table " + table.name;
        return calls.call(operation, handle -> handle.createQuery(table.backlog())
                .map((rs, ctx) -> {
                    long rows = rs.getLong(1);
                    long age = rs.getLong(2);
                    return rows == 0 || rs.wasNull() ? Backlog.EMPTY : new Backlog(rows, ago(age));
                })
                .one());
    }

    // ------------------------------------------------------------------ plumbing

    /**
     * The instant {@code micros} before now on this host's clock. A row can look up to a few milliseconds younger
     * than zero (PostgreSQL's clock reads a transaction's start, and a row may be written by a transaction that
     * began after the reader's): that counts as now.
     */
    private static Instant ago(long micros) {
        return Instant.now().minus(Math.max(0, micros), ChronoUnit.MICROS);
    }

    private static void rollback(Handle handle, Throwable cause) {
        try {
            if (handle.isInTransaction()) {
                handle.rollback();
            }
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        }
    }
}
