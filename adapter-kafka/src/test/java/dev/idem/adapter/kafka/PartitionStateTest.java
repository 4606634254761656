package dev.idem.adapter.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** The offset bookkeeping of one partition, without a broker. */
class PartitionStateTest {

    private final PartitionState state = new PartitionState(new TopicPartition("orders", 3));

    @Test
    void commitsOnlyTheContiguousFinishedPrefix() {
        PartitionState.Slot s0 = state.deliver(0);
        PartitionState.Slot s1 = state.deliver(1);
        PartitionState.Slot s2 = state.deliver(2);

        state.finish(s2);
        state.finish(s1);
        assertThat(state.committable()).as("offset 0 is unfinished: nothing to commit").isEqualTo(-1);
        assertThat(state.inFlight()).isEqualTo(1);

        state.finish(s0);
        assertThat(state.committable()).isEqualTo(3);
        assertThat(state.held()).isZero();
        state.committed(3);
        assertThat(state.committable()).as("nothing new since the commit").isEqualTo(-1);
    }

    @Test
    void offsetGapsDoNotHoldCommitsBack() {
        PartitionState.Slot s5 = state.deliver(5);
        PartitionState.Slot s9 = state.deliver(9);
        state.finish(s9);
        state.finish(s5);
        assertThat(state.committable()).isEqualTo(10);
    }

    @Test
    void retryPausesUntilTheSeekAndRedeliveryCountsDeliveries() {
        PartitionState.Slot s0 = state.deliver(0);
        PartitionState.Slot s1 = state.deliver(1);
        PartitionState.Slot s2 = state.deliver(2);
        int firstEpoch = s1.epoch;
        state.finish(s0);

        state.retry(s1, firstEpoch, 1_000, 500);
        assertThat(state.retryPending()).isTrue();
        assertThat(state.nanosUntilSeek(1_200)).isPositive();
        assertThat(state.nanosUntilSeek(1_500)).isZero();
        assertThat(state.seekTo()).isEqualTo(1);
        state.sought();

        assertThat(state.deliver(0)).as("finished offsets are not handed over again").isNull();
        PartitionState.Slot again1 = state.deliver(1);
        PartitionState.Slot again2 = state.deliver(2);
        assertThat(again1.deliveries).isEqualTo(2);
        assertThat(again2).isSameAs(s2);
        assertThat(again2.deliveries).isEqualTo(2);

        state.retry(s2, firstEpoch, 2_000, 0);
        assertThat(state.retryPending()).as("a retry from a delivery superseded by a redelivery is stale").isFalse();

        state.finish(again2);
        state.finish(again1);
        assertThat(state.committable()).isEqualTo(3);
        assertThat(state.inFlight()).isZero();
    }

    @Test
    void laterRetriesSeekToTheLowestOffsetAndWaitForTheLongestDelay() {
        PartitionState.Slot s0 = state.deliver(0);
        PartitionState.Slot s1 = state.deliver(1);
        state.retry(s1, s1.epoch, 0, 100);
        state.retry(s0, s0.epoch, 0, 300);
        assertThat(state.seekTo()).isZero();
        assertThat(state.nanosUntilSeek(200)).isPositive();
        assertThat(state.inFlight()).isZero();
    }
}
