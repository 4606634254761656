package dev.idem.adapter.rocketmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.spi.Delivery;
import dev.idem.spi.DeliveryListener;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The hand-over of a batch cut on the consumer thread, when the batch's queue is revoked before or while the
 * dispatcher thread hands it to the pipeline: the revoked deliveries never reach a pipeline that would not hear of
 * their revocation.
 */
class DispatcherTest {

    private final Lifecycle lifecycle = new Lifecycle();
    private final List<List<String>> handed = new CopyOnWriteArrayList<>();
    private final List<List<String>> revoked = new CopyOnWriteArrayList<>();
    private volatile Consumer<List<Delivery>> whileHanding = batch -> { };
    private final Dispatcher dispatcher = new Dispatcher("orders", new DeliveryListener() {
        @Override
        public void onDeliveries(List<Delivery> batch) {
            whileHanding.accept(batch);
            handed.add(bodies(batch));
        }

        @Override
        public void onRevoked(List<Delivery> deliveries) {
            revoked.add(bodies(deliveries));
        }
    }, lifecycle);

    @AfterEach
    void close() throws InterruptedException {
        lifecycle.close();
        dispatcher.join(5_000);
    }

    @Test
    void deliveriesOfAQueueRevokedBeforeTheHandOverAreNotHandedOver() {
        QueueState kept = queue(0);
        QueueState gone = queue(1);
        List<Delivery> batch = List.of(delivery(kept, 0, "a"), delivery(gone, 0, "b"), delivery(kept, 1, "c"));
        gone.revoked = true;
        dispatcher.start();
        dispatcher.dispatch(batch);

        await().atMost(Duration.ofSeconds(10)).until(() -> !handed.isEmpty());
        assertThat(handed).containsExactly(List.of("a", "c"));
        assertThat(revoked).isEmpty();
    }

    @Test
    void deliveriesOfAQueueRevokedWhileTheListenerTakesThemInAreGivenUpAfterwards() {
        QueueState kept = queue(0);
        QueueState gone = queue(1);
        // The consumer thread's rebalance, between the hand-over's check and the pipeline holding the deliveries.
        whileHanding = b -> gone.revoked = true;
        dispatcher.start();
        dispatcher.dispatch(List.of(delivery(kept, 0, "a"), delivery(gone, 0, "b"), delivery(gone, 1, "c")));

        await().atMost(Duration.ofSeconds(10)).until(() -> !revoked.isEmpty());
        assertThat(handed).containsExactly(List.of("a", "b", "c"));
        assertThat(revoked).containsExactly(List.of("b", "c"));
    }

    private static QueueState queue(int id) {
        return new QueueState(new MessageQueue("orders", "broker-a", id));
    }

    private static Delivery delivery(QueueState queue, long offset, String body) {
        MessageExt message = new MessageExt();
        message.setTopic("orders");
        message.setQueueId(queue.queue.getQueueId());
        message.setQueueOffset(offset);
        message.setBody(body.getBytes(StandardCharsets.UTF_8));
        message.setKeys("key-" + body);
        return new RocketMqDelivery(null, message, queue, queue.deliver(offset));
    }

    private static List<String> bodies(List<Delivery> batch) {
        return batch.stream().map(d -> new String(d.message().payload(), StandardCharsets.UTF_8)).toList();
    }
}
