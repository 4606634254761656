package dev.idem.adapter.rabbitmq;

import java.io.IOException;
import java.util.Arrays;
import java.util.TreeSet;

/**
 * Decides how to send the acks of one channel: one {@code basicAck(tag, multiple=true)} for a run of tags when
 * every lower tag of the channel has already been settled with the broker (acked or requeued), so that the
 * multiple ack takes nothing along that the runtime did not ack; every other tag on its own. Relies on the
 * broker numbering a channel's deliveries 1, 2, 3...
 *
 * <p>Not thread-safe: used under its channel's lock.
 */
final class AckCoalescer {

    /** Settled tags tracked above the floor before giving up coalescing (a delivery held for very long). */
    static final int MAX_TRACKED = 65_536;

    /** Sends one ack frame. */
    @FunctionalInterface
    interface Sender {
        void ack(long tag, boolean multiple) throws IOException;
    }

    /** Every tag up to this one has been settled with the broker. */
    private long floor;
    /** Tags above the floor settled with the broker. */
    private final TreeSet<Long> settledAbove = new TreeSet<>();
    private boolean tracking = true;

    /**
     * Sends acks for {@code tags[0..count)}, tags not yet settled, in any order; sorts them in place.
     */
    void ack(long[] tags, int count, Sender sender) throws IOException {
        Arrays.sort(tags, 0, count);
        int i = 0;
        if (tracking) {
            long f = floor;
            int inRun = 0;
            long lastInRun = 0;
            while (true) {
                if (i < count && tags[i] == f + 1) {
                    lastInRun = tags[i++];
                    inRun++;
                    f++;
                } else if (settledAbove.remove(f + 1)) {
                    f++;
                } else {
                    break;
                }
            }
            if (inRun > 0) {
                sender.ack(lastInRun, inRun > 1);
            }
            floor = f;
        }
        for (; i < count; i++) {
            sender.ack(tags[i], false);
            settled(tags[i]);
        }
    }

    /** Records a tag settled otherwise (requeued). */
    void settled(long tag) {
        if (!tracking) {
            return;
        }
        if (tag == floor + 1) {
            floor++;
            while (settledAbove.remove(floor + 1)) {
                floor++;
            }
        } else {
            settledAbove.add(tag);
            if (settledAbove.size() > MAX_TRACKED) {
                // Some delivery is held for very long: ack one by one from now on instead of tracking without end.
                tracking = false;
                settledAbove.clear();
            }
        }
    }

    /** Whether runs are still coalesced. */
    boolean coalescing() {
        return tracking;
    }
}
