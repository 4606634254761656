package dev.idem.bench;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.OutboundMessage;
import dev.idem.testkit.memory.InMemoryBroker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A self-contained run of the core: the in-memory broker receives orders, a fifth of them twice,
 * and a pipeline on the Caffeine store charges each order exactly once. Stands in for
 * {@code idem demo} until the distribution exists.
 *
 * <p>Run: {@code mvn -q -pl bench -am package -DskipTests && java -cp bench/target/benchmarks.jar dev.idem.bench.Demo}
 */
public final class Demo {

    private Demo() {
    }

    public static void main(String[] args) throws Exception {
        int orders = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
        InMemoryBroker broker = new InMemoryBroker();
        Map<String, AtomicInteger> charges = new ConcurrentHashMap<>();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        String yaml = """
                broker: { type: memory }
                store: { type: caffeine }
                pipelines:
                  payments:
                    source: orders
                    id:
                      - type: header
                        name: message-id
                    ordering: key
                    concurrency: 4
                """;
        int published = 0;
        for (int i = 0; i < orders; i++) {
            int copies = i % 5 == 0 ? 2 : 1;
            for (int c = 0; c < copies; c++) {
                broker.publish("orders", new OutboundMessage(null, "customer-" + (i % 100),
                        Map.of("message-id", "order-" + i),
                        ("{\"order\":" + i + ",\"amount\":42}").getBytes(StandardCharsets.UTF_8)));
                published++;
            }
        }
        long start = System.nanoTime();
        try (IdemRuntime idem = Idem.builder().configYaml(yaml).env(Map.of())
                .broker("memory", broker)
                .handler("payments", (message, context) -> charges
                        .computeIfAbsent(message.idempotencyKey().orElseThrow(), k -> new AtomicInteger())
                        .incrementAndGet())
                .meterRegistry(meters)
                .start()) {
            while (broker.depth("orders") > 0 || broker.unsettled("orders") > 0) {
                Thread.sleep(10);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            double processed = count(meters, "processed");
            double duplicates = count(meters, "duplicate");
            long chargedTwice = charges.values().stream().filter(n -> n.get() > 1).count();
            System.out.printf("published %,d messages for %,d orders (every fifth order twice)%n", published, orders);
            System.out.printf("processed %,.0f, skipped as duplicates %,.0f, orders charged twice: %d%n",
                    processed, duplicates, chargedTwice);
            System.out.printf("%.2f s, %,.0f messages/s%n", seconds, published / seconds);
            if (chargedTwice > 0 || processed != orders) {
                System.exit(1);
            }
        } finally {
            broker.close();
        }
    }

    private static double count(SimpleMeterRegistry meters, String outcome) {
        var c = meters.find("idem.messages").tag("outcome", outcome).counter();
        return c == null ? 0 : c.count();
    }
}
