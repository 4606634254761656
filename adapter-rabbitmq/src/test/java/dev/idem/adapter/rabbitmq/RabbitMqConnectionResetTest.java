package dev.idem.adapter.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredKey;
import dev.idem.store.caffeine.CaffeineDedupStoreProvider;
import dev.idem.testkit.TestPluginConfig;
import dev.idem.testkit.fault.AckAudit;
import dev.idem.testkit.fault.FaultProxy;
import dev.idem.testkit.fault.HandlerRuns;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The whole runtime on RabbitMQ reached through a {@link FaultProxy}, whose connections are reset (TCP RST, as a
 * dying load balancer or a broken link ends them) three times while acks flow, with the Caffeine store. The adapter
 * re-opens its connections; the deliveries of the dead channels come back, and acks sent for them on the dead
 * channels count for nothing (docs/design.md, "Acknowledgement per broker"). Nothing may be lost (every ID ran and
 * the queue ends empty once the runtime stopped, i.e. the broker holds every message acked), nothing acked early
 * (each ack is checked, when it is given, against the store: the key must be completed), and no handler may run
 * twice: a redelivered message finds its key completed, or follows the copy still running. Prints a {@code [fault]}
 * line.
 */
class RabbitMqConnectionResetTest {

    private static final int UNIQUE = 2_400;
    /** Every eighth ID again, 50 messages later. */
    private static final int REPEATS = UNIQUE / 8;
    private static final String PIPELINE = "orders";

    private final String queue = RabbitMqTestBroker.uniqueQueue("idem-reset");

    @BeforeAll
    static void locateBroker() {
        RabbitMqTestBroker.url();
    }

    @AfterEach
    void cleanUp() {
        RabbitMqTestBroker.delete(queue);
        RabbitMqTestBroker.delete(queue + ".DLQ");
    }

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void connectionResetsDuringAcksLoseNothingAckNothingEarlyAndReRunNoHandler() throws Exception {
        RabbitMqTestBroker.declare(queue);
        List<String> ids = publish();
        CaffeineDedupStoreProvider stores = new CaffeineDedupStoreProvider();
        InspectableDedupStore store = (InspectableDedupStore) stores.create(
                TestPluginConfig.defaults("store.caffeine", stores.configSpec()), StoreContext.system());
        HandlerRuns runs = new HandlerRuns();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        ConcurrentLinkedQueue<Long> redeliveries = new ConcurrentLinkedQueue<>();
        List<Long> resetsAt = new ArrayList<>();
        List<Integer> connectionsReset = new ArrayList<>();
        try (FaultProxy proxy = FaultProxy.forUrl(RabbitMqTestBroker.url())) {
            BrokerAdapter adapter = RabbitMqTestBroker.adapter(RabbitMqTestBroker.config()
                    .with("uri", proxy.proxiedUrl(RabbitMqTestBroker.url())).with("consumers", 2));
            AckAudit audit = new AckAudit(adapter, message -> completed(store, message), true);
            IdemRuntime runtime = Idem.builder().configYaml("""
                    broker: { type: audited-rabbitmq }
                    store: { type: caffeine }
                    runtime: { http.enabled: false }
                    pipelines:
                      %s:
                        source: %s
                        ordering: none
                        concurrency: 8
                        max-in-flight: 200
                    """.formatted(PIPELINE, queue)).env(Map.of())
                    .broker("audited-rabbitmq", audit)
                    .store("caffeine", store)
                    .meterRegistry(meters)
                    .outcomeListener((pipeline, outcome, message, key) -> {
                        if (message.redelivered()) {
                            redeliveries.add(System.nanoTime());
                        }
                    })
                    .handler(PIPELINE, (message, context) -> {
                        runs.record(message.idempotencyKey().orElseThrow());
                        Thread.sleep(2);
                    })
                    .start();
            try {
                for (int at : new int[] {UNIQUE / 5, UNIQUE * 2 / 5, UNIQUE * 3 / 5}) {
                    await().atMost(Duration.ofSeconds(60)).until(() -> count(meters, "processed") >= at);
                    resetsAt.add(System.nanoTime());
                    connectionsReset.add(proxy.reset());
                }
                try {
                    await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50))
                            .until(() -> runs.keys().size() == UNIQUE && runtime.inFlight() == 0
                                    && RabbitMqTestBroker.ready(queue) == 0);
                } catch (ConditionTimeoutException e) {
                    throw new AssertionError(String.format("Not settled within 90 s: IDs run %d of %d, in flight %d,"
                            + " ready in the queue %d; outcomes %s", runs.keys().size(), UNIQUE, runtime.inFlight(),
                            RabbitMqTestBroker.ready(queue), outcomes(meters)), e);
                }
            } finally {
                runtime.stop(Duration.ofSeconds(10));
                audit.close();
            }

