package dev.idem.adapter.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The coalescing of acks into multiple acks, checked against a model of the broker's unacknowledged deliveries:
 * a multiple ack takes every outstanding tag up to its own, which must still be outstanding.
 */
class AckCoalescerTest {

    /** The broker's view of one channel. */
    private static final class BrokerModel implements AckCoalescer.Sender {
        final TreeSet<Long> outstanding = new TreeSet<>();
        final List<String> frames = new ArrayList<>();

        BrokerModel(int deliveries) {
            for (long t = 1; t <= deliveries; t++) {
                outstanding.add(t);
            }
        }

        @Override
        public void ack(long tag, boolean multiple) {
            assertThat(outstanding).as("acked tag %d is outstanding", tag).contains(tag);
            frames.add(tag + (multiple ? "+" : ""));
            if (multiple) {
                outstanding.headSet(tag, true).clear();
            } else {
                outstanding.remove(tag);
            }
        }

        void nack(long tag) {
            assertThat(outstanding.remove(tag)).isTrue();
        }
    }

    @Test
    void aContiguousRunFromTheLowestTagBecomesOneMultipleAck() throws IOException {
        AckCoalescer coalescer = new AckCoalescer();
        BrokerModel broker = new BrokerModel(5);
        coalescer.ack(new long[] {3, 1, 2}, 3, broker);
        assertThat(broker.frames).containsExactly("3+");
        assertThat(broker.outstanding).containsExactly(4L, 5L);
    }

    @Test
    void tagsAboveAGapAreAckedOneByOneAndLaterJoinTheRun() throws IOException {
        AckCoalescer coalescer = new AckCoalescer();
        BrokerModel broker = new BrokerModel(6);
        coalescer.ack(new long[] {4, 5}, 2, broker);
        assertThat(broker.frames).containsExactly("4", "5");
        coalescer.settled(2);
        broker.nack(2);
        coalescer.ack(new long[] {1, 3}, 2, broker);
        // 1 and 3 are the only ones outstanding below 6; 2, 4 and 5 are settled already.
        assertThat(broker.frames).containsExactly("4", "5", "3+");
        assertThat(broker.outstanding).containsExactly(6L);
    }

    @Test
    void randomSettleOrdersNeverAckAnUnackedTag() throws IOException {
        Random random = new Random(7);
        for (int round = 0; round < 200; round++) {
            int n = 1 + random.nextInt(60);
            List<Long> order = new ArrayList<>();
            for (long t = 1; t <= n; t++) {
                order.add(t);
            }
            Collections.shuffle(order, random);
            AckCoalescer coalescer = new AckCoalescer();
            BrokerModel broker = new BrokerModel(n);
            TreeSet<Long> requeued = new TreeSet<>();
            int i = 0;
            while (i < order.size()) {
                if (random.nextInt(5) == 0) {
                    long tag = order.get(i++);
                    coalescer.settled(tag);
                    broker.nack(tag);
                    requeued.add(tag);
                    continue;
                }
                int batch = Math.min(order.size() - i, 1 + random.nextInt(8));
                long[] tags = new long[batch];
                for (int j = 0; j < batch; j++) {
                    tags[j] = order.get(i++);
                }
                TreeSet<Long> before = new TreeSet<>(broker.outstanding);
                coalescer.ack(tags, batch, broker);
                TreeSet<Long> removed = new TreeSet<>(before);
                removed.removeAll(broker.outstanding);
                TreeSet<Long> expected = new TreeSet<>();
                for (long t : tags) {
                    expected.add(t);
                }
                assertThat(removed).as("exactly the acked tags left the broker").isEqualTo(expected);
            }
            assertThat(broker.outstanding).isEmpty();
        }
    }
}
