package dev.idem.adapter.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.adapter.kafka.KafkaDelivery.Settle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class SettleQueueTest {

    private static final long LONG_WAIT_MILLIS = TimeUnit.SECONDS.toMillis(30);

    private final SettleQueue queue = new SettleQueue();

    @Test
    void aWaitForRoomThatIsThereReturnsAtOnce() {
        queue.handedOver(3);

        assertThat(queue.awaitUnsettledAtMost(3, LONG_WAIT_MILLIS)).isTrue();
    }

    @Test
    void aWaitEndsWithTheSettleThatBringsTheCountDownToItsMark() throws Exception {
        queue.handedOver(5);
        CompletableFuture<Boolean> waited = CompletableFuture.supplyAsync(
                () -> queue.awaitUnsettledAtMost(2, LONG_WAIT_MILLIS));

        Settle[] settles = new Settle[3];
        for (int i = 0; i < settles.length; i++) {
            settles[i] = new Settle(null, Settle.Kind.ACK, 0);
            queue.settled(settles[i]);
        }

        assertThat(waited.get(LONG_WAIT_MILLIS, TimeUnit.MILLISECONDS)).isTrue();
        assertThat(queue.unsettled()).isEqualTo(2);
        // Queued before the count fell: the woken thread finds every one, in order.
        assertThat(queue.poll()).isSameAs(settles[0]);
        assertThat(queue.poll()).isSameAs(settles[1]);
        assertThat(queue.poll()).isSameAs(settles[2]);
        assertThat(queue.poll()).isNull();
    }

    @Test
    void aSettleWithNothingToApplyStillMakesRoom() throws Exception {
        queue.handedOver(1);
        CompletableFuture<Boolean> waited = CompletableFuture.supplyAsync(
                () -> queue.awaitUnsettledAtMost(0, LONG_WAIT_MILLIS));

        queue.settled(null);

        assertThat(waited.get(LONG_WAIT_MILLIS, TimeUnit.MILLISECONDS)).isTrue();
        assertThat(queue.poll()).isNull();
    }

    @Test
    void aRetryEndsTheWaitBeforeTheRoomIsThere() throws Exception {
        queue.handedOver(10);
        CompletableFuture<Boolean> waited = new CompletableFuture<>();
        Thread waiter = new Thread(() -> waited.complete(queue.awaitUnsettledAtMost(0, LONG_WAIT_MILLIS)));
        waiter.start();
        // The retry must come while the thread waits, or it would not be the one that ends the wait.
        while (waiter.getState() != Thread.State.TIMED_WAITING) {
            Thread.onSpinWait();
        }
        Settle retry = new Settle(null, Settle.Kind.RETRY, 0);

        queue.settled(retry);

        assertThat(waited.get(LONG_WAIT_MILLIS, TimeUnit.MILLISECONDS)).isFalse();
        assertThat(queue.unsettled()).isEqualTo(9);
        assertThat(queue.poll()).isSameAs(retry);
        waiter.join(LONG_WAIT_MILLIS);
    }

    @Test
    void aWaitWithoutSettlesRunsOutOfTime() {
        queue.handedOver(2);

        assertThat(queue.awaitUnsettledAtMost(1, 20)).isFalse();
        assertThat(queue.poll(20)).isNull();
    }

    @Test
    void pollingWithATimeoutReturnsTheNextSettle() throws Exception {
        queue.handedOver(2);
        CompletableFuture<Settle> polled = CompletableFuture.supplyAsync(() -> queue.poll(LONG_WAIT_MILLIS));
        Settle ack = new Settle(null, Settle.Kind.ACK, 0);

        queue.settled(ack);

        assertThat(polled.get(LONG_WAIT_MILLIS, TimeUnit.MILLISECONDS)).isSameAs(ack);
    }

    @Test
    void anInterruptEndsTheWaitAndStaysSet() throws Exception {
        queue.handedOver(1);
        CompletableFuture<Boolean> interruptedAfter = new CompletableFuture<>();
        Thread waiter = new Thread(() -> {
            boolean room = queue.awaitUnsettledAtMost(0, LONG_WAIT_MILLIS);
            interruptedAfter.complete(!room && Thread.currentThread().isInterrupted());
        });
        waiter.start();

        waiter.interrupt();

        assertThat(interruptedAfter.get(LONG_WAIT_MILLIS, TimeUnit.MILLISECONDS)).isTrue();
        waiter.join(LONG_WAIT_MILLIS);
    }
}
