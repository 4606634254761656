package dev.idem.store.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.KeyFilter;
import dev.idem.spi.KeyPage;
import dev.idem.spi.ListedKey;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PurgeBatch;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import dev.idem.spi.TransactionalDedupStore;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.HandleCallback;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.PreparedBatch;
import org.jdbi.v3.core.statement.Query;

/**
 * A {@link TransactionalDedupStore} on one SQL table, through Jdbi over a HikariCP pool. See
 * {@link JdbcDedupStoreProvider} for configuration and {@link Dialect} for the table.
 *
 * <p>Every decision is made by the database, on its clock, atomically per row: a claim is an upsert
 * whose update applies only where a takeover is allowed, and fenced calls are single statements
 * conditioned on the token. A batch claim sends its distinct keys sorted (so concurrent batches lock
 * rows in one order) in statements of at most {@value Dialect#MAX_ROWS_PER_STATEMENT} keys; a key
 * repeated in the batch is sent once, and its repeats answer from the first request's result.
 * A batch completion is one statement per {@value Dialect#MAX_ROWS_PER_STATEMENT} keys (PostgreSQL, H2) or
 * one JDBC batch in one transaction (MariaDB, MySQL), answering per key as {@code complete} would; only keys
 * it left alone (a retry, a stale token) cost a read more, in a statement of its own.
 * {@code recordStart} is one conditional update of the row's {@code starts}, which answers the new count
 * itself where the database can (PostgreSQL {@code RETURNING}, H2 {@code FINAL TABLE}) and is read back in
 * the same transaction elsewhere (MariaDB, MySQL); it leaves the lease and the attempts alone.
 *
 * <p>As an {@link OutboxStore}: messages appended in a handler's transaction go to the table beside the keys'
 * ({@link OutboxTable}), and relays in every process take the oldest rows no other relay holds
 * ({@link JdbcOutbox}).
 *
 * <p>As a {@link SequencedDedupStore}: each aggregate's watermark is a row of the table beside the keys'
 * ({@link WatermarkTable}); a completion that advances it completes its key and raises it in one transaction, and a
 * transactional run with an advance locks the aggregate's row inside the run's transaction after the key's and
 * decides there (see {@link JdbcWatermarks}), so the runs of one aggregate serialize on it.
 *
 * <p>As an {@link InspectableDedupStore}: {@code inspect} is one primary-key read and {@code delete} at
 * most two primary-key deletes (the live row, else a row kept only for its attempts), both on the
 * database's clock. {@code expiresAt} is the time left by that clock, to the microsecond, added to this
 * host's clock when the answer arrives. {@code stats} is one {@code COUNT(*) ... GROUP BY state} over the
 * live rows: exact and never truncated, but it reads the whole table (or its {@code expires_at} index), so
 * it takes about a second per few million rows. {@code list} is keyset pagination over the primary key:
 * {@code WHERE namespace = ? AND id > <cursor> ... ORDER BY id LIMIT ?}, the cursor being the last ID's bytes in
 * hex, and an ID prefix a range of the key ({@code id >= prefix AND id < prefix + 1}); so each page is one index
 * range read whatever the table's size, and a key present throughout a listing is listed exactly once. {@code
 * purge} is one bounded {@code DELETE} of the namespace's completed rows forgotten before the time, per dialect
 * ({@code ORDER BY id LIMIT} on MariaDB and MySQL, {@code FETCH FIRST} on H2, a skip-locked keyed subquery on
 * PostgreSQL, which has no {@code DELETE ... LIMIT}, and passes over a row another transaction holds), its
 * condition tested on the row it deletes; it has more to do while a call deletes its whole limit. Both use the
 * database's clock.
 */
