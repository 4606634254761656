package dev.idem.runtime.pipeline;

import dev.idem.runtime.config.PipelineConfig.Ordering;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.slf4j.MDC;

/**
 * The worker threads of a pipeline. Under {@code key} or {@code partition} ordering each of the
 * {@code concurrency} lanes is one thread with a FIFO queue, and a message always goes to the lane
 * its key or partition hashes to, which keeps their order. Under {@code none} the lanes share one
 * queue. Work is handed over in sub-batches so a thread hand-off is paid per batch, not per message.
 */
final class Lanes {

    private final Ordering ordering;
    private final ExecutorService[] lanes;
    private final ExecutorService shared;
    private final int concurrency;

    /**
     * @param handlerLoader the class loader of the pipeline's handler: the lane threads' context class
     *        loader, so a handler's own libraries find their resources while it runs
     */
    Lanes(String pipeline, Ordering ordering, int concurrency, ClassLoader handlerLoader) {
        this.ordering = ordering;
        this.concurrency = concurrency;
        ThreadFactory threads = laneThreads(pipeline, handlerLoader);
        if (ordering == Ordering.NONE) {
            shared = new ThreadPoolExecutor(concurrency, concurrency, 0, TimeUnit.MILLISECONDS,
                    new LinkedBlockingQueue<>(), threads);
            lanes = null;
        } else {
            shared = null;
            lanes = new ExecutorService[concurrency];
            for (int i = 0; i < concurrency; i++) {
                lanes[i] = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), threads);
            }
        }
    }

    private static ThreadFactory laneThreads(String pipeline, ClassLoader handlerLoader) {
        AtomicInteger count = new AtomicInteger();
        return r -> {
            Thread t = new Thread(() -> {
                MDC.put(Pipeline.MDC_PIPELINE, pipeline);
                r.run();
            }, "idem-" + pipeline + "-" + count.incrementAndGet());
            t.setDaemon(true);
            t.setContextClassLoader(handlerLoader);
            return t;
        };
    }

    /**
     * Runs every work item on its lane, in list order per lane.
     *
     * @throws java.util.concurrent.RejectedExecutionException once the lanes are shut down; items
     *         already handed over are then in the returned-to-caller list of {@code onRejected}
     */
    void dispatch(List<Work> works, Consumer<Work> runner, Consumer<List<Work>> onRejected) {
        if (works.isEmpty()) {
            return;
        }
        if (ordering == Ordering.NONE) {
            int chunks = Math.min(concurrency, works.size());
            int size = (works.size() + chunks - 1) / chunks;
            for (int from = 0; from < works.size(); from += size) {
                submit(shared, works.subList(from, Math.min(works.size(), from + size)), runner, onRejected);
            }
            return;
        }
        if (concurrency == 1) {
            submit(lanes[0], works, runner, onRejected);
            return;
        }
        @SuppressWarnings("unchecked")
        List<Work>[] perLane = new List[concurrency];
        for (Work w : works) {
            int lane = laneOf(w);
            List<Work> list = perLane[lane];
            if (list == null) {
                list = new ArrayList<>();
                perLane[lane] = list;
            }
            list.add(w);
        }
        for (int i = 0; i < concurrency; i++) {
            if (perLane[i] != null) {
                submit(lanes[i], perLane[i], runner, onRejected);
            }
        }
    }

    private int laneOf(Work w) {
        String orderKey;
        if (ordering == Ordering.PARTITION) {
            orderKey = w.message.partition() != null ? w.message.partition() : w.message.source();
        } else {
            orderKey = w.message.key() != null ? w.message.key() : w.key;
        }
        if (orderKey == null) {
            orderKey = w.message.source();
        }
        int h = orderKey.hashCode();
        h ^= (h >>> 16);
        return Math.floorMod(h, concurrency);
    }

    private static void submit(ExecutorService executor, List<Work> works, Consumer<Work> runner,
            Consumer<List<Work>> onRejected) {
        try {
            executor.execute(() -> {
                for (int i = 0, n = works.size(); i < n; i++) {
                    runner.accept(works.get(i));
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            onRejected.accept(works);
        }
    }

    /** Stops taking work; queued work still runs. */
    void shutdown() {
        if (shared != null) {
            shared.shutdown();
        } else {
            for (ExecutorService lane : lanes) {
                lane.shutdown();
            }
        }
    }

    /** Waits for queued and running work to finish; true if all did before the deadline. */
    boolean awaitTermination(long deadlineNanos) throws InterruptedException {
        ExecutorService[] all = shared != null ? new ExecutorService[] {shared} : lanes;
        for (ExecutorService e : all) {
            long left = deadlineNanos - System.nanoTime();
            if (!e.awaitTermination(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                return false;
            }
        }
        return true;
    }

    void shutdownNow() {
        if (shared != null) {
            shared.shutdownNow();
        } else {
            for (ExecutorService lane : lanes) {
                lane.shutdownNow();
            }
        }
    }
}
