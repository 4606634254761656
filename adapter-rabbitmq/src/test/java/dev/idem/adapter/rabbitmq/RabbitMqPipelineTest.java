package dev.idem.adapter.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The whole runtime on RabbitMQ, the adapter created from YAML through its provider, with the Caffeine store:
 * messages whose AMQP message-id repeats run the handler once per id, and the queue ends empty.
 */
class RabbitMqPipelineTest {

    private static final int MESSAGES = 2_000;
    private static final int UNIQUE = 1_600;

    private final String queue = RabbitMqTestBroker.uniqueQueue("idem-pipeline");

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
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void duplicatesByMessageIdRunTheHandlerOncePerIdAndTheQueueEndsEmpty() throws Exception {
        RabbitMqTestBroker.declare(queue);
        List<String> ids = publishWithDuplicates();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        String yaml = """
                broker:
                  type: rabbitmq
                  rabbitmq:
                    uri: "%s"
                    connection-name: idem-pipeline-test-%s
                    consumers: 2
                    client:
                      requested-heartbeat: 10s
                store: { type: caffeine }
                pipelines:
                  orders:
                    source: %s
                    ordering: none
                    concurrency: 8
                    max-in-flight: 200
                    lease: 2s
                """.formatted(RabbitMqTestBroker.url(), UUID.randomUUID().toString().substring(0, 8), queue);
        IdemRuntime runtime = Idem.builder().configYaml(yaml).env(Map.of())
                .meterRegistry(meters)
                .handler("orders", (message, context) -> runs
                        .computeIfAbsent(message.idempotencyKey().orElseThrow(), k -> new AtomicInteger())
                        .incrementAndGet())
                .start();
        try {
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100))
                    .until(() -> count(meters, "processed") + count(meters, "duplicate") >= MESSAGES);
        } finally {
            runtime.stop(Duration.ofSeconds(10));
        }

        assertThat(runs.keySet()).containsExactlyInAnyOrderElementsOf(ids.stream().distinct().toList());
        assertThat(runs.values()).allMatch(n -> n.get() == 1, "the handler ran once per id");
        assertThat(count(meters, "processed")).isEqualTo(UNIQUE);
        assertThat(count(meters, "duplicate")).isEqualTo(MESSAGES - UNIQUE);
        assertThat(RabbitMqTestBroker.ready(queue)).as("nothing left in the queue").isZero();
        assertThat(RabbitMqTestBroker.ready(queue + ".DLQ")).as("nothing dead-lettered").isZero();
    }

    /** 1,600 ids, 400 of them sent twice (20 % of the messages repeat an id), the copy 50 messages later. */
    private List<String> publishWithDuplicates() {
        List<String> ordered = new ArrayList<>(MESSAGES);
        for (int i = 0; i < UNIQUE; i++) {
            ordered.add("order-" + i);
            int copy = i - 50;
            if (copy >= 0 && copy % 4 == 0) {
                ordered.add("order-" + copy);
            }
        }
        for (int copy = UNIQUE - 50; copy < UNIQUE; copy++) {
            if (copy % 4 == 0) {
                ordered.add("order-" + copy);
            }
        }
        assertThat(ordered).hasSize(MESSAGES);
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
}
