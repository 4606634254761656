package dev.idem.runtime.config;

import dev.idem.api.HandlerSettings;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.TransactionalDedupStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.StringJoiner;

/**
 * One pipeline's validated settings ({@code pipelines.<name>}). Every key {@link RuntimeConfigSpecs#PIPELINE}
 * declares is bound: {@link #get} reads any of them, typed as declared, so a new key needs its declaration and
 * nothing more here; the accessors below are the settings the pipeline reads on its way, resolved once (enums,
 * policies that group several keys). Immutable and thread-safe.
 */
public final class PipelineConfig {

    private final String name;
    private final SectionConfig section;
    private final List<PluginSection> idExtractors;
    private final List<PluginSection> orderingKey;
    private final SequencePolicy sequence;
    private final HandlerSettings handlerSettings;
    private final String namespace;
    private final MissingIdPolicy missingId;
    private final FingerprintMode fingerprint;
    private final MismatchPolicy fingerprintMismatch;
    private final Ordering ordering;
    private final RetryPolicy retry;
    private final CommitPolicy commit;
    private final PayloadPolicy payload;
    private final TransactionalDedupStore.Savepoints groupSavepoints;
    private final int concurrency;
    private final int maxInFlight;
    private final Duration lease;
    private final Duration retention;
    private final Duration handlerTimeout;

    /**
     * @param name the pipeline's name: the consumer name and the store key namespace unless {@code namespace} is set
     * @param section the validated keys of {@link RuntimeConfigSpecs#PIPELINE}
     * @param idExtractors the extractor chain; the first that finds a key wins
     * @param orderingKey the extractor chain of the ordering key; empty for the broker's key, else the idempotency key
     * @param sequence the per-aggregate sequence guard, or {@code null} for none
     */
    PipelineConfig(String name, SectionConfig section, List<PluginSection> idExtractors,
            List<PluginSection> orderingKey, SequencePolicy sequence) {
        this.name = Objects.requireNonNull(name, "name");
        this.section = Objects.requireNonNull(section, "section");
        Objects.requireNonNull(section.get(RuntimeConfigSpecs.SOURCE), "source");
        this.idExtractors = List.copyOf(idExtractors);
        this.orderingKey = List.copyOf(orderingKey);
        this.sequence = sequence;
        this.handlerSettings = HandlerSettings.of(name, section.get(RuntimeConfigSpecs.HANDLER_SETTINGS));
        String configured = section.get(RuntimeConfigSpecs.NAMESPACE);
        this.namespace = configured == null ? name : configured;
        this.missingId = RuntimeConfigSpecs.enumValue(MissingIdPolicy.class, section.get(RuntimeConfigSpecs.MISSING_ID));
        this.fingerprint = RuntimeConfigSpecs.enumValue(FingerprintMode.class,
                section.get(RuntimeConfigSpecs.FINGERPRINT));
        this.fingerprintMismatch = RuntimeConfigSpecs.enumValue(MismatchPolicy.class,
                section.get(RuntimeConfigSpecs.FINGERPRINT_MISMATCH));
        this.ordering = RuntimeConfigSpecs.enumValue(Ordering.class, section.get(RuntimeConfigSpecs.ORDERING));
        this.retry = new RetryPolicy(section.get(RuntimeConfigSpecs.RETRY_MAX_ATTEMPTS),
                section.get(RuntimeConfigSpecs.RETRY_INITIAL_BACKOFF), section.get(RuntimeConfigSpecs.RETRY_MAX_BACKOFF),
                section.get(RuntimeConfigSpecs.RETRY_MULTIPLIER), section.get(RuntimeConfigSpecs.RETRY_CONFLICT_ATTEMPTS));
        this.commit = new CommitPolicy(section.get(RuntimeConfigSpecs.COMMIT_LINGER),
                section.get(RuntimeConfigSpecs.COMMIT_BATCH_SIZE), section.get(RuntimeConfigSpecs.COMMIT_WRITERS));
        String schema = section.get(RuntimeConfigSpecs.PAYLOAD_SCHEMA);
        String format = section.get(RuntimeConfigSpecs.PAYLOAD_FORMAT);
        this.payload = new PayloadPolicy(
                format == null ? null : RuntimeConfigSpecs.enumValue(PayloadPolicy.Format.class, format),
                RuntimeConfigSpecs.enumValue(PayloadPolicy.UnknownFields.class,
                        section.get(RuntimeConfigSpecs.PAYLOAD_UNKNOWN_FIELDS)),
                schema == null ? null : Path.of(schema));
        this.groupSavepoints = RuntimeConfigSpecs.enumValue(TransactionalDedupStore.Savepoints.class,
                section.get(RuntimeConfigSpecs.TRANSACTIONAL_SAVEPOINTS));
        this.concurrency = section.get(RuntimeConfigSpecs.CONCURRENCY);
        this.maxInFlight = section.get(RuntimeConfigSpecs.MAX_IN_FLIGHT);
        this.lease = section.get(RuntimeConfigSpecs.LEASE);
        this.retention = section.get(RuntimeConfigSpecs.RETENTION);
        this.handlerTimeout = section.get(RuntimeConfigSpecs.HANDLER_TIMEOUT);
    }

