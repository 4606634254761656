package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.StageFixture.delivery;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.runtime.config.PipelineConfig.MissingIdPolicy;
import dev.idem.runtime.internal.pipeline.StageFixture.RecordingDelivery;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.Delivery;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The intake stage on its own: copies of one key in one batch, while a copy from an earlier batch still holds the key
 * in this pipeline.
 */
class IntakeTest {

    private final StageFixture f = new StageFixture();
    private final Claims claims = new Claims(f.state, f.storeCalls, f.inFlight, f.outcomes, f.settlement);

    @AfterEach
    void close() {
        f.close();
    }

    /**
     * The batch's first copy follows the holder; the holder finishes (its worker completes and acks it, which acks
     * the first copy with it) while the intake still reads the batch; the second copy, which would have followed the
     * first, is then no longer taken by it and must go its own way: found completed in the store, acked as a
     * duplicate. Before, it stayed in flight for good, never settled (seen after RabbitMQ connection resets, where a
     * redelivery and a repeat of one ID met in a batch while the original still ran).
     */
    @Test
    void aCopyWhoseBatchmateWasSettledWithItsHolderMeanwhileIsStillSettled() throws Exception {
        f.inFlight.admit(1);
        Work holder = f.work("k1", "p");
        holder.counted = true;
        ClaimResult.Acquired acquired = f.acquire(holder);
        IdExtractor extractor = message -> {
            if (message.headers().containsKey("second")) {
                // The holder's worker, finishing between the intake's look at the first copy and at this one.
                assertThat(f.store.real.complete(holder.storeKey, acquired.token(), f.config.retention())).isTrue();
                f.settlement.ack(holder, f.outcomes.processed);
            }
            return message.headers().get("id");
        };
        Intake intake = new Intake(f.state, f.inFlight, new KeyResolver(List.of(extractor), MissingIdPolicy.DEAD_LETTER),
                new OrderKeys(f.config.ordering(), List.of()), claims, f.outcomes, f.settlement,
                null /* nothing in this batch is to run: a dispatch would fail the test */, null);
        RecordingDelivery first = received("k1", Map.of());
        RecordingDelivery second = received("k1", Map.of("second", "true"));

        intake.onDeliveries(List.<Delivery>of(first, second));

        assertThat(delivery(holder).settlements).containsExactly("ack");
        assertThat(first.settlements).as("the first copy, acked with its holder").containsExactly("ack");
        assertThat(second.settlements).as("the second copy").containsExactly("ack");
        assertThat(f.count("processed")).isEqualTo(1);
        assertThat(f.count("duplicate")).isEqualTo(2);
        assertThat(f.inFlight.count()).as("in flight").isZero();
    }

    private RecordingDelivery received(String id, Map<String, String> extraHeaders) {
        Map<String, String> headers = new HashMap<>(extraHeaders);
        headers.put("id", id);
        InboundMessage message = new InboundMessage("orders", null, null, headers,
                "p".getBytes(StandardCharsets.UTF_8), "broker-" + id, true, 2);
        return new RecordingDelivery(message, id, f.events);
    }
}
