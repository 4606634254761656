package dev.idem.adapter.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.spi.BrokerException;
import dev.idem.spi.Delivery;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import dev.idem.testkit.TestPluginConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code group-instance-id} (static membership) against a real broker: two members of one pipeline's group on a
 * topic of four partitions, A (the adapter, restarted by closing it and subscribing anew) and B (a consumer with the
 * adapter's consumer settings, whose rebalance listener the test watches). With an instance id, the restarted A takes
 * its two partitions back and resumes from what it committed on close, and B's listener is never called; without,
 * A's close and its return each rebalance B (B takes A's partitions, then gives them back). Also: a second live
 * consumer under the same id fences the first out, whose health check then says why; and further subscriptions of one
 * pipeline in one adapter get ids of their own.
 *
 * <p>Every wait is on a condition. "B was not rebalanced" is checked once the restarted A consumes again and B has
 * polled several more times: a rebalance cannot give A partitions before B rejoined, and B's listener runs in the
 * poll in which it rejoined.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class KafkaStaticMembershipTest {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int PARTITIONS = 4;

    private final EmbeddedKafka kafka = EmbeddedKafka.shared();
    private String topic;
    private String pipeline;
    private KafkaProducer<byte[], byte[]> producer;
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void createTopic() {
        String run = UUID.randomUUID().toString().substring(0, 8);
        topic = "idem-static-" + run;
        pipeline = "static-" + run;
        kafka.createTopic(topic, PARTITIONS);
        producer = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
                new ByteArraySerializer(), new ByteArraySerializer());
    }

    @AfterEach
    void cleanUp() throws Exception {
        for (AutoCloseable c : open) {
            c.close();
        }
        producer.close(Duration.ofSeconds(5));
        kafka.deleteTopic(topic);
    }

    @Test
    void aMemberRestartedUnderItsInstanceIdTakesItsPartitionsBackWithoutRebalancingTheOther() throws Exception {
        Group group = twoMembers("a", "b");

        group.a.close();
        assertCommittedUpToTheEnd(group.aPartitions);
        AdapterMember restarted = member("a");
        publishOnePerPartition();

        await().atMost(WAIT).until(() -> restarted.received.keySet().containsAll(group.aPartitions));
        int pollsThen = group.b.polls.get();
        await().atMost(WAIT).until(() -> group.b.polls.get() >= pollsThen + 5);
        System.out.printf("static membership: restarted member took back %s; the other member's rebalance"
                + " callbacks since: %s%n", sorted(restarted.received.keySet()), group.b.eventsSince(group.mark));
        assertThat(group.b.eventsSince(group.mark)).as("B's rebalance callbacks after A's restart").isEmpty();
        assertThat(group.b.owned).as("B keeps its partitions").isEqualTo(group.bPartitions);
        assertThat(restarted.received.keySet()).as("A's partitions, and only those").isEqualTo(group.aPartitions);
        restarted.received.forEach((tp, offsets) -> assertThat(offsets).as("%s after the restart: only the record"
                + " published since, as the close committed what A acknowledged", tp).hasSize(1));
    }

    @Test
    void withoutAnInstanceIdTheRestartRebalancesTheOtherMember() throws Exception {
        Group group = twoMembers(null, null);

        group.a.close();
        assertCommittedUpToTheEnd(group.aPartitions);
        await("B takes the partitions A left").atMost(WAIT).until(() -> group.b.owned.size() == PARTITIONS);
        AdapterMember restarted = member(null);
        publishOnePerPartition();

        await().atMost(WAIT).until(() -> !restarted.received.isEmpty()
                && group.b.eventsSince(group.mark).stream().anyMatch(e -> e.startsWith("revoked")));
        System.out.printf("dynamic membership: the other member's rebalance callbacks after the restart: %s%n",
                group.b.eventsSince(group.mark));
        assertThat(group.b.eventsSince(group.mark)).as("B's rebalance callbacks: it took A's partitions on A's"
                + " close and gave some back on A's return").first().asString().startsWith("assigned");
    }

    @Test
    void aSecondProcessWithTheSameInstanceIdFencesTheFirstOutAndItsHealthCheckSaysWhy() {
        publishOnePerPartition();
        AdapterMember first = member("host-1");
        await().atMost(WAIT).until(() -> first.received.size() == PARTITIONS);
        first.adapter.checkHealth();

        AdapterMember second = member("host-1");

        await().atMost(WAIT).untilAsserted(() -> assertThatThrownBy(first.adapter::checkHealth)
                .isInstanceOf(BrokerException.class)
                .hasMessageContaining("pipeline '" + pipeline + "' was fenced out of group '" + pipeline + "'")
                .hasMessageContaining("group.instance.id 'host-1'")
                .hasMessageContaining("broker.kafka.group-instance-id"));
        publishOnePerPartition();
        await().atMost(WAIT).until(() -> second.received.size() == PARTITIONS);
        second.adapter.checkHealth();
    }

    @Test
    void subscriptionsOfOnePipelineInOneAdapterGetDistinctInstanceIds() {
        AdapterMember member = member("host-1");
        Subscription again = member.adapter.subscribe(new SubscriptionRequest(pipeline, topic, 100, null),
                batch -> batch.forEach(Delivery::ack));
        Subscription other = member.adapter.subscribe(new SubscriptionRequest(pipeline + "-other", topic, 100, null),
                batch -> batch.forEach(Delivery::ack));

        assertThat(((KafkaSubscription) member.subscription).groupInstanceId()).isEqualTo("host-1");
        assertThat(((KafkaSubscription) again).groupInstanceId()).as("same group: a distinct id").isEqualTo("host-1-2");
        assertThat(((KafkaSubscription) other).groupInstanceId()).as("another pipeline's group").isEqualTo("host-1");
        again.close();
        Subscription third = member.adapter.subscribe(new SubscriptionRequest(pipeline, topic, 100, null),
                batch -> batch.forEach(Delivery::ack));
        assertThat(((KafkaSubscription) third).groupInstanceId()).as("freed by the close").isEqualTo("host-1-2");
    }

    /** A then B in one group; returns once each owns two partitions and consumed from them. */
    private Group twoMembers(String aId, String bId) {
        publishOnePerPartition();
        AdapterMember a = member(aId);
        await().atMost(WAIT).until(() -> a.received.size() == PARTITIONS);
        Observer b = new Observer(bId);
        await().atMost(WAIT).until(() -> b.owned.size() == PARTITIONS / 2);
        Set<TopicPartition> bPartitions = Set.copyOf(b.owned);
        Set<TopicPartition> aPartitions = allPartitions().stream().filter(tp -> !bPartitions.contains(tp))
                .collect(Collectors.toSet());
        a.received.clear();
        publishOnePerPartition();
        await().atMost(WAIT).until(() -> a.received.keySet().equals(aPartitions) && b.consumed.get() > 0);
        return new Group(a, b, aPartitions, bPartitions, b.events.size());
    }

    private record Group(AdapterMember a, Observer b, Set<TopicPartition> aPartitions,
            Set<TopicPartition> bPartitions, int mark) {
    }

    private TestPluginConfig config(String instanceId) {
        TestPluginConfig config = KafkaTestSupport.config();
        return instanceId == null ? config : config.with("group-instance-id", instanceId);
    }

    private AdapterMember member(String instanceId) {
        AdapterMember m = new AdapterMember(KafkaTestSupport.adapter(config(instanceId)));
        open.add(m);
        return m;
    }

    /** The adapter's subscription of the pipeline, acknowledging every delivery at once. */
    private final class AdapterMember implements AutoCloseable {
        final KafkaAdapter adapter;
        final Map<TopicPartition, List<Long>> received = new ConcurrentHashMap<>();
        final Subscription subscription;

        AdapterMember(KafkaAdapter adapter) {
            this.adapter = adapter;
            subscription = adapter.subscribe(new SubscriptionRequest(pipeline, topic, 100, null), this::onDeliveries);
        }

        private void onDeliveries(List<Delivery> batch) {
            for (Delivery d : batch) {
                String id = d.message().brokerMessageId();
                int dash = id.lastIndexOf('-');
                TopicPartition tp = new TopicPartition(topic, Integer.parseInt(d.message().partition()
                        .substring(d.message().partition().lastIndexOf('-') + 1)));
                received.computeIfAbsent(tp, k -> new CopyOnWriteArrayList<>())
                        .add(Long.parseLong(id.substring(dash + 1)));
                d.ack();
            }
        }

        @Override
        public void close() {
            adapter.close();
        }
    }

    /** Member B: a consumer with the adapter's settings for the pipeline, polling in a thread of its own. */
    private final class Observer implements ConsumerRebalanceListener, AutoCloseable {
        final Set<TopicPartition> owned = ConcurrentHashMap.newKeySet();
        final List<String> events = new CopyOnWriteArrayList<>();
        final AtomicInteger polls = new AtomicInteger();
        final AtomicInteger consumed = new AtomicInteger();
        private final KafkaConsumer<byte[], byte[]> consumer;
        private final Thread thread;
        private volatile boolean closing;

        Observer(String instanceId) {
            Map<String, Object> settings = KafkaSettings.from(config(instanceId)).consumer(pipeline, 100);
            consumer = new KafkaConsumer<>(settings);
            consumer.subscribe(List.of(topic), this);
            thread = new Thread(this::run, "observer-" + pipeline);
            thread.start();
            open.add(this);
        }

        private void run() {
            while (!closing) {
                consumed.addAndGet(consumer.poll(Duration.ofMillis(100)).count());
                polls.incrementAndGet();
            }
            consumer.close(Duration.ofSeconds(5));
        }

        List<String> eventsSince(int mark) {
            return List.copyOf(events.subList(mark, events.size()));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            owned.addAll(partitions);
            if (!partitions.isEmpty()) {
                events.add("assigned " + sorted(partitions));
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            owned.removeAll(partitions);
            if (!partitions.isEmpty() && !closing) {
                events.add("revoked " + sorted(partitions));
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            owned.removeAll(partitions);
            events.add("lost " + sorted(partitions));
        }

        @Override
        public void close() throws InterruptedException {
            closing = true;
            thread.join(TimeUnit.SECONDS.toMillis(30));
        }
    }

    private static List<String> sorted(Collection<TopicPartition> partitions) {
        return partitions.stream().map(TopicPartition::toString).sorted().toList();
    }

    private List<TopicPartition> allPartitions() {
        return IntStream.range(0, PARTITIONS).mapToObj(p -> new TopicPartition(topic, p)).toList();
    }

    private void publishOnePerPartition() {
        for (int p = 0; p < PARTITIONS; p++) {
            producer.send(new ProducerRecord<>(topic, p, null, ("m" + p).getBytes(StandardCharsets.UTF_8)));
        }
        producer.flush();
    }

    /** The close committed every acknowledged offset: nothing A handled is delivered again. */
    private void assertCommittedUpToTheEnd(Set<TopicPartition> partitions) throws Exception {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        partitions.forEach(tp -> latest.put(tp, OffsetSpec.latest()));
        var ends = kafka.admin().listOffsets(latest).all().get(10, TimeUnit.SECONDS);
        for (TopicPartition tp : partitions) {
            assertThat(kafka.committed(pipeline, tp)).as("committed offset of %s after A's close", tp)
                    .isEqualTo(ends.get(tp).offset());
        }
    }
}
