package dev.idem.bench.kafka;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.bench.EndToEnd;
import dev.idem.bench.EndToEnd.Side;
import dev.idem.bench.kafka.KeyedTopic.Distribution;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Key-ordered parallelism of Idem against Confluent Parallel Consumer 0.5.3.3: records of one Kafka partition
 * spread over many keys, a slow handler, and as many handler runs at once as each allows while every key's
 * records still run one at a time, in order.
 *
 * <p>One embedded single-node KRaft broker; two topics of one partition, each filled once with
 * {@code records} records over {@code keys} record keys ({@link KeyedTopic}): {@code uniform} (every key
 * equally often) and {@code skewed} (a tenth of the keys carry half of the records). Both sides run a handler
 * that sleeps {@code handler-ms} and checks each key's order:
 * <ul>
 *   <li><b>idem</b>: {@code Idem.builder()}, Caffeine store, {@code ordering: key}, {@code concurrency:
 *   <concurrency>}, {@code max-in-flight: 10000}; the ordering key is left to its default, the Kafka record
 *   key;</li>
 *   <li><b>parallel-consumer</b>: {@code ParallelStreamProcessor}, {@code ProcessingOrder.KEY},
 *   {@code maxConcurrency(<concurrency>)}, in a JVM of its own ({@link ParallelConsumerProcess}: it needs
 *   kafka-clients 3.x) started once against the same broker.</li>
 * </ul>
 * Each run reads the whole topic with a new consumer group and is timed from its first handler call to its
 * last record done. After one unmeasured warm-up round, the sides alternate which goes first; prints every
 * run, then per distribution the median rates, the ratio idem / parallel-consumer, and the limit
 * {@code concurrency / handler-ms} (100 / 5 ms = 20,000 msg/s), and any record that ran out of its key's order.
 *
 * <p>Run (after {@code mvn -q -B -pl bench -am package -DskipTests}, which also builds
 * {@code bench/target/parallel-consumer.jar}):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.kafka.KeyOrderedBenchmark [records=10000]
 * [rounds=3] [keys=1000] [handler-ms=5] [concurrency=100]}
 */
public final class KeyOrderedBenchmark {

    static final int MAX_IN_FLIGHT = 10_000;

    private KeyOrderedBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int records = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int keys = args.length > 2 ? Integer.parseInt(args[2]) : 1_000;
        long handlerMillis = args.length > 3 ? Long.parseLong(args[3]) : 5;
        int concurrency = args.length > 4 ? Integer.parseInt(args[4]) : 100;
        System.out.printf("Key-ordered: %,d records over %,d keys, 1 partition, handler %d ms, concurrency %d,"
                + " %d rounds; limit %,.0f msg/s%n", records, keys, handlerMillis, concurrency, rounds,
                limit(concurrency, handlerMillis));
        List<String> summary = new ArrayList<>();
        try (EmbeddedKafka kafka = EmbeddedKafka.start();
                ParallelConsumerProcess parallelConsumer = ParallelConsumerProcess.start(kafka.bootstrapServers(),
                        concurrency, handlerMillis)) {
            for (Distribution distribution : Distribution.values()) {
                String topic = "keyed-" + distribution.label();
                kafka.createTopic(topic, 1);
                KeyedTopic.fill(kafka, topic, distribution.keys(records, keys), 0);
                AtomicLong idemViolations = new AtomicLong();
                AtomicLong pcViolations = new AtomicLong();
                Map<String, Side> sides = new LinkedHashMap<>();
                sides.put("idem", run -> {
                    KeyedTopic.Handler handler = new KeyedTopic.Handler(handlerMillis, false);
                    long nanos = KafkaBench.timeIdem(kafka, topic + "-idem-" + run, topic,
                            orderedSettings(concurrency), records, handler);
                    idemViolations.addAndGet(handler.violations());
                    return EndToEnd.rate(records, nanos);
                });
                sides.put("parallel-consumer", run -> {
                    ParallelConsumerProcess.Result result = parallelConsumer.run(topic, topic + "-pc-" + run,
                            records);
                    pcViolations.addAndGet(result.orderViolations());
                    return EndToEnd.rate(records, result.nanos());
                });
                Map<String, List<Double>> rates = EndToEnd.alternate(distribution.label(), 1, rounds, sides);
                double idem = EndToEnd.median(rates.get("idem"));
                double pc = EndToEnd.median(rates.get("parallel-consumer"));
                summary.add(String.format("%-7s idem %,7.0f msg/s, parallel-consumer %,7.0f msg/s, idem/pc %.2f;"
                        + " idem at %.0f %% of the limit; records out of key order: idem %d, pc %d",
                        distribution.label(), idem, pc, idem / pc, 100 * idem / limit(concurrency, handlerMillis),
                        idemViolations.get(), pcViolations.get()));
            }
        }
        System.out.printf("--- medians over %d rounds of %,d records (limit %,.0f msg/s)%n", rounds, records,
                limit(concurrency, handlerMillis));
        summary.forEach(System.out::println);
    }

    /** The pipeline settings of a key-ordered run at {@code concurrency}. */
    static String orderedSettings(int concurrency) {
        return """
                ordering: key
                concurrency: %d
                max-in-flight: %d
                """.formatted(concurrency, MAX_IN_FLIGHT);
    }

    /** Messages per second when every worker always has a record to run. */
    static double limit(int concurrency, long handlerMillis) {
        return concurrency * 1000.0 / handlerMillis;
    }
}
