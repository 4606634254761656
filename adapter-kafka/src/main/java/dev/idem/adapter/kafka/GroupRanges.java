package dev.idem.adapter.kafka;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * What a consumer group has still to read of a topic, per partition: from the group's committed offset (a partition
 * without one: the earliest offset, where a new group starts) to the end offset. Read through the admin client, for
 * the backlog ({@link KafkaAdapter#backlog}) and the dead-letter browse ({@link KafkaBrowse}). Stateless.
 */
final class GroupRanges {

    private GroupRanges() {
    }

    /**
     * Each partition's {@code {start, end}} offsets for {@code group}; empty when the topic does not exist.
     *
     * @param waitMillis the bound of each admin call
     */
    static Optional<Map<TopicPartition, long[]>> read(Admin admin, String topic, String group, long waitMillis)
            throws ExecutionException, TimeoutException, InterruptedException {
        TopicDescription description;
        try {
            description = admin.describeTopics(List.of(topic)).allTopicNames().get(waitMillis, TimeUnit.MILLISECONDS)
                    .get(topic);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                return Optional.empty();
            }
            throw e;
        }
        Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (TopicPartitionInfo p : description.partitions()) {
            TopicPartition tp = new TopicPartition(topic, p.partition());
            earliest.put(tp, OffsetSpec.earliest());
            latest.put(tp, OffsetSpec.latest());
        }
        Map<TopicPartition, ListOffsetsResultInfo> starts = admin.listOffsets(earliest).all()
                .get(waitMillis, TimeUnit.MILLISECONDS);
        Map<TopicPartition, ListOffsetsResultInfo> ends = admin.listOffsets(latest).all()
                .get(waitMillis, TimeUnit.MILLISECONDS);
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(waitMillis, TimeUnit.MILLISECONDS);
        Map<TopicPartition, long[]> ranges = new HashMap<>();
        for (Map.Entry<TopicPartition, ListOffsetsResultInfo> end : ends.entrySet()) {
            long start = starts.get(end.getKey()).offset();
            OffsetAndMetadata c = committed.get(end.getKey());
            if (c != null) {
                start = Math.max(start, c.offset());
            }
            ranges.put(end.getKey(), new long[] {start, end.getValue().offset()});
        }
        return Optional.of(ranges);
    }
}