    /**
     * The value of any key {@link RuntimeConfigSpecs#PIPELINE} declares, typed as declared: the user's value, the
     * default, or {@code null} for an optional key left out.
     *
     * @throws IllegalArgumentException for a key the pipeline section does not declare
     */
    public <T> T get(ConfigKey<T> key) {
        return section.get(key);
    }

    /** The validated section, for printing it back. */
    SectionConfig section() {
        return section;
    }

    /** The pipeline's name: the consumer name, and the key namespace unless {@link #namespace} is set. */
    public String name() {
        return name;
    }

    /** The topic or queue consumed. */
    public String source() {
        return section.get(RuntimeConfigSpecs.SOURCE);
    }

    /** The handler class name, or {@code null} when the handler is bound programmatically. */
    public String handler() {
        return section.get(RuntimeConfigSpecs.HANDLER);
    }

    /** The handler's settings ({@code handler-settings}), handed to its {@code init}; empty when none are set. */
    public HandlerSettings handlerSettings() {
        return handlerSettings;
    }

    /** The scope of its keys in the store: the pipeline's name unless configured. */
    public String namespace() {
        return namespace;
    }

    /** The extractor chain; the first that finds a key wins. */
    public List<PluginSection> idExtractors() {
        return idExtractors;
    }

    /** The extractor chain of the ordering key; empty for the broker's key, else the idempotency key. */
    public List<PluginSection> orderingKey() {
        return orderingKey;
    }

    public MissingIdPolicy missingId() {
        return missingId;
    }

    public FingerprintMode fingerprint() {
        return fingerprint;
    }

    public MismatchPolicy fingerprintMismatch() {
        return fingerprintMismatch;
    }

    public Ordering ordering() {
        return ordering;
    }

    /** How many handler runs at once. */
    public int concurrency() {
        return concurrency;
    }

    /** How many deliveries the pipeline holds unsettled at once (back-pressure). */
    public int maxInFlight() {
        return maxInFlight;
    }

    /** How long a claim is exclusive before it may be taken over; renewed while the handler runs. */
    public Duration lease() {
        return lease;
    }

    /** How long a completed key is remembered. */
    public Duration retention() {
        return retention;
    }

    /** How long one handler run may take before it is interrupted. */
    public Duration handlerTimeout() {
        return handlerTimeout;
    }

    /** In-process retries of a failing handler. */
    public RetryPolicy retry() {
        return retry;
    }

    /** How completions are batched to the store in plain mode. */
    public CommitPolicy commit() {
        return commit;
    }

    /** How payloads are read before the handler runs ({@code payload.*}). */
    public PayloadPolicy payload() {
        return payload;
    }

    /** Claims of one key without completion (crashed consumers) before dead-lettering. */
    public int maxDeliveries() {
        return section.get(RuntimeConfigSpecs.MAX_DELIVERIES);
    }

    /** The dead-letter destination, or {@code null} for the adapter's default. */
    public String deadLetter() {
        return section.get(RuntimeConfigSpecs.DEAD_LETTER);
    }