            assertThat(connectionsReset).as("connections reset each time").allMatch(n -> n >= 1);
            assertThat(RabbitMqTestBroker.ready(queue)).as("left in the queue once the runtime stopped: every"
                    + " message is acked at the broker").isZero();
            assertThat(RabbitMqTestBroker.ready(queue + ".DLQ")).as("dead letters").isZero();
            assertThat(runs.neverRan(ids)).as("IDs whose handler never ran").isEmpty();
            assertThat(Set.copyOf(ids).stream().filter(id -> store.inspect(new StoreKey(PIPELINE, id))
                    .map(k -> k.state() != StoredKey.State.COMPLETED).orElse(true)).toList())
                    .as("IDs not completed in the store").isEmpty();
            assertThat(audit.earlyAcks()).as("acks given before the key was completed").isEmpty();
            assertThat(runs.reruns()).as("handler re-runs (IDs %s); outcomes %s", runs.rerunKeys(),
                    outcomes(meters)).isZero();
            assertThat(count(meters, "processed")).isEqualTo(UNIQUE);

            long redelivered = (long) (count(meters, "duplicate") - REPEATS);
            List<Long> recoveries = new ArrayList<>();
            for (long at : resetsAt) {
                recoveries.add(redeliveries.stream().filter(t -> t - at >= 0).min(Long::compare)
                        .map(t -> TimeUnit.NANOSECONDS.toMillis(t - at)).orElse(-1L));
            }
            System.out.printf("[fault] RabbitMQ connections reset during acks: published %,d (%,d unique, %,d"
                    + " repeats); resets %d (connections reset %s, %d proxied connections in all); acks given %,d,"
                    + " redeliveries found completed (duplicates beyond the repeats) %,d; lost %d; early acks"
                    + " %d; handler runs %,d (re-runs %d); consuming again (first redelivery settled) %s ms after each"
                    + " reset%n", ids.size(),
                    UNIQUE, REPEATS, resetsAt.size(), connectionsReset, proxy.acceptedConnections(), audit.acks(),
                    redelivered, runs.neverRan(ids).size(), audit.earlyAcks().size(), runs.total(), runs.reruns(),
                    recoveries);
        } finally {
            store.close();
        }
    }

    private static boolean completed(InspectableDedupStore store, InboundMessage message) {
        return store.inspect(new StoreKey(PIPELINE, message.headers().get("message-id")))
                .map(k -> k.state() == StoredKey.State.COMPLETED).orElse(false);
    }

    /** {@value #UNIQUE} IDs, every eighth sent again 50 messages after its original, published directly. */
    private List<String> publish() {
        List<String> ordered = new ArrayList<>(UNIQUE + REPEATS);
        for (int i = 0; i < UNIQUE; i++) {
            ordered.add("order-" + i);
            int copy = i - 50;
            if (copy >= 0 && copy % 8 == 0) {
                ordered.add("order-" + copy);
            }
        }
        for (int copy = UNIQUE - 50; copy < UNIQUE; copy++) {
            if (copy % 8 == 0) {
                ordered.add("order-" + copy);
            }
        }
        assertThat(ordered).hasSize(UNIQUE + REPEATS);
        RabbitMqTestBroker.onChannel(ch -> {
            ch.confirmSelect();
            for (String id : ordered) {
                ch.basicPublish("", queue, new AMQP.BasicProperties.Builder().messageId(id).deliveryMode(2).build(),
                        ("payload of " + id).getBytes(StandardCharsets.UTF_8));
            }
            try {
                ch.waitForConfirmsOrDie(30_000);
            } catch (InterruptedException | TimeoutException e) {
                throw new IOException(e);
            }
            return null;
        });
        return ordered;
    }

    private static double count(SimpleMeterRegistry meters, String outcome) {
        return meters.find("idem.messages").tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }

    private static Map<String, Double> outcomes(SimpleMeterRegistry meters) {
        return meters.find("idem.messages").counters().stream().collect(Collectors.groupingBy(
                c -> c.getId().getTag("outcome"), TreeMap::new, Collectors.summingDouble(Counter::count)));
    }
}
