package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.DLQ;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.config;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.Delivery;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Deliveries the broker takes away from a live process ({@link DeliveryListener#onRevoked}: a partition or queue
 * revoked in a rebalance): the pipeline hands back, claims released and nothing acked, those that do not run, so that
 * their new owner claims them at once. The case that made it needed: a process holding events set aside for a
 * sequence gap while the predecessors they wait for go to another process, which would otherwise wait for the first
 * one's claims while the first waits for the predecessors, until {@code gap-timeout} dead-letters events that had no
 * gap. Two runtimes on one in-memory broker and one Caffeine store; time never moves, so nothing here waits for a
 * timeout.
 */
class RevokedDeliveriesTest {

    private static final String SEQUENCE = """
            sequence:
              aggregate:
                - type: json-pointer
                  pointer: /account
              number:
                - type: header
                  name: event-seq
              gap-timeout: 10s
            """;

    private final PipelineHarness harness = new PipelineHarness();
    /** The sequence numbers the handlers ran per account, in run order, whichever runtime ran them. */
    private final Map<String, List<Long>> applied = new ConcurrentHashMap<>();

    @AfterEach
    void close() {
        harness.close();
    }

    /**
     * A connection to the harness's broker that remembers what it handed its pipeline (once the pipeline took it
     * in), so that a test can take the source away as a rebalance does.
     */
    private static final class Revocable implements BrokerAdapter {
        final BrokerAdapter connection;
        final List<Delivery> handedOver = new CopyOnWriteArrayList<>();
        volatile DeliveryListener listener;
        volatile Subscription subscription;

        Revocable(BrokerAdapter connection) {
            this.connection = connection;
        }

        @Override
        public Subscription subscribe(SubscriptionRequest request, DeliveryListener l) {
            listener = l;
            subscription = connection.subscribe(request, batch -> {
                l.onDeliveries(batch);
                handedOver.addAll(batch);
            });
            return subscription;
        }

        @Override
        public void publish(String destination, OutboundMessage message) {
            connection.publish(destination, message);
        }

        @Override
        public void close() {
            connection.close();
        }

        /** The source goes to another consumer: nothing more comes here, and the pipeline is told what it lost. */
        void revokeAll() {
            subscription.stop();
            listener.onRevoked(List.copyOf(handedOver));
        }
    }

    private IdemRuntime start(String yaml, MessageHandler handler, BrokerAdapter connection) {
        return harness.start(yaml, handler, connection, harness.store, new SimpleMeterRegistry());
    }

    private MessageHandler recording() {
        return (message, context) -> {
            String body = message.payloadAsString();
            String account = body.substring(body.indexOf(":\"") + 2, body.lastIndexOf('"'));
            applied.computeIfAbsent(account, a -> new CopyOnWriteArrayList<>())
                    .add(Long.parseLong(message.headers().get("event-seq")));
        };
    }

    private void publishEvent(String account, long seq) {
        harness.broker.publish(QUEUE, new OutboundMessage(null, null,
                Map.of("message-id", account + "-" + seq, "event-seq", Long.toString(seq)),
                ("{\"account\":\"" + account + "\"}").getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void eventsSetAsideForAGapAreHandedBackWhenRevokedSoTheirNewOwnerRunsTheWholeWindowAtOnce() {
        Revocable a = new Revocable(harness.broker.connect());
        IdemRuntime runtimeA = start(config(SEQUENCE), recording(), a);
        // A gets 3 and 4 before 1 and 2: both wait set aside, holding their claims.
        publishEvent("acct-041", 3);
        publishEvent("acct-041", 4);
        await().until(() -> count(runtimeA, "gap-waited") == 2 && a.handedOver.size() == 2);
        assertThat(harness.broker.unsettled(QUEUE)).isEqualTo(2);

        // A rebalance gives the queue to B: A hands 3 and 4 back at once, unacked, and releases their claims.
        a.revokeAll();
        await().until(() -> harness.broker.depth(QUEUE) == 2 && harness.broker.unsettled(QUEUE) == 0);
        assertThat(runtimeA.inFlight()).isZero();
        assertThat(applied).isEmpty();

        // B receives the whole window, predecessors included, and claims 3 and 4 at once: no deferral behind A's
        // claims, no gap-timeout (time never moves here).
        IdemRuntime runtimeB = start(config(SEQUENCE), recording(), harness.broker.connect());
        publishEvent("acct-041", 1);
        publishEvent("acct-041", 2);
        await().atMost(Duration.ofSeconds(20)).until(() -> count(runtimeB, "processed") == 4);
        harness.awaitSettled();

        assertThat(applied.get("acct-041")).containsExactly(1L, 2L, 3L, 4L);
        assertThat(harness.broker.depth(DLQ)).isZero();
        assertThat(count(runtimeA, "dead-lettered") + count(runtimeB, "dead-lettered")).isZero();
        assertThat(count(runtimeA, "processed")).isZero();
        assertThat(count(runtimeB, "deferred")).as("B never waited for A's claims").isZero();
    }

    @Test
    void aRunningWorkFinishesWhenRevokedWhileTheWorkQueuedBehindItGoesBackAndRevokingSettledOnesDoesNothing()
            throws InterruptedException {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        List<String> ran = new CopyOnWriteArrayList<>();
        MessageHandler handler = (message, context) -> {
            String id = message.headers().get("message-id");
            if (id.equals("x-1")) {
                started.countDown();
                try {
                    if (!release.await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("never released");
                    }
                } catch (InterruptedException e) {
                    interrupted.set(true);
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                }
            }
            ran.add(id);
        };
        Revocable a = new Revocable(harness.broker.connect());
        IdemRuntime runtime = start(config(""), handler, a);
        harness.publish("x-1", "k", "p");
        harness.publish("x-2", "k", "p");
        assertThat(started.await(20, TimeUnit.SECONDS)).isTrue();
        await().until(() -> a.handedOver.size() == 2);

        // x-2 waits behind x-1, which runs, on their key: x-2 goes back unacked, x-1 runs on.
        a.revokeAll();
        await().until(() -> harness.broker.depth(QUEUE) == 1);
        assertThat(harness.broker.unsettled(QUEUE)).isEqualTo(1);
        assertThat(ran).isEmpty();

        release.countDown();
        await().until(() -> count(runtime, "processed") == 1 && harness.broker.unsettled(QUEUE) == 0);
        assertThat(interrupted).isFalse();
        assertThat(ran).containsExactly("x-1");
        assertThat(runtime.inFlight()).isZero();

        // Revoking deliveries settled already changes nothing.
        a.listener.onRevoked(List.copyOf(a.handedOver));
        assertThat(harness.broker.depth(QUEUE)).isEqualTo(1);
        assertThat(harness.broker.unsettled(QUEUE)).isZero();
        assertThat(count(runtime, "processed")).isEqualTo(1);
        assertThat(ran).containsExactly("x-1");
    }
}
