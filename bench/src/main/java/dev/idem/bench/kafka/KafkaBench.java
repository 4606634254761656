package dev.idem.bench.kafka;

import dev.idem.adapter.kafka.EmbeddedKafka;
import dev.idem.adapter.kafka.KafkaAdapterProvider;
import dev.idem.api.MessageHandler;
import dev.idem.bench.EndToEnd;
import dev.idem.runtime.Idem;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.store.caffeine.CaffeineDedupStoreProvider;
import dev.idem.testkit.TestPluginConfig;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * What the Kafka benchmarks share: the producer that fills their topics, the Kafka adapter on the embedded
 * broker, and Idem run over a topic with the Caffeine store.
 */
final class KafkaBench {

    private KafkaBench() {
    }

    /** A producer tuned for filling a topic fast (filling is never timed); the caller closes it. */
    static KafkaProducer<byte[], byte[]> producer(EmbeddedKafka kafka) {
        Map<String, Object> props = new HashMap<>();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** The Kafka adapter with its defaults, on the embedded broker; the caller closes it. */
    static BrokerAdapter adapter(EmbeddedKafka kafka) {
        return new KafkaAdapterProvider().create(
                TestPluginConfig.defaults("broker.kafka", new KafkaAdapterProvider().configSpec())
                        .with("bootstrap-servers", List.of(kafka.bootstrapServers())));
    }

    /**
     * Runs Idem with the Caffeine store and {@code handler} on pipeline {@code pipeline} (a new consumer group)
     * over the whole of {@code topic}, until {@code settled} messages are processed or duplicates.
     *
     * @param settings the pipeline's keys besides {@code source}, as YAML lines ({@code concurrency: 100}),
     *        or an empty string for the defaults
     * @return the nanoseconds from the first handler call to the last message settled
     */
    static long timeIdem(EmbeddedKafka kafka, String pipeline, String topic, String settings, int settled,
            MessageHandler handler) throws Exception {
        return timeIdem(kafka, pipeline, topic, settings, settled, handler, "caffeine", "{ type: caffeine }",
                new CaffeineDedupStoreProvider().create(
                        TestPluginConfig.defaults("store.caffeine", new CaffeineDedupStoreProvider().configSpec()),
                        StoreContext.system()));
    }

    /**
     * As above, on {@code store} (of plugin type {@code storeType}, whose {@code store:} section, as one line
     * of YAML, is {@code storeSection}), which is closed at the end.
     */
    static long timeIdem(EmbeddedKafka kafka, String pipeline, String topic, String settings, int settled,
            MessageHandler handler, String storeType, String storeSection, DedupStore store) throws Exception {
        BrokerAdapter adapter = adapter(kafka);
        String yaml = """
                broker: { type: kafka, kafka: { bootstrap-servers: [%s] } }
                store: %s
                pipelines:
                  %s:
                    source: %s
                """.formatted(kafka.bootstrapServers(), storeSection, pipeline, topic) + settings.indent(4);
        try {
            return EndToEnd.timeIdem(Idem.builder().configYaml(yaml).env(Map.of())
                    .broker("kafka", adapter).store(storeType, store), pipeline, settled, handler);
        } finally {
            adapter.close();
            store.close();
        }
    }
}
