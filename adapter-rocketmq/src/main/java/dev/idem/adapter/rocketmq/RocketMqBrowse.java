package dev.idem.adapter.rocketmq;

import dev.idem.spi.BrowsedMessage;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * One browse of a topic ({@link RocketMqAdapter#browse}): a pull consumer of its own reads each queue by offset,
 * from the reader group's committed offset (a queue without one: its first offset) to its end. It never stores an
 * offset, so no group's position moves, and nothing is sent back for a retry.
 */
@SuppressWarnings("deprecation")
final class RocketMqBrowse {

    /** How many messages one pull asks for. */
    private static final int PULL_BATCH = 32;

    /** The reader group's committed offset of a queue, or -1. */
    interface Committed {
        long of(MessageQueue queue) throws Exception;
    }

    private final DefaultMQPullConsumer consumer;
    private final long timeoutMillis;

    RocketMqBrowse(DefaultMQPullConsumer consumer, long timeoutMillis) {
        this.consumer = consumer;
        this.timeoutMillis = timeoutMillis;
    }

    /** Reads up to {@code max} messages of {@code topic}, queue by queue (broker, then queue ID). */
    List<BrowsedMessage> read(String topic, Committed committed, int max) throws Exception {
        List<MessageQueue> queues = new ArrayList<>(consumer.fetchSubscribeMessageQueues(topic));
        queues.sort(Comparator.comparing(MessageQueue::getBrokerName).thenComparingInt(MessageQueue::getQueueId));
        List<BrowsedMessage> out = new ArrayList<>();
        for (MessageQueue q : queues) {
            if (out.size() >= max) {
                break;
            }
            long from = committed.of(q);
            if (from < 0) {
                from = consumer.minOffset(q);
            }
            long end = consumer.maxOffset(q);
            String queueName = q.getTopic() + "-" + q.getBrokerName() + "-" + q.getQueueId();
            while (from < end && out.size() < max) {
                PullResult r = consumer.pull(q, "*", from, Math.min(PULL_BATCH, max - out.size()), timeoutMillis);
                List<MessageExt> found = r.getMsgFoundList();
                if (found != null) {
                    for (MessageExt m : found) {
                        if (out.size() < max && m.getQueueOffset() < end) {
                            out.add(new BrowsedMessage(queueName + "-" + m.getQueueOffset(),
                                    Messages.inbound(m, queueName, 0)));
                        }
                    }
                }
                if (r.getNextBeginOffset() <= from) {
                    break;
                }
                from = r.getNextBeginOffset();
            }
        }
        return out;
    }
}
