package dev.idem.spi;

import java.util.Objects;

/**
 * What a pipeline asks an adapter to consume.
 *
 * @param pipeline the pipeline's name; adapters use it as the consumer group or subscription name
 * @param source the topic or queue to consume
 * @param maxInFlight the most deliveries the pipeline holds unsettled at once; adapters size
 *        prefetch and fetch windows by it
 * @param deadLetterDestination where dead-lettered messages go, or {@code null} for the adapter's default
 */
public record SubscriptionRequest(String pipeline, String source, int maxInFlight, String deadLetterDestination) {

    public SubscriptionRequest {
        Objects.requireNonNull(pipeline, "pipeline");
        Objects.requireNonNull(source, "source");
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("maxInFlight must be at least 1: " + maxInFlight);
        }
    }
}