final class JdbcDedupStore implements TransactionalDedupStore, InspectableDedupStore, OutboxStore,
        SequencedDedupStore {

    /** Claims of keys whose rows another writer changed between our write and our read. */
    private static final int MAX_PASSES = 5;

    /** The longest wait suggested for a key still racing after {@link #MAX_PASSES}. */
    private static final Duration RACE_BACKOFF = Duration.ofMillis(100);

    /** Runs of a statement that lost a deadlock or an insert race; nothing of a lost run remains. */
    private static final int MAX_CONFLICT_RUNS = 10;

    /** The cursor of a purge that deleted its whole limit: there may be more. */
    private static final String PURGE_AGAIN = "jdbc:again";

    private final HikariDataSource dataSource;
    private final Jdbi jdbi;
    private final Dialect dialect;
    private final Failures failures;
    private final Purger purger;
    private final JdbcOutbox outbox;
    private final JdbcWatermarks watermarks;
    private final AtomicBoolean closed = new AtomicBoolean();

    JdbcDedupStore(HikariDataSource dataSource, Jdbi jdbi, Dialect dialect, Failures failures, Purger purger) {
        this.dataSource = dataSource;
        this.jdbi = jdbi;
        this.dialect = dialect;
        this.failures = failures;
        this.purger = purger;
        this.outbox = new JdbcOutbox(jdbi, OutboxTable.of(dialect), failures, closed::get);
        this.watermarks = new JdbcWatermarks(dialect);
    }

    // ------------------------------------------------------------------ claims

    @Override
    public List<ClaimResult> claim(List<ClaimRequest> requests) {
        int size = requests.size();
        if (size == 0) {
            return List.of();
        }
        ClaimResult[] results = new ClaimResult[size];
        StoredRow[] stored = new StoredRow[size];
        int[] firstOf = new int[size];
        Map<StoreKey, Integer> first = new HashMap<>(size * 2);
        List<ClaimRow> pending = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            ClaimRequest request = requests.get(i);
            Integer earlier = first.putIfAbsent(request.key(), i);
            firstOf[i] = earlier == null ? i : earlier;
            if (earlier == null) {
                pending.add(ClaimRow.claim(i, request.key(), request.fingerprint(), request.lease(),
                        request.retention(), Tokens.next()));
            }
        }
        Collections.sort(pending);
        claimAll(pending, requests, results, stored);
        for (int i = 0; i < size; i++) {
            if (firstOf[i] != i) {
                results[i] = repeatOf(results[firstOf[i]], stored[firstOf[i]], requests.get(firstOf[i]),
                        requests.get(i));
            }
        }
        return List.of(results);
    }

    private void claimAll(List<ClaimRow> pending, List<ClaimRequest> requests, ClaimResult[] results,
            StoredRow[] stored) {
        call("claim of " + pending.size() + " keys", handle -> {
            List<ClaimRow> rows = pending;
            for (int pass = 1; !rows.isEmpty() && pass <= MAX_PASSES; pass++) {
                rows = claimPass(handle, rows, results, stored);
            }
            // Still racing after several passes: answer "busy" and let the caller come back soon.
            for (ClaimRow row : rows) {
                Duration lease = requests.get(row.index()).lease();
                results[row.index()] = new InProgress(lease.compareTo(RACE_BACKOFF) < 0 ? lease : RACE_BACKOFF);
            }
            return null;
        });
    }

    /** Claims {@code rows} statement by statement; returns those to try again, with new tokens. */
    private List<ClaimRow> claimPass(Handle handle, List<ClaimRow> rows, ClaimResult[] results, StoredRow[] stored) {
        List<ClaimRow> again = new ArrayList<>();
        for (int from = 0; from < rows.size(); from += Dialect.MAX_ROWS_PER_STATEMENT) {
            List<ClaimRow> chunk = rows.subList(from, Math.min(rows.size(), from + Dialect.MAX_ROWS_PER_STATEMENT));
            List<StoredRow> answers = claimChunk(handle, chunk);
            for (int j = 0; j < chunk.size(); j++) {
                ClaimRow row = chunk.get(j);
                ClaimResult result = StoredRow.resultFor(row, answers.get(j));
                if (result == null) {
                    again.add(row.withToken(Tokens.next()));
                } else {
                    results[row.index()] = result;
                    stored[row.index()] = answers.get(j);
                }
            }
        }
        return again;
    }

    private List<StoredRow> claimChunk(Handle handle, List<ClaimRow> rows) {
        for (int run = 1; ; run++) {
            try {
                return dialect.claim(handle, rows);
            } catch (RuntimeException e) {
                if (run >= MAX_CONFLICT_RUNS || !failures.isConflict(e)) {
                    throw e;
                }
                backOff(run);
            }
        }
    }

    /**
     * Waits before running a statement that lost a race again, longer each time and at random, so
     * that the winner (H2 fails a racing insert at once rather than waiting for it) can commit first.
     */
    private static void backOff(int run) {
        long maxMillis = Math.min(50, 1L << run);
        try {
            Thread.sleep(ThreadLocalRandom.current().nextLong(1, maxMillis + 1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A repeated key's answer: the first request's acquisition makes the repeats wait for its lease. */
    private static ClaimResult repeatOf(ClaimResult first, StoredRow stored, ClaimRequest firstRequest,
            ClaimRequest repeat) {
        if (first instanceof Acquired) {
            return new InProgress(firstRequest.lease());
        }
        if (first instanceof Duplicate && stored != null) {
            return stored.duplicateOf(ClaimRow.utf8(repeat.fingerprint(), "fingerprint"));
        }
        return first;
    }

    // ------------------------------------------------------------------ fenced calls

    @Override
    public boolean complete(StoreKey key, long token, Duration retention) {
        Objects.requireNonNull(retention, "retention");
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        long retentionMicros = ClaimRow.micros(retention);
        return call("complete", handle -> dialect.completeOne(handle, namespace, id, token, retentionMicros));
    }

    @Override
    public boolean completeAndAdvance(StoreKey key, long token, Duration retention, SequenceAdvance advance) {
        Objects.requireNonNull(retention, "retention");
        JdbcWatermarks.requireStorable(Objects.requireNonNull(advance, "advance"));
        List<ClaimRow> row = List.of(ClaimRow.completion(0, key, token, retention));
        List<CompletionRequest> request = List.of(new CompletionRequest(key, token, retention, advance));
        return call("complete and advance the watermark", handle -> completeChunk(handle, row, request))[0];
    }

    @Override
    public long watermark(StoreKey aggregate) {
        Objects.requireNonNull(aggregate, "aggregate");
        return call("reading the watermark", handle -> watermarks.read(handle, aggregate));
    }

    /**
     * Sends each distinct pair of key and token once, sorted by key, in statements of at most
     * {@value Dialect#MAX_ROWS_PER_STATEMENT} keys (see the dialects for how each answers per key); a pair
     * repeated in the batch answers as its first request did, as a second {@code complete} of it would.
     * Statements run one after the other, each committed on its own: if one fails after others landed, its
     * keys and those of the statements not yet sent are {@link CompletionResult.Failed}; if the first fails,
     * nothing landed and the call throws.
     */
    @Override
    public List<CompletionResult> completeAll(List<CompletionRequest> requests) {
        int size = requests.size();
        if (size == 0) {
            return List.of();
        }
        CompletionResult[] results = new CompletionResult[size];
        int[] firstOf = new int[size];
        Map<Completion, Integer> first = new HashMap<>(size * 2);
        List<ClaimRow> pending = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            CompletionRequest request = requests.get(i);
            Integer earlier = first.putIfAbsent(new Completion(request.key(), request.token(), request.advance()), i);
            firstOf[i] = earlier == null ? i : earlier;
            if (earlier == null) {
                pending.add(ClaimRow.completion(i, request.key(), request.token(), request.retention()));
            }
        }
        Collections.sort(pending);
        StoreException failure = null;
        for (int from = 0; from < pending.size(); from += Dialect.MAX_ROWS_PER_STATEMENT) {
            List<ClaimRow> chunk = pending.subList(from, Math.min(pending.size(), from + Dialect.MAX_ROWS_PER_STATEMENT));
            if (failure == null) {
                try {
                    boolean[] done = call("completion of " + chunk.size() + (chunk.size() == 1 ? " key" : " keys"),
                            handle -> completeChunk(handle, chunk, requests));
                    for (int j = 0; j < chunk.size(); j++) {
                        results[chunk.get(j).index()] = done[j] ? CompletionResult.COMPLETED : CompletionResult.NOT_OWNER;
                    }
                    continue;
                } catch (StoreException e) {
                    if (from == 0) {
                        throw e;
                    }
                    failure = e;
                }
            }
            for (ClaimRow row : chunk) {
                results[row.index()] = new CompletionResult.Failed(failure);
            }
        }
        for (int i = 0; i < size; i++) {
            results[i] = results[firstOf[i]];
        }
        return List.of(results);
    }

    /**
     * A key with the token completing it (and the advance it raises): requests for the same pair in one batch are
     * sent once.
     */
    private record Completion(StoreKey key, long token, SequenceAdvance advance) {
    }

    /** Completes the chunk; one whose requests advance watermarks raises them in the same transaction. */
    private boolean[] completeChunk(Handle handle, List<ClaimRow> rows, List<CompletionRequest> requests) {
        boolean advancing = JdbcWatermarks.anyAdvance(rows, requests);
        for (int run = 1; ; run++) {
            try {
                return advancing ? watermarks.completeAndRaise(handle, rows, requests) : dialect.completeAll(handle, rows);
            } catch (RuntimeException e) {
                // Each run is one statement or one transaction, rolled back whole when it lost a race.
                if (run >= MAX_CONFLICT_RUNS || !failures.isConflict(e)) {
                    throw e;
                }
                backOff(run);
            }
        }
    }

    @Override
    public boolean release(StoreKey key, long token) {
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        return call("release", handle -> handle.createUpdate(dialect.release())
                .bind(0, namespace).bind(1, id).bind(2, token)
                .execute() > 0);
    }

    @Override
    public boolean renew(StoreKey key, long token, Duration lease) {
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive: " + lease);
        }
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        long micros = Math.max(1, ClaimRow.micros(lease));
        return call("renew", handle -> handle.createUpdate(dialect.renew())
                .bind(0, micros).bind(1, micros).bind(2, namespace).bind(3, id).bind(4, token)
                .execute() > 0);
    }

    @Override
    public int recordStart(StoreKey key, long token) {
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        return call("record start", handle -> dialect.recordStart(handle, namespace, id, token));
    }

    // ------------------------------------------------------------------ operator view

    @Override
    public Optional<StoredKey> inspect(StoreKey key) {
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        return call("inspect", handle -> handle.createQuery(dialect.inspect())
                .bind(0, namespace).bind(1, id)
                .map((rs, ctx) -> {
                    boolean completed = rs.getInt(1) == Dialect.COMPLETED;
                    byte[] fingerprint = rs.getBytes(3);
                    long left = rs.getLong(completed ? 5 : 4);
                    return new StoredKey(completed ? StoredKey.State.COMPLETED : StoredKey.State.CLAIMED,
                            rs.getInt(2), fingerprint == null ? null : new String(fingerprint, StandardCharsets.UTF_8),
                            Instant.now().plus(left, ChronoUnit.MICROS));
                })
                .findOne());
    }

    @Override
    public boolean delete(StoreKey key) {
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        return call("delete", handle -> {
            boolean live = handle.createUpdate(dialect.deleteLive()).bind(0, namespace).bind(1, id).execute() > 0;
            // A claim whose lease ran out is kept for its attempts; an operator's delete forgets those too.
            // Only such a row is deleted here, so a claim that took the key in between is left alone.
            handle.createUpdate(dialect.deleteOver()).bind(0, namespace).bind(1, id).execute();
            return live;
        });
    }

    @Override
    public StoreStats stats() {
        List<Map.Entry<Integer, Long>> perState = call("counting the keys", handle -> handle
                .createQuery(dialect.countLive())
                .map((rs, ctx) -> Map.entry(rs.getInt(1), rs.getLong(2)))
                .list());
        long claimed = 0;
        long completed = 0;
        for (Map.Entry<Integer, Long> count : perState) {
            if (count.getKey() == Dialect.CLAIMED) {
                claimed = count.getValue();
            } else if (count.getKey() == Dialect.COMPLETED) {
                completed = count.getValue();
            }
        }
        return new StoreStats(claimed, completed, false);
    }

    @Override
    public KeyPage list(String namespace, KeyFilter filter, String cursor, int limit) {
        Objects.requireNonNull(filter, "filter");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        byte[] ns = ClaimRow.namespace(new StoreKey(namespace, ""));
        byte[] prefix = ClaimRow.utf8(filter.prefix(), "prefix");
        byte[] after = cursor == null ? null : idOfCursor(cursor);
        byte[] below = upperBound(prefix);
        String sql = dialect.list(filter.state(), after != null, below != null);
        List<Listed> rows = call("listing keys", handle -> {
            Query query = handle.createQuery(sql);
            int position = 0;
            query.bind(position++, ns).bind(position++, prefix);
            if (after != null) {
                query.bind(position++, after);
            }
            if (below != null) {
                query.bind(position++, below);
            }
            return query.bind(position, limit)
                    .map((rs, ctx) -> {
                        byte[] id = rs.getBytes(1);
                        boolean completed = rs.getInt(2) == Dialect.COMPLETED;
                        byte[] fingerprint = rs.getBytes(4);
                        long left = rs.getLong(completed ? 6 : 5);
                        return new Listed(id, new ListedKey(new StoreKey(namespace, new String(id, StandardCharsets.UTF_8)),
                                new StoredKey(completed ? StoredKey.State.COMPLETED : StoredKey.State.CLAIMED,
                                        rs.getInt(3), fingerprint == null ? null
                                                : new String(fingerprint, StandardCharsets.UTF_8),
                                        Instant.now().plus(left, ChronoUnit.MICROS))));
                    })
                    .list();
        });
        List<ListedKey> keys = rows.stream().map(Listed::key).toList();
        return new KeyPage(keys, rows.size() < limit ? null : HexFormat.of().formatHex(rows.get(rows.size() - 1).id()));
    }

    /** A listed row with its ID's bytes, which the next page's cursor is made of. */
    private record Listed(byte[] id, ListedKey key) {
    }

    private static byte[] idOfCursor(String cursor) {
        try {
            return HexFormat.of().parseHex(cursor);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("Not a cursor of the JDBC store's listing: "
                    + (cursor.length() <= 64 ? cursor : cursor.substring(0, 61) + "..."), e);
        }
    }

    /**
     * The smallest bytes above every ID starting with {@code prefix} (bytes compared unsigned, as the primary key
     * orders them), or {@code null} when there is none (an empty prefix, or one of 0xFF bytes only).
     */
    static byte[] upperBound(byte[] prefix) {
        int end = prefix.length;
        while (end > 0 && prefix[end - 1] == (byte) 0xFF) {
            end--;
        }
        if (end == 0) {
            return null;
        }
        byte[] bound = Arrays.copyOf(prefix, end);
        bound[end - 1]++;
        return bound;
    }

    @Override
    public PurgeBatch purge(String namespace, Instant expiringBefore, String cursor, int limit) {
        Objects.requireNonNull(expiringBefore, "expiringBefore");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        if (cursor != null && !cursor.equals(PURGE_AGAIN)) {
            throw new IllegalArgumentException("Not a cursor of the JDBC store's purge: " + cursor);
        }
        byte[] ns = ClaimRow.namespace(new StoreKey(namespace, ""));
        Duration within = Duration.between(Instant.now(), expiringBefore);
        if (within.isNegative() || within.isZero()) {
            return new PurgeBatch(0, null);
        }
        long micros = ClaimRow.micros(within);
        int deleted = call("purging completed keys", handle -> dialect.purgeCompleted(handle, ns, micros, limit));
        // Each call deletes from what is left, so there is no position to keep: only whether to call again.
        return new PurgeBatch(deleted, deleted < limit ? null : PURGE_AGAIN);
    }

    // ------------------------------------------------------------------ transactional mode

    @Override
    public Outcome runOnce(StoreKey key, String fingerprint, Duration retention, Work work) throws Exception {
        return runOnce(key, fingerprint, retention, null, false, work);
    }

    /**
     * The run without an advance; with one, the key's row is written and locked first (a duplicate answers as
     * without), then {@link #guard} locks the aggregate's watermark and decides in the same transaction.
     */
    @Override
    public Outcome runOnce(StoreKey key, String fingerprint, Duration retention, SequenceAdvance advance,
            boolean waitForGaps, Work work) throws Exception {
        Objects.requireNonNull(retention, "retention");
        Objects.requireNonNull(work, "work");
        ClaimRow row = ClaimRow.completed(key, fingerprint, retention, Tokens.next());
        if (advance != null) {
            JdbcWatermarks.requireStorable(advance);
        }
        for (int pass = 1; ; pass++) {
            Handle handle = open("transactional run");
            try {
                StoredRow held = takeKey(handle, row, pass);
                if (held != null && held.token() == row.token()) {
                    JdbcWatermarks.Verdict verdict = advance == null ? JdbcWatermarks.Verdict.RUN
                            : guard(handle, advance, waitForGaps, pass);
                    if (verdict == JdbcWatermarks.Verdict.RUN) {
                        runAndCommit(handle, work);
                        return Outcome.COMMITTED;
                    }
                    if (verdict != null) {
                        return verdict.outcome;
                    }
                } else if (held != null) {
                    rollback(handle, null);
                    if (held.live() && held.state() == Dialect.COMPLETED) {
                        return held.duplicateOf(row.fingerprint()).fingerprintMatches() ? Outcome.DUPLICATE
                                : Outcome.DUPLICATE_FINGERPRINT_MISMATCH;
                    }
                }
                // Lost a race (the row changed or vanished between the write and the read): try again.
                if (pass >= MAX_CONFLICT_RUNS) {
                    throw failures.of("transactional run", "the key's row kept changing under " + pass + " tries", true);
                }
                row = row.withToken(Tokens.next());
            } finally {
                closeQuietly(handle);
            }
        }
    }

    /**
     * One transaction for all the members, a savepoint for each. The members' rows are locked and read in one
     * statement first; a member whose key is completed and remembered is a duplicate, and every other member with
     * a row runs under its savepoint (its watermark guarded, its work run), a member whose work throws rolled back
     * to its savepoint alone. The keys of the members that ran (or were stale) are then written completed in one
     * batch, on the rows still locked, and the transaction commits once: so a member costs its savepoint and its
     * work, and the group a few statements more. A member whose key has no row yet (it was never claimed) is
     * written and locked on its own under its savepoint first, as {@link #runOnce} would; if that row changed
     * under it (a race with another consumer's claim) it is run on its own after the group commits. Any failure of
     * the database itself (a deadlock, a lost connection, a savepoint that is gone because the server aborted the
     * transaction) rolls the whole group back: the runtime then runs every member again.
     */
    @Override
    public List<GroupResult> runGroup(List<GroupMember> members) {
        return runGroup(members, Savepoints.PER_MESSAGE);
    }

    /**
     * As {@link #runGroup(List)}; under {@link Savepoints#ON_FAILURE} a member with a locked row and no sequence
     * guard runs without a savepoint, and when such a member's work throws, the transaction is rolled back and
     * the group runs again with a savepoint for each member.
     */
    @Override
    public List<GroupResult> runGroup(List<GroupMember> members, Savepoints savepoints) {
        if (members.size() <= 1) {
            return OutboxStore.super.runGroup(members);
        }
        List<ClaimRow> rows = new ArrayList<>(members.size());
        for (GroupMember m : members) {
            if (m.advance() != null) {
                JdbcWatermarks.requireStorable(m.advance());
            }
            rows.add(ClaimRow.completed(m.key(), m.fingerprint(), m.retention(), Tokens.next()));
        }
        GroupResult[] results = savepoints == Savepoints.ON_FAILURE ? runGroupOnce(members, rows, false) : null;
        if (results == null) {
            results = runGroupOnce(members, rows, true);
        }
        List<GroupResult> out = new ArrayList<>(members.size());
        for (int i = 0; i < members.size(); i++) {
            GroupMember m = members.get(i);
            if (results[i] == null) {
                try {
                    results[i] = new GroupResult.Done(runOnce(m.key(), m.fingerprint(), m.retention(), m.advance(),
                            m.waitForGaps(), m.work()));
                } catch (Exception e) {
                    results[i] = new GroupResult.Failed(e);
                }
            }
            out.add(results[i]);
        }
        return out;
    }

    /**
     * The group's one transaction; a {@code null} result is a member to run on its own after it. With
     * {@code everySavepoint} false, a member with a locked row and no sequence guard runs without a savepoint:
     * when its work throws, the transaction is rolled back and the answer is {@code null}, to run the group
     * again with them.
     */
    private GroupResult[] runGroupOnce(List<GroupMember> members, List<ClaimRow> rows, boolean everySavepoint) {
        GroupResult[] results = new GroupResult[members.size()];
        Handle handle = open("grouped transactional run");
        try {
            Map<ByteBuffer, StoredRow> locked;
            try {
                handle.begin();
                locked = lockRows(handle, rows);
            } catch (RuntimeException e) {
                rollback(handle, e);
                throw failures.of("locking the keys of a grouped transaction", e);
            }
            List<ClaimRow> toComplete = new ArrayList<>(members.size());
            for (int i = 0; i < members.size(); i++) {
                GroupMember m = members.get(i);
                ClaimRow row = rows.get(i);
                StoredRow held = locked.get(Dialect.rowKey(row.namespace(), row.id(), 0));
                String savepoint = "idem_m" + i;
                if (held == null) {
                    results[i] = runMember(handle, m, row, savepoint);
                } else if (held.live() && held.state() == Dialect.COMPLETED) {
                    results[i] = new GroupResult.Done(held.duplicateOf(row.fingerprint()).fingerprintMatches()
                            ? Outcome.DUPLICATE : Outcome.DUPLICATE_FINGERPRINT_MISMATCH);
                } else if (everySavepoint || m.advance() != null) {
                    results[i] = runLocked(handle, m, savepoint);
                } else if (runWithoutSavepoint(handle, m)) {
                    results[i] = new GroupResult.Done(Outcome.COMMITTED);
                } else {
                    return null;
                }
                if (held != null && results[i] instanceof GroupResult.Done done
                        && (done.outcome() == Outcome.COMMITTED || done.outcome() == Outcome.STALE)) {
                    toComplete.add(row);
                }
            }
            try {
                completeLocked(handle, toComplete);
                handle.commit();
            } catch (RuntimeException e) {
                rollback(handle, e);
                throw failures.of("committing a grouped transaction of " + members.size(), e);
            }
            return results;
        } finally {
            closeQuietly(handle);
        }
    }

    /** Locks the rows of {@code rows}' keys, in statements of at most {@link Dialect#MAX_ROWS_PER_STATEMENT} keys. */
    private Map<ByteBuffer, StoredRow> lockRows(Handle handle, List<ClaimRow> rows) {
        Map<ByteBuffer, StoredRow> locked = new HashMap<>(rows.size() * 2);
        for (int from = 0; from < rows.size(); from += Dialect.MAX_ROWS_PER_STATEMENT) {
            List<ClaimRow> chunk = rows.subList(from, Math.min(rows.size(), from + Dialect.MAX_ROWS_PER_STATEMENT));
            Query read = handle.createQuery(dialect.lockRows(chunk.size()));
            int position = 0;
            for (ClaimRow row : chunk) {
                read.bind(position++, row.namespace()).bind(position++, row.id());
            }
            read.map((rs, ctx) -> {
                locked.put(Dialect.rowKey(rs.getBytes(7), rs.getBytes(8), 0), StoredRow.read(rs, 1));
                return null;
            }).forEach(ignored -> { });
        }
        return locked;
    }

    /**
     * Writes the keys of {@code rows}, locked by this transaction, completed with the rows' tokens, in one batch.
     * Each must change one row: the lock kept every other writer out, so anything else is a fault of the database,
     * and the group is rolled back.
     */
    private void completeLocked(Handle handle, List<ClaimRow> rows) {
        if (rows.isEmpty()) {
            return;
        }
        PreparedBatch batch = handle.prepareBatch(dialect.completeLocked());
        for (ClaimRow row : rows) {
            batch.bind(0, row.token()).bind(1, row.fingerprint()).bind(2, row.expiresMicros())
                    .bind(3, row.namespace()).bind(4, row.id()).add();
        }
        for (int count : batch.execute()) {
            if (count == 0) {
                throw new IllegalStateException("a key the grouped transaction held locked had no row to complete");
            }
        }
    }

    /**
     * A member whose key's row this transaction holds locked, under its savepoint: its watermark guarded, its work
     * run; the key is written completed later, with the others. Throws a {@link StoreException} after rolling the
     * whole transaction back when the database failed.
     */
    private GroupResult runLocked(Handle handle, GroupMember m, String savepoint) {
        JdbcWatermarks.Verdict verdict = JdbcWatermarks.Verdict.RUN;
        try {
            handle.savepoint(savepoint);
            if (m.advance() != null) {
                verdict = watermarks.guard(handle, m.advance(), m.waitForGaps());
            }
        } catch (RuntimeException e) {
            rollback(handle, e);
            throw failures.of("checking a member of a grouped transaction", e);
        }
        if (verdict == JdbcWatermarks.Verdict.STALE) {
            return new GroupResult.Done(Outcome.STALE);
        }
        if (verdict == JdbcWatermarks.Verdict.GAP) {
            undo(handle, savepoint, null);
            return new GroupResult.Done(Outcome.SEQUENCE_GAP);
        }
        return runWork(handle, m, savepoint);
    }

    /** Runs a member's work under its savepoint, rolling back to it alone when the work throws. */
    private GroupResult runWork(Handle handle, GroupMember m, String savepoint) {
        JdbcTransaction transaction = new JdbcTransaction(handle);
        try {
            m.work().run(transaction);
        } catch (Exception e) {
            transaction.end();
            undo(handle, savepoint, e);
            return new GroupResult.Failed(e);
        } catch (Error e) {
            transaction.end();
            rollback(handle, e);
            throw e;
        }
        transaction.end();
        return new GroupResult.Done(Outcome.COMMITTED);
    }

    /**
     * Runs a member's work with no savepoint of its own: true when it returned; when it threw, the whole
     * transaction is rolled back and the answer is false.
     */
    private boolean runWithoutSavepoint(Handle handle, GroupMember m) {
        JdbcTransaction transaction = new JdbcTransaction(handle);
        try {
            m.work().run(transaction);
        } catch (Exception e) {
            transaction.end();
            rollback(handle, e);
            return false;
        } catch (Error e) {
            transaction.end();
            rollback(handle, e);
            throw e;
        }
        transaction.end();
        return true;
    }

    /**
     * A member whose key had no row when the group locked its rows, under its savepoint, in the group's open
     * transaction: its key written completed and locked, then guarded and run; {@code null} when that row changed
     * under it (another consumer's claim raced it in), to run on its own. Throws a {@link StoreException} after
     * rolling the whole transaction back when the database failed.
     */
    private GroupResult runMember(Handle handle, GroupMember m, ClaimRow row, String savepoint) {
        StoredRow held;
        JdbcWatermarks.Verdict verdict = JdbcWatermarks.Verdict.RUN;
        try {
            handle.savepoint(savepoint);
            dialect.upsertInTransaction(handle, row);
            held = handle.createQuery(dialect.lockRow())
                    .bind(0, row.namespace()).bind(1, row.id())
                    .map((rs, ctx) -> StoredRow.read(rs, 1))
                    .findOne().orElse(null);
            if (held != null && held.token() == row.token() && m.advance() != null) {
                verdict = watermarks.guard(handle, m.advance(), m.waitForGaps());
            }
        } catch (RuntimeException e) {
            rollback(handle, e);
            throw failures.of("recording a key in a grouped transaction", e);
        }
        if (held == null || held.token() != row.token()) {
            undo(handle, savepoint, null);
            if (held != null && held.live() && held.state() == Dialect.COMPLETED) {
                return new GroupResult.Done(held.duplicateOf(row.fingerprint()).fingerprintMatches()
                        ? Outcome.DUPLICATE : Outcome.DUPLICATE_FINGERPRINT_MISMATCH);
            }
            return null;
        }
        if (verdict == JdbcWatermarks.Verdict.STALE) {
            return new GroupResult.Done(Outcome.STALE);
        }
        if (verdict == JdbcWatermarks.Verdict.GAP) {
            undo(handle, savepoint, null);
            return new GroupResult.Done(Outcome.SEQUENCE_GAP);
        }
        return runWork(handle, m, savepoint);
    }

    /** Rolls back to a member's savepoint; when that fails, the whole transaction, and throws. */
    private void undo(Handle handle, String savepoint, Throwable cause) {
        try {
            handle.rollbackToSavepoint(savepoint);
        } catch (RuntimeException e) {
            if (cause != null) {
                e.addSuppressed(cause);
            }
            rollback(handle, e);
            throw failures.of("rolling back to a member's savepoint in a grouped transaction", e);
        }
    }

    /**
     * Opens the transaction and writes the key as completed, waiting for a concurrent holder of the
     * key. Returns the key's row, locked; {@code null} when the write lost a race and may simply run
     * again (the transaction is then rolled back).
     */
    private StoredRow takeKey(Handle handle, ClaimRow row, int pass) {
        try {
            handle.begin();
            dialect.upsertInTransaction(handle, row);
            StoredRow held = handle.createQuery(dialect.lockRow())
                    .bind(0, row.namespace()).bind(1, row.id())
                    .map((rs, ctx) -> StoredRow.read(rs, 1))
                    .findOne().orElse(null);
            if (held == null) {
                rollback(handle, null);
            }
            return held;
        } catch (RuntimeException e) {
            rollback(handle, e);
            if (pass < MAX_CONFLICT_RUNS && failures.isConflict(e)) {
                backOff(pass);
                return null;
            }
            throw failures.of("recording the key in a transaction", e);
        }
    }

    /**
     * The sequence guard of a run that holds its key: {@link JdbcWatermarks#guard} on the open transaction, which
     * is then committed for a stale run (its key recorded as completed) and rolled back for a gap; a run to do
     * goes on with its watermark raised. Answers {@code null} when the guard lost a race (a deadlock, or H2's
     * concurrent insert of the watermark's row): rolled back, to be run again.
     */
    private JdbcWatermarks.Verdict guard(Handle handle, SequenceAdvance advance, boolean waitForGaps, int pass) {
        JdbcWatermarks.Verdict verdict;
        try {
            verdict = watermarks.guard(handle, advance, waitForGaps);
        } catch (RuntimeException e) {
            rollback(handle, e);
            if (pass < MAX_CONFLICT_RUNS && failures.isConflict(e)) {
                backOff(pass);
                return null;
            }
            throw failures.of("checking the sequence watermark in a transaction", e);
        }
        if (verdict == JdbcWatermarks.Verdict.GAP) {
            rollback(handle, null);
        } else if (verdict == JdbcWatermarks.Verdict.STALE) {
            try {
                handle.commit();
            } catch (RuntimeException e) {
                rollback(handle, e);
                throw failures.of("committing the transaction of a stale run", e);
            }
        }
        return verdict;
    }

    private void runAndCommit(Handle handle, Work work) throws Exception {
        JdbcTransaction transaction = new JdbcTransaction(handle);
        try {
            work.run(transaction);
        } catch (Throwable t) {
            transaction.end();
            rollback(handle, t);
            throw t;
        }
        transaction.end();
        try {
            handle.commit();
        } catch (RuntimeException e) {
            rollback(handle, e);
            throw failures.of("committing the transaction", e);
        }
    }

    /** Rolls back; a failure to do so is added to {@code cause} when there is one, else thrown. */
    private void rollback(Handle handle, Throwable cause) {
        try {
            handle.rollback();
        } catch (RuntimeException e) {
            if (cause == null) {
                throw failures.of("rolling back the transaction", e);
            }
            cause.addSuppressed(e);
        }
    }

    private static void closeQuietly(Handle handle) {
        try {
            handle.close();
        } catch (RuntimeException ignored) {
            // The connection is broken or was already handed back; the failure that matters was reported.
        }
    }

    // ------------------------------------------------------------------ outbox (see JdbcOutbox)

    @Override
    public void append(StoreTransaction transaction, String namespace, List<Emitted> messages) {
        outbox.append(transaction, namespace, messages);
    }

    @Override
    public int relay(int limit, Publisher publisher) {
        return outbox.relay(limit, publisher);
    }

    @Override
    public Backlog backlog() {
        return outbox.backlog();
    }

    // ------------------------------------------------------------------ life cycle

    @Override
    public void checkHealth() {
        call("health check", handle -> handle.createQuery("SELECT 1").mapTo(Integer.class).one());
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                purger.close();
            } finally {
                dataSource.close();
            }
        }
    }

    /** Runs one purge now, as the schedule does; for tests and operators. */
    Purger.Run purgeExpired() {
        return purger.purgeExpired();
    }

    Purger purger() {
        return purger;
    }

    Dialect dialect() {
        return dialect;
    }

    Jdbi jdbi() {
        return jdbi;
    }

    @Override
    public String toString() {
        return "JdbcDedupStore[" + failures.where() + "]";
    }

    // ------------------------------------------------------------------ plumbing

    private Handle open(String operation) {
        try {
            return jdbi.open();
        } catch (RuntimeException e) {
            throw failures.of(operation + " (getting a connection)", e);
        }
    }

    private <T> T call(String operation, HandleCallback<T, RuntimeException> callback) {
        if (closed.get()) {
            throw failures.of(operation, "the store is closed", false);
        }
        try {
            return jdbi.withHandle(callback);
        } catch (StoreException e) {
            throw e;
        } catch (RuntimeException e) {
            throw failures.of(operation, e);
        }
    }
}
