package dev.idem.bench.kafka;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.bench.EndToEnd;
import dev.idem.bench.EndToEnd.Side;
import dev.idem.bench.kafka.KeyedTopic.Distribution;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What transient handler failures cost Idem on Kafka: the {@link KeyOrderedBenchmark} workload (one partition,
 * records spread evenly over the keys, a handler that sleeps {@code handler-ms}, {@code ordering: key},
 * {@code concurrency: <concurrency>}, {@code max-in-flight: 10000}, Caffeine store), run with and without
 * failures over the same topic, alternately, in one JVM against one embedded broker.
 *
 * <p>In the run with failures, the first run of {@code fail-percent} % of the records (picked with a fixed
 * seed) throws at once, and the retry, after {@code retry.initial-backoff: <backoff-ms>ms}, succeeds. A retry
 * that waits on its key rather than on a worker costs little: the other keys go on meanwhile, and the key's own
 * records wait behind it, in order. A retry that sleeps on a worker takes that worker from every key it serves.
 * Each run reads the whole topic with a new consumer group and is timed from its first handler call to its
 * last record processed. After one unmeasured warm-up round, prints every run, then the median rates and
 * their ratio, with failures / without, and any record that ran out of its key's order.
 *
 * <p>50,000 records by default: a key whose retry waits 100 ms finishes that much later, so on a run of
 * 10,000 records (half a second at the limit) the last parked keys stretch the run by a fifth whatever the
 * scheduler does; a longer run measures the steady state, where the other keys fill the workers.
 *
 * <p>Run (after {@code mvn -q -B -pl bench -am package -DskipTests}):
 * {@code java -cp bench/target/benchmarks.jar dev.idem.bench.kafka.KafkaRetryBenchmark [records=50000]
 * [rounds=3] [fail-percent=5] [backoff-ms=100] [keys=1000] [handler-ms=5] [concurrency=100]}
 */
public final class KafkaRetryBenchmark {

    private KafkaRetryBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        int records = args.length > 0 ? Integer.parseInt(args[0]) : 50_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int failPercent = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        long backoffMillis = args.length > 3 ? Long.parseLong(args[3]) : 100;
        int keys = args.length > 4 ? Integer.parseInt(args[4]) : 1_000;
        long handlerMillis = args.length > 5 ? Long.parseLong(args[5]) : 5;
        int concurrency = args.length > 6 ? Integer.parseInt(args[6]) : 100;
        System.out.printf("Transient failures: %,d records over %,d keys, 1 partition, handler %d ms, concurrency %d;"
                + " %d %% of first runs fail, retried after %d ms; %d rounds%n", records, keys, handlerMillis,
                concurrency, failPercent, backoffMillis, rounds);
        String settings = KeyOrderedBenchmark.orderedSettings(concurrency)
                + "retry: { initial-backoff: %dms }\n".formatted(backoffMillis);
        AtomicLong violations = new AtomicLong();
        AtomicLong failures = new AtomicLong();
        Map<String, List<Double>> rates;
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            String topic = "retry";
            kafka.createTopic(topic, 1);
            KeyedTopic.fill(kafka, topic, Distribution.UNIFORM.keys(records, keys), failPercent);
            Map<String, Side> sides = new LinkedHashMap<>();
            for (boolean failing : new boolean[] {false, true}) {
                String name = failing ? "with-failures" : "without-failures";
                sides.put(name, run -> {
                    KeyedTopic.Handler handler = new KeyedTopic.Handler(handlerMillis, failing);
                    long nanos = KafkaBench.timeIdem(kafka, topic + "-" + run, topic, settings, records, handler);
                    violations.addAndGet(handler.violations());
                    failures.addAndGet(handler.failures());
                    return EndToEnd.rate(records, nanos);
                });
            }
            rates = EndToEnd.alternate("retry", 1, rounds, sides);
        }
        double without = EndToEnd.median(rates.get("without-failures"));
        double with = EndToEnd.median(rates.get("with-failures"));
        System.out.printf("--- medians over %d rounds of %,d records (limit %,.0f msg/s)%n", rounds, records,
                KeyOrderedBenchmark.limit(concurrency, handlerMillis));
        System.out.printf("without failures %,.0f msg/s, with %d %% failing first runs %,.0f msg/s, with/without"
                + " %.2f; first runs failed: %d in %d runs; records out of key order: %d%n", without, failPercent,
                with, with / without, failures.get(), rounds + 1, violations.get());
    }
}
