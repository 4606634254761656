package dev.idem.runtime.internal.pipeline;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.ReplyAddress;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoredReply;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Request/reply: what a handler's {@code context.reply} records for its run, and sending a reply to a request's
 * {@link ReplyAddress}, the run's own or, for a duplicate, the one stored with the key ({@link ReplyStore}). A reply's
 * message ID is derived from the namespace and the key, so every copy of one reply carries the same ID, and its
 * correlation ID is the request's own. Thread-safe.
 */
final class Replies {

    private static final Logger log = LoggerFactory.getLogger(Replies.class);

    /** The scope of a reply's derived message ID. */
    private static final String REPLY_SCOPE = "reply";

    private final PipelineState s;
    /** The store's reply capability, or {@code null} when it keeps no replies. */
    private final ReplyStore store;
    private final String storeName;
    private final int maxSize;
    private final PipelineMetrics metrics;

    Replies(PipelineState state, DedupStore store, String storeName, int maxSize, PipelineMetrics metrics) {
        this.s = state;
        this.metrics = metrics;
        this.store = store instanceof ReplyStore r ? r : null;
        this.storeName = storeName;
        this.maxSize = maxSize;
    }

    /** The run's reply, checked: {@code w} asks for one, has a key, the store keeps replies, the size fits. */
    StoredReply check(Work w, byte[] payload, Map<String, String> headers) {
        Objects.requireNonNull(payload, "payload");
        Objects.requireNonNull(headers, "headers");
        if (w.message.replyTo() == null) {
            throw new IllegalStateException("The message " + w.describe() + " of pipeline '" + s.name + "' carries no"
                    + " reply address (AMQP reply_to, JMSReplyTo, Kafka kafka_replyTopic): there is nowhere to reply"
                    + " to. Check message.replyTo() first");
        }
        if (w.key == null || w.storeKey == null) {
            throw new IllegalStateException("pipeline '" + s.name + "' runs " + w.describe() + " without an"
                    + " idempotency key, so its reply could not be kept for its duplicates; give it a key (pipelines."
                    + s.name + ".id)");
        }
        if (store == null) {
            throw new UnsupportedOperationException("pipeline '" + s.name + "' cannot reply: its dedup store "
                    + storeName + " keeps no replies (it does not implement dev.idem.spi.ReplyStore). Use the"
                    + " Caffeine, Redis or JDBC store");
        }
        StoredReply reply = new StoredReply(payload, headers);
        if (reply.size() > maxSize) {
            throw new IllegalArgumentException("The reply of " + w.describe() + " weighs " + reply.size()
                    + " bytes, more than pipelines." + s.name + ".reply.max-size (" + maxSize + ")");
        }
        return reply;
    }

    /** The store's reply capability; only for a run whose reply passed {@link #check}. */
    ReplyStore store() {
        return store;
    }

    /** The reply of {@code w} as the message published to its reply address (through the outbox or directly). */
    OutboxStore.Emitted message(Work w, StoredReply reply) {
        return message(w.message.replyTo(), w.key, reply);
    }

    private OutboxStore.Emitted message(ReplyAddress to, String key, StoredReply reply) {
        Map<String, String> headers = new LinkedHashMap<>(reply.headers());
        headers.put(ReplyAddress.CORRELATION_ID_HEADER, to.correlationHeader());
        String id = Emissions.callKeyOf(s.namespace, key, REPLY_SCOPE);
        headers.put(s.config.emitIdHeader(), id);
        return new OutboxStore.Emitted(to.destination(), new OutboundMessage(id, null, headers, reply.payload()));
    }

    /**
     * Before {@code w}, a request, is acked: sends its reply, the run's when it ran now and its reply was not written
     * to the outbox, or the one stored with its key when it is a duplicate (or a follower of a run). True when the
     * request may be acked: the reply was confirmed by the broker, or there is none to send.
     */
    boolean beforeAck(Work w, boolean duplicate) {
        ReplyAddress to = w.message.replyTo();
        if (to == null) {
            return true;
        }
        StoredReply reply;
        if (!duplicate) {
            if (w.run.reply == null || w.run.replyInOutbox) {
                return true;
            }
            reply = w.run.reply;
        } else {
            if (store == null || w.storeKey == null) {
                return true;
            }
            try {
                Optional<StoredReply> stored = store.reply(w.storeKey);
                if (stored.isEmpty()) {
                    return true;
                }
                reply = stored.get();
            } catch (StoreException e) {
                log.warn("Pipeline '{}': could not read the stored reply of duplicate {} ({}); it goes back to the"
                        + " broker", s.name, w.describe(), e.getMessage());
                return false;
            }
        }
        OutboxStore.Emitted message = message(to, w.key, reply);
        BrokerAdapter adapter = s.adapter;
        try {
            adapter.publish(message.destination(), message.message());
            (duplicate ? metrics.repliesFromStore : metrics.repliesFromRun).increment();
            return true;
        } catch (RuntimeException e) {
            log.warn("Pipeline '{}': the reply to {} was not confirmed by the broker ({}); the request goes back,"
                    + " and its redelivery, a duplicate, sends the stored reply", s.name, w.describe(), e.getMessage());
            return false;
        }
    }
}
