package dev.idem.runtime.internal.pipeline;

import dev.idem.runtime.config.PipelineConfig.Ordering;
import dev.idem.spi.IdExtractor;
import java.util.List;

/**
 * Finds the key a message runs in order under. {@code partition}: its partition, or its source where
 * the broker has none. {@code key}: the pipeline's {@code ordering-key} extractors if set, else the
 * broker's own ordering key (Kafka record key, {@code JMSXGroupID}; never an AMQP routing key), else
 * the idempotency key. {@code none}, or no key at all: {@code null}, ordered with nothing. Thread-safe.
 */
final class OrderKeys {

    private final Ordering ordering;
    private final IdExtractor[] extractors;

    OrderKeys(Ordering ordering, List<IdExtractor> extractors) {
        this.ordering = ordering;
        this.extractors = extractors.toArray(new IdExtractor[0]);
    }

    String of(Work w) {
        switch (ordering) {
            case NONE:
                return null;
            case PARTITION:
                return w.message.partition() != null ? w.message.partition() : w.message.source();
            default:
                for (IdExtractor extractor : extractors) {
                    String key;
                    try {
                        key = extractor.extract(w.message);
                    } catch (RuntimeException e) {
                        // A message the extractor cannot read (not JSON, say) falls back to the defaults below.
                        key = null;
                    }
                    if (key != null && !key.isEmpty()) {
                        return key;
                    }
                }
                return w.message.orderingKey() != null ? w.message.orderingKey() : w.key;
        }
    }
}
