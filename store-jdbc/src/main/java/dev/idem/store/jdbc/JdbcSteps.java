package dev.idem.store.jdbc;

import dev.idem.spi.StepStore;
import dev.idem.spi.StoreKey;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.jdbi.v3.core.Handle;

/**
 * The durable steps of a {@link JdbcDedupStore} ({@link StepStore}), on its {@link StepTable}.
 *
 * <ul>
 * <li>{@link #read}: one statement, the keys row joined with its live steps, fenced by the token; it locks nothing.</li>
 * <li>{@link #record}, plain mode: one transaction that locks the keys row ({@code SELECT ... FOR UPDATE}), checks the
 *     token there, and writes the step with its {@code expires_at} taken from that row in the same statement. A
 *     takeover (an update of that row) waits for it or comes before it: a record and a takeover never interleave.</li>
 * <li>{@link #record} while a transactional run of this store holds the key's row ({@link #enter}): that row lock
 *     already fences takeovers out, and waiting for it would wait for our own transaction. So the row is read
 *     without a lock (its committed version: the pipeline's claim), and the step is written on a connection of its
 *     own, outside the run's transaction, as the SPI asks: the effect a step records does not roll back.</li>
 * </ul>
 * Thread-safe: each call takes its own connection; the set of keys in transactional runs is concurrent.
 */
final class JdbcSteps {

    private final JdbcCalls calls;
    private final StepTable table;
    private final Failures failures;
    /** Keys whose transactional run holds their row in this store now, with how many runs do (1 but for a race). */
    private final Map<StoreKey, Integer> inTransaction = new ConcurrentHashMap<>();

    JdbcSteps(JdbcCalls calls, StepTable table, Failures failures) {
        this.calls = calls;
        this.table = table;
        this.failures = failures;
    }

    StepTable table() {
        return table;
    }

    /**
     * A transactional run is about to lock {@code key}'s row; its steps are recorded without that lock until
     * {@link #leave}.
     */
    void enter(StoreKey key) {
        inTransaction.merge(key, 1, Integer::sum);
    }

    /** The transactional run that {@link #enter}ed {@code key} ended. */
    void leave(StoreKey key) {
        inTransaction.computeIfPresent(key, (k, runs) -> runs == 1 ? null : runs - 1);
    }

    Optional<Map<String, byte[]>> read(StoreKey key, long token) {
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        return calls.call("reading steps", handle -> {
            Map<String, byte[]> steps = new HashMap<>();
            boolean[] owner = new boolean[1];
            handle.createQuery(table.read()).bind(0, namespace).bind(1, id).bind(2, token)
                    .map((rs, ctx) -> {
                        owner[0] = true;
                        byte[] name = rs.getBytes(1);
                        if (name != null) {
                            steps.put(new String(name, StandardCharsets.UTF_8), rs.getBytes(2));
                        }
                        return name;
                    })
                    .forEach(name -> { });
            return owner[0] ? Optional.of(steps) : Optional.empty();
        });
    }

    boolean record(StoreKey key, long token, String name, byte[] value) {
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        byte[] stepName = ClaimRow.utf8(name, "step name");
        if (inTransaction.containsKey(key)) {
            return calls.call("recording a step", handle -> recordBeside(handle, namespace, id, token, stepName, value));
        }
        return calls.call("recording a step", handle -> {
            for (int run = 1; ; run++) {
                try {
                    return handle.inTransaction(tx -> recordLocked(tx, namespace, id, token, stepName, value));
                } catch (RuntimeException e) {
                    if (run >= JdbcCalls.MAX_CONFLICT_RUNS || !failures.isConflict(e)) {
                        throw e;
                    }
                    JdbcCalls.backOff(run);
                }
            }
        });
    }

    /** The key's claim as {@link StepTable#readClaim} reads it; {@code null} when the key has no row. */
    private record Claim(long token, int state, boolean live, long keepMicros) {

        boolean ownedBy(long owner) {
            return token == owner && state == Dialect.CLAIMED && live;
        }
    }

    private Claim claim(Handle handle, String sql, byte[] namespace, byte[] id) {
        return handle.createQuery(sql).bind(0, namespace).bind(1, id)
                .map((rs, ctx) -> new Claim(rs.getLong(1), rs.getInt(2), rs.getBoolean(3), rs.getLong(4)))
                .findOne().orElse(null);
    }

    private boolean recordLocked(Handle tx, byte[] namespace, byte[] id, long token, byte[] name, byte[] value) {
        Claim claim = claim(tx, table.lockClaim(), namespace, id);
        if (claim == null || !claim.ownedBy(token)) {
            return false;
        }
        int updated = tx.createUpdate(table.updateFromClaim())
                .bind(0, value).bind(1, namespace).bind(2, id).bind(3, namespace).bind(4, id).bind(5, name)
                .execute();
        if (updated == 0) {
            tx.createUpdate(table.insertFromClaim())
                    .bind(0, namespace).bind(1, id).bind(2, name).bind(3, value).bind(4, namespace).bind(5, id)
                    .execute();
        }
        return true;
    }

    private boolean recordBeside(Handle handle, byte[] namespace, byte[] id, long token, byte[] name, byte[] value) {
        Claim claim = claim(handle, table.readClaim(), namespace, id);
        if (claim == null || !claim.ownedBy(token)) {
            return false;
        }
        long keep = Math.max(1, claim.keepMicros());
        int updated = handle.createUpdate(table.update())
                .bind(0, value).bind(1, keep).bind(2, namespace).bind(3, id).bind(4, name)
                .execute();
        if (updated == 0) {
            handle.createUpdate(table.insert())
                    .bind(0, namespace).bind(1, id).bind(2, name).bind(3, value).bind(4, keep)
                    .execute();
        }
        return true;
    }
}
