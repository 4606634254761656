package dev.idem.store.jdbc;

import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;

/**
 * A key's row as the database answered a claim or a lock: what the caller needs to tell whether it
 * now owns the key.
 *
 * @param leaseLeftMicros time until the lease ends by the database's clock; {@code null} once completed
 * @param live whether the row is still remembered (its {@code expires_at} is ahead)
 */
record StoredRow(long token, int attempts, int state, byte[] fingerprint, Long leaseLeftMicros, boolean live) {

    private static final Duplicate MATCHES = new Duplicate(true);
    private static final Duplicate DIFFERS = new Duplicate(false);

    /** Reads the columns of {@link Dialect#storedColumns()} starting at {@code first}. */
    static StoredRow read(ResultSet rs, int first) throws SQLException {
        long token = rs.getLong(first);
        int attempts = rs.getInt(first + 1);
        int state = rs.getInt(first + 2);
        byte[] fingerprint = rs.getBytes(first + 3);
        long left = rs.getLong(first + 4);
        Long leaseLeft = rs.wasNull() ? null : left;
        boolean live = rs.getBoolean(first + 5);
        return new StoredRow(token, attempts, state, fingerprint, leaseLeft, live);
    }

    /**
     * What this row means for the request that wrote {@code row}, or {@code null} when it cannot tell
     * and the claim must be tried again: the write did not take the key, yet the row is gone, forgotten
     * or its lease over, so another writer moved in between the write and this answer.
     */
    static ClaimResult resultFor(ClaimRow row, StoredRow stored) {
        if (stored == null) {
            return null;
        }
        if (stored.token == row.token()) {
            return new Acquired(row.token(), stored.attempts);
        }
        if (!stored.live) {
            return null;
        }
        if (stored.state == Dialect.COMPLETED) {
            return stored.duplicateOf(row.fingerprint());
        }
        if (stored.leaseLeftMicros != null && stored.leaseLeftMicros <= 0) {
            // Seen before another claim took it over, or its lease ended right after the write: either
            // way the next try settles it, rather than sending the caller back at once.
            return null;
        }
        return new InProgress(stored.retryAfter(row.leaseMicros()));
    }

    /** The duplicate answer for a request with {@code requested} fingerprint; either absent matches. */
    Duplicate duplicateOf(byte[] requested) {
        return fingerprint == null || requested == null || Arrays.equals(fingerprint, requested) ? MATCHES : DIFFERS;
    }

    /**
     * When the owner's lease ends: at least a microsecond, and at most the asker's own lease. A
     * statement's clock is read when it starts, so one that waited for a concurrent claim's lock sees
     * that claim's lease end slightly more than a lease ahead.
     */
    Duration retryAfter(Long askedLeaseMicros) {
        long micros = leaseLeftMicros == null ? 1 : Math.max(1, leaseLeftMicros);
        if (askedLeaseMicros != null) {
            micros = Math.min(micros, askedLeaseMicros);
        }
        return Duration.ofNanos(Math.multiplyExact(micros, 1000L));
    }
}