    /** Whether the key is recorded in the handler's own database transaction. */
    public boolean transactional() {
        return section.get(RuntimeConfigSpecs.TRANSACTIONAL);
    }

    /** The per-aggregate sequence guard, or {@code null} for none. */
    public SequencePolicy sequence() {
        return sequence;
    }

    /** The header that carries the deterministic ID of each message the handler emits. */
    public String emitIdHeader() {
        return section.get(RuntimeConfigSpecs.EMIT_ID_HEADER);
    }

    /** In transactional mode, how many messages at most share one database transaction. */
    public int transactionGroup() {
        return section.get(RuntimeConfigSpecs.TRANSACTIONAL_GROUP);
    }

    /**
     * Whether {@code transactional.group} asks for groups of its own: set to a value above 1 other than its default,
     * which a batch handler (one transaction per batch already) is refused with.
     */
    public boolean transactionGroupChosen() {
        int group = transactionGroup();
        return group > 1 && group != RuntimeConfigSpecs.TRANSACTIONAL_GROUP.defaultValue();
    }

    /** The largest reply a handler may send, in bytes. */
    public int replyMaxSize() {
        return section.get(RuntimeConfigSpecs.REPLY_MAX_SIZE);
    }

    /** For a batch handler, the most messages one call takes. */
    public int batchSize() {
        return section.get(RuntimeConfigSpecs.BATCH_SIZE);
    }

    /** For a batch handler, the longest a worker waits for a batch to fill. */
    public Duration batchLinger() {
        return section.get(RuntimeConfigSpecs.BATCH_LINGER);
    }

    /** Where a group's savepoints are set. */
    public TransactionalDedupStore.Savepoints groupSavepoints() {
        return groupSavepoints;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PipelineConfig other && other.name.equals(name) && other.section.equals(section)
                && other.idExtractors.equals(idExtractors) && other.orderingKey.equals(orderingKey)
                && Objects.equals(other.sequence, sequence);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, section, idExtractors, orderingKey, sequence);
    }

    /** Every setting, secrets masked; the handler's settings by name only, as {@link HandlerSettings} shows them. */
    @Override
    public String toString() {
        StringJoiner s = new StringJoiner(", ", "PipelineConfig[" + name + ": ", "]");
        for (ConfigKey<?> key : section.spec().keys()) {
            Object value = section.value(key.name());
            if (key.name().equals(RuntimeConfigSpecs.HANDLER_SETTINGS.name())) {
                s.add(key.name() + "=" + handlerSettings);
            } else if (value != null) {
                s.add(key.name() + "=" + Masking.display(key, value));
            }
        }
        s.add("id=" + idExtractors);
        if (!orderingKey.isEmpty()) {
            s.add("ordering-key=" + orderingKey);
        }
        if (sequence != null) {
            s.add("sequence=" + sequence);
        }
        return s.toString();
    }

    /** What happens to a message whose key is missing, over 512 bytes, or not valid UTF-8. */
    public enum MissingIdPolicy {
        /** Dead-letter it without running the handler. */
        DEAD_LETTER,
        /** Use the SHA-256 of the payload as its key. */
        HASH,
        /** Run the handler without any claim: no protection against duplicates. */
        UNPROTECTED
    }

    /** How the payload fingerprint stored with each key is computed. */
    public enum FingerprintMode {
        /** SHA-256 of the payload. */
        SHA256,
        /** No fingerprint: a duplicate is never checked for a different payload. */
        NONE
    }

    /** What happens to a duplicate key whose payload fingerprint differs from the completed one. */
    public enum MismatchPolicy {
        /** Dead-letter it: the same key with another payload is a producer bug worth a look. */
        DEAD_LETTER,
        /** Ack it like any duplicate, counting the mismatch. */
        SKIP,
        /** Run the handler anyway, unprotected, then ack. */
        PROCESS
    }

    /** What is kept in order under concurrency. */
    public enum Ordering {
        /** Messages of one partition run one at a time, in order. */
        PARTITION,
        /** Messages with one ordering key run one at a time, in order. */
        KEY,
        /** No order: any message may run on any worker. */
        NONE
    }
}
