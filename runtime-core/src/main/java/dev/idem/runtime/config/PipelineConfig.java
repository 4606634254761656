package dev.idem.runtime.config;

import dev.idem.api.HandlerSettings;
import dev.idem.spi.TransactionalDedupStore;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One pipeline's validated settings ({@code pipelines.<name>}).
 *
 * @param name the pipeline's name: the consumer name and the store key namespace
 * @param source the topic or queue consumed
 * @param handler the handler class name, or {@code null} when the handler is bound programmatically
 * @param handlerSettings the handler's settings ({@code handler-settings}), handed to
 *        {@link dev.idem.api.HandlerLifecycle#init}; empty when none are set, never {@code null} once constructed
 * @param namespace the scope of its keys in the store: the pipeline's name unless configured
 * @param idExtractors the extractor chain; the first that finds a key wins
 * @param orderingKey the extractor chain of the ordering key; empty for the broker's key, else the idempotency key
 * @param missingId what happens to a message without a usable key
 * @param fingerprint how payloads are fingerprinted
 * @param fingerprintMismatch what happens to a duplicate whose payload differs
 * @param ordering what must be processed in order
 * @param concurrency how many handler runs at once
 * @param maxInFlight how many deliveries the pipeline holds unsettled at once (back-pressure)
 * @param lease how long a claim is exclusive before it may be taken over; renewed while the handler runs
 * @param retention how long a completed key is remembered
 * @param handlerTimeout how long one handler run may take before it is interrupted
 * @param retry in-process retries of a failing handler
 * @param commit how completions are batched to the store in plain mode
 * @param maxDeliveries claims of one key without completion (crashed consumers) before dead-lettering
 * @param deadLetter the dead-letter destination, or {@code null} for the adapter's default
 * @param transactional whether the key is recorded in the handler's own database transaction
 * @param sequence the per-aggregate sequence guard, or {@code null} for none
 * @param emitIdHeader the header that carries the deterministic ID of each message the handler emits
 * @param transactionGroup in transactional mode, how many messages at most share one database transaction
 * @param groupSavepoints where a group's savepoints are set
 */
public record PipelineConfig(
        String name,
        String source,
        String handler,
        HandlerSettings handlerSettings,
        String namespace,
        List<PluginSection> idExtractors,
        List<PluginSection> orderingKey,
        MissingIdPolicy missingId,
        FingerprintMode fingerprint,
        MismatchPolicy fingerprintMismatch,
        Ordering ordering,
        int concurrency,
        int maxInFlight,
        Duration lease,
        Duration retention,
        Duration handlerTimeout,
        RetryPolicy retry,
        CommitPolicy commit,
        int maxDeliveries,
        String deadLetter,
        boolean transactional,
        SequencePolicy sequence,
        String emitIdHeader,
        int transactionGroup,
        TransactionalDedupStore.Savepoints groupSavepoints) {

    public PipelineConfig {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(source, "source");
        namespace = namespace == null ? name : namespace;
        handlerSettings = handlerSettings == null ? HandlerSettings.of(name, Map.of()) : handlerSettings;
        idExtractors = List.copyOf(idExtractors);
        orderingKey = List.copyOf(orderingKey);
        emitIdHeader = emitIdHeader == null ? "message-id" : emitIdHeader;
        transactionGroup = Math.max(1, transactionGroup);
        groupSavepoints = groupSavepoints == null ? TransactionalDedupStore.Savepoints.PER_MESSAGE : groupSavepoints;
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
