package dev.idem.store.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.FencingTokens;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.KeyFilter;
import dev.idem.spi.KeyPage;
import dev.idem.spi.ListedKey;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PurgeBatch;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import dev.idem.spi.StoredReply;
import dev.idem.spi.TransactionalDedupStore;
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
import java.util.concurrent.atomic.AtomicBoolean;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
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
 * <p>Transactional mode ({@code runOnce}, {@code runGroup}) is {@link JdbcTransactionalRuns}, on the store's
 * connections ({@link JdbcCalls}) and sequence guard.
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
 *
 * <p>As a {@link StepStore}: a message's durable steps are rows of the table beside the keys' ({@link StepTable}),
 * written under the lock of the key's row, or beside a transactional run that holds that lock ({@link JdbcSteps}).
 * A completion leaves them to be forgotten on their own, which they are no later than the completed key, and the
 * purge deletes them once forgotten; {@code delete} deletes a key's steps with it, and {@code purge} the namespace's
 * steps forgotten before the time it is given (every step of each key it deletes, and steps recorded longer ago
 * than the time, of keys in flight).
 *
 * <p>As a {@link ReplyStore}: the reply stored with a completion is a row of the table beside the keys'
 * ({@link ReplyTable}), holding the completion's token, written only for a key completed with a reply: a completion
 * with a reply runs in the transaction of a completion with advances ({@link JdbcWatermarks#completeAndRaise}), which
 * then writes the replies of the keys it completed now ({@link JdbcReplies}); a transactional run's work records its
 * reply in the run's transaction, with the token the run completes its key with. {@code reply} is one read joining
 * the keys row and its reply on that token, so a reply of an earlier life of the key never shows. {@code delete}
 * deletes a key's reply with it, {@code purge} the namespace's replies forgotten before the time, and the purger the
 * forgotten ones.
 */
final class JdbcDedupStore implements TransactionalDedupStore, InspectableDedupStore, OutboxStore,
        SequencedDedupStore, StepStore, ReplyStore {

    /** Claims of keys whose rows another writer changed between our write and our read. */
    private static final int MAX_PASSES = 5;

    /** The longest wait suggested for a key still racing after {@link #MAX_PASSES}. */
    private static final Duration RACE_BACKOFF = Duration.ofMillis(100);

    /** The cursor of a purge that deleted its whole limit: there may be more. */
    private static final String PURGE_AGAIN = "jdbc:again";

    private final HikariDataSource dataSource;
    private final Jdbi jdbi;
    private final Dialect dialect;
    private final Failures failures;
    private final Purger purger;
    private final JdbcOutbox outbox;
    private final JdbcWatermarks watermarks;
    private final JdbcCalls calls;
    private final JdbcTransactionalRuns runs;
    private final JdbcSteps steps;
    private final JdbcReplies replies;
    private final AtomicBoolean closed = new AtomicBoolean();

    JdbcDedupStore(HikariDataSource dataSource, Jdbi jdbi, Dialect dialect, Failures failures, Purger purger) {
        this.dataSource = dataSource;
        this.jdbi = jdbi;
        this.dialect = dialect;
        this.failures = failures;
        this.purger = purger;
        this.calls = new JdbcCalls(jdbi, failures, closed::get);
        this.outbox = new JdbcOutbox(calls, OutboxTable.of(dialect), failures);
        this.watermarks = new JdbcWatermarks(dialect);
        this.runs = new JdbcTransactionalRuns(calls, dialect, failures, watermarks);
        this.steps = new JdbcSteps(calls, StepTable.of(dialect), failures);
        this.replies = new JdbcReplies(ReplyTable.of(dialect));
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
                        request.retention(), FencingTokens.next()));
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
        calls.call("claim of " + pending.size() + " keys", handle -> {
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
                    again.add(row.withToken(FencingTokens.next()));
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
                if (run >= JdbcCalls.MAX_CONFLICT_RUNS || !failures.isConflict(e)) {
                    throw e;
                }
                JdbcCalls.backOff(run);
            }
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
        return calls.call("complete", handle -> dialect.completeOne(handle, namespace, id, token, retentionMicros));
    }

    @Override
    public boolean completeAndAdvance(StoreKey key, long token, Duration retention, SequenceAdvance advance) {
        Objects.requireNonNull(retention, "retention");
        JdbcWatermarks.requireStorable(Objects.requireNonNull(advance, "advance"));
        List<ClaimRow> row = List.of(ClaimRow.completion(0, key, token, retention));
        List<CompletionRequest> request = List.of(new CompletionRequest(key, token, retention, advance));
        return calls.call("complete and advance the watermark", handle -> completeChunk(handle, row, request))[0];
    }

    @Override
    public long watermark(StoreKey aggregate) {
        Objects.requireNonNull(aggregate, "aggregate");
        return calls.call("reading the watermark", handle -> watermarks.read(handle, aggregate));
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
                    boolean[] done = calls.call(
                            "completion of " + chunk.size() + (chunk.size() == 1 ? " key" : " keys"),
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

    /**
     * Completes the chunk; one whose requests advance watermarks or carry replies raises them and stores them in the
     * same transaction.
     */
    private boolean[] completeChunk(Handle handle, List<ClaimRow> rows, List<CompletionRequest> requests) {
        boolean withMore = JdbcWatermarks.anyAdvance(rows, requests) || JdbcReplies.anyReply(rows, requests);
        for (int run = 1; ; run++) {
            try {
                return withMore ? watermarks.completeAndRaise(handle, rows, requests, replies)
                        : dialect.completeAll(handle, rows);
            } catch (RuntimeException e) {
                // Each run is one statement or one transaction, rolled back whole when it lost a race.
                if (run >= JdbcCalls.MAX_CONFLICT_RUNS || !failures.isConflict(e)) {
                    throw e;
                }
                JdbcCalls.backOff(run);
            }
        }
    }

    @Override
    public boolean release(StoreKey key, long token) {
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        return calls.call("release", handle -> handle.createUpdate(dialect.release())
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
        return calls.call("renew", handle -> handle.createUpdate(dialect.renew())
                .bind(0, micros).bind(1, micros).bind(2, namespace).bind(3, id).bind(4, token)
                .execute() > 0);
    }

    @Override
    public int recordStart(StoreKey key, long token) {
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        return calls.call("record start", handle -> dialect.recordStart(handle, namespace, id, token));
    }

    // ------------------------------------------------------------------ durable steps (JdbcSteps)

    @Override
    public Optional<Map<String, byte[]>> steps(StoreKey key, long token) {
        Objects.requireNonNull(key, "key");
        return steps.read(key, token);
    }

    @Override
    public boolean recordStep(StoreKey key, long token, String name, byte[] value) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        StepStore.check(name, value);
        return steps.record(key, token, name, value);
    }

    // ------------------------------------------------------------------ replies (JdbcReplies)

    @Override
    public boolean completeWithReply(StoreKey key, long token, Duration retention, StoredReply reply) {
        Objects.requireNonNull(retention, "retention");
        ReplyStore.check(reply);
        List<ClaimRow> row = List.of(ClaimRow.completion(0, key, token, retention));
        List<CompletionRequest> request = List.of(new CompletionRequest(key, token, retention, null, reply));
        return calls.call("complete with a reply", handle -> completeChunk(handle, row, request))[0];
    }

    @Override
    public Optional<StoredReply> reply(StoreKey key) {
        Objects.requireNonNull(key, "key");
        return calls.call("reading the reply", handle -> replies.read(handle, key));
    }

    @Override
    public void recordReply(StoreTransaction transaction, StoreKey key, StoredReply reply) {
        Objects.requireNonNull(key, "key");
        ReplyStore.check(reply);
        try {
            replies.record(transaction, key, reply);
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw e;
        } catch (RuntimeException e) {
            throw failures.of("recording a reply in the transaction", e);
        }
    }

    // ------------------------------------------------------------------ operator view

    @Override
    public Optional<StoredKey> inspect(StoreKey key) {
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        return calls.call("inspect", handle -> handle.createQuery(dialect.inspect())
                .bind(0, namespace).bind(1, id)
                .map((rs, ctx) -> {
                    boolean completed = rs.getInt(1) == Dialect.COMPLETED;
                    byte[] fingerprint = rs.getBytes(3);
                    long left = rs.getLong(completed ? 5 : 4);
                    return new StoredKey(completed ? StoredKey.State.COMPLETED : StoredKey.State.CLAIMED,
                            rs.getInt(2), fingerprint == null ? null : new String(fingerprint, StandardCharsets.UTF_8),
                            Instant.now().plus(left, ChronoUnit.MICROS), completed ? 0 : rs.getInt(6));
                })
                .findOne());
    }

    @Override
    public boolean delete(StoreKey key) {
        byte[] namespace = ClaimRow.namespace(key);
        byte[] id = ClaimRow.id(key);
        return calls.call("delete", handle -> {
            boolean live = handle.createUpdate(dialect.deleteLive()).bind(0, namespace).bind(1, id).execute() > 0;
            // A claim whose lease ran out is kept for its attempts; an operator's delete forgets those too.
            // Only such a row is deleted here, so a claim that took the key in between is left alone.
            handle.createUpdate(dialect.deleteOver()).bind(0, namespace).bind(1, id).execute();
            // And its steps, so that the message processed again runs every step again, and its reply.
            handle.createUpdate(steps.table().deleteKey()).bind(0, namespace).bind(1, id).execute();
            handle.createUpdate(replies.table().deleteKey()).bind(0, namespace).bind(1, id).execute();
            return live;
        });
    }

    @Override
    public StoreStats stats() {
        List<Map.Entry<Integer, Long>> perState = calls.call("counting the keys", handle -> handle
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
        List<Listed> rows = calls.call("listing keys", handle -> {
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
                                        Instant.now().plus(left, ChronoUnit.MICROS), completed ? 0 : rs.getInt(7))));
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
        int deleted = calls.call("purging completed keys", handle -> {
            int keys = dialect.purgeCompleted(handle, ns, micros, limit);
            // The steps of every key deleted are forgotten before the time too (no later than their key): deleted
            // with them, so that none is replayed to the key claimed afresh.
            handle.createUpdate(steps.table().deleteExpiringWithin()).bind(0, ns).bind(1, micros).execute();
            // And their replies, which are forgotten with them.
            handle.createUpdate(replies.table().deleteExpiringWithin()).bind(0, ns).bind(1, micros).execute();
            return keys;
        });
        // Each call deletes from what is left, so there is no position to keep: only whether to call again.
        return new PurgeBatch(deleted, deleted < limit ? null : PURGE_AGAIN);
    }

    // ------------------------------------------------------------------ transactional mode (JdbcTransactionalRuns)

    @Override
    public Outcome runOnce(StoreKey key, String fingerprint, Duration retention, Work work) throws Exception {
        return runOnce(key, fingerprint, retention, null, false, work);
    }

    @Override
    public Outcome runOnce(StoreKey key, String fingerprint, Duration retention, SequenceAdvance advance,
            boolean waitForGaps, Work work) throws Exception {
        // While the run's transaction holds the key's row, its steps are recorded beside it (JdbcSteps).
        steps.enter(key);
        try {
            return runs.runOnce(key, fingerprint, retention, advance, waitForGaps, work);
        } finally {
            steps.leave(key);
        }
    }

    /** One transaction for the whole batch: see {@link JdbcTransactionalRuns#runBatch}. */
    @Override
    public List<Outcome> runBatch(List<BatchMember> members, BatchWork work) throws Exception {
        for (BatchMember m : members) {
            steps.enter(m.key());
        }
        try {
            return runs.runBatch(members, work);
        } finally {
            for (BatchMember m : members) {
                steps.leave(m.key());
            }
        }
    }

    @Override
    public boolean runsBatches() {
        return true;
    }

    /** One transaction for all the members, a savepoint for each: see {@link JdbcTransactionalRuns#runGroup}. */
    @Override
    public List<GroupResult> runGroup(List<GroupMember> members) {
        return runGroup(members, Savepoints.PER_MESSAGE);
    }

    @Override
    public List<GroupResult> runGroup(List<GroupMember> members, Savepoints savepoints) {
        if (members.size() <= 1) {
            return OutboxStore.super.runGroup(members);
        }
        for (GroupMember m : members) {
            steps.enter(m.key());
        }
        try {
            return runs.runGroup(members, savepoints);
        } finally {
            for (GroupMember m : members) {
                steps.leave(m.key());
            }
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
        calls.call("health check", handle -> handle.createQuery("SELECT 1").mapTo(Integer.class).one());
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
}
