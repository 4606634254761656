package dev.idem.runtime.internal.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.RepeatedTest;

/**
 * The scheduler under every kind of step at once, from several threads, the way a busy pipeline drives it: runs that
 * go on, park, set their work aside, wait for a completion written by another thread (which may answer before the
 * worker reported the wait), hand their key back; deliveries revoked meanwhile. Whatever the interleaving, no two
 * works of one key queue run at once, each work runs at most once after it settled nothing, and every work ends
 * settled: none is left in flight.
 */
class KeySchedulerStressTest {

    private static final int KEYS = 64;
    private static final int WORKS = 20_000;

    private final DelayedTasks timers = new DelayedTasks("stress-timer", System::nanoTime);
    private final ExecutorService committer = Executors.newFixedThreadPool(2);
    private final Set<Object> activeQueues = ConcurrentHashMap.newKeySet();
    private final List<String> violations = new CopyOnWriteArrayList<>();
    private final Set<Work> parkedOnce = ConcurrentHashMap.newKeySet();
    private final Map<Work, Boolean> asideOnce = new ConcurrentHashMap<>();
    private KeyScheduler scheduler;

    @AfterEach
    void close() throws InterruptedException {
        scheduler.abort();
        scheduler.shutdownNow();
        scheduler.awaitTermination(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        committer.shutdownNow();
        timers.close();
    }

    @RepeatedTest(3)
    void everyWorkEndsSettledAndNoKeyRunsTwiceAtOnce() throws InterruptedException {
        KeyScheduler.Running running = new KeyScheduler.Running();
        scheduler = new KeyScheduler("stress", 4, getClass().getClassLoader(), new KeyScheduler.Runner() {
            @Override
            public Step run(Work w, boolean alone) {
                Object queue = w.slot;
                if (!activeQueues.add(queue)) {
                    violations.add("two works of one key queue ran at once: " + w.key);
                }
                if (w.isSettled()) {
                    violations.add("a settled work ran: " + w.key);
                }
                Step step = decide(w);
                if (step.kind() != Step.Kind.AWAIT) {
                    activeQueues.remove(queue);
                }
                return step;
            }

            @Override
            public void handBack(Work w) {
                retryLater(w);
            }
        }, timers, 16, Comparator.comparing(w -> w.key), running, null);
        timers.start();
        scheduler.start();

        List<Work> all = new ArrayList<>(WORKS);
        AtomicBoolean submitting = new AtomicBoolean(true);
        Thread revoker = new Thread(() -> {
            ThreadLocalRandom random = ThreadLocalRandom.current();
            while (submitting.get()) {
                List<Work> some = new ArrayList<>();
                synchronized (all) {
                    for (int i = 0; i < 8 && !all.isEmpty(); i++) {
                        some.add(all.get(random.nextInt(all.size())));
                    }
                }
                scheduler.revoke(some);
                Thread.onSpinWait();
            }
        });
        revoker.start();
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int i = 0; i < WORKS; i += 50) {
            List<Work> batch = new ArrayList<>(50);
            for (int j = i; j < i + 50; j++) {
                batch.add(KeySchedulerTest.work("k" + random.nextInt(KEYS), "w" + j));
            }
            synchronized (all) {
                all.addAll(batch);
            }
            scheduler.submit(batch);
        }
        submitting.set(false);
        revoker.join();

        await().atMost(Duration.ofSeconds(60)).until(() -> all.stream().allMatch(Work::isSettled));
        assertThat(violations).isEmpty();
        await().until(() -> scheduler.keysHeld() == 0);
    }

    /** What this run asks for: mostly to go on, sometimes each of the other steps. */
    private Step decide(Work w) {
        int roll = ThreadLocalRandom.current().nextInt(100);
        if (roll < 10 && parkedOnce.add(w)) {
            return Step.park(ThreadLocalRandom.current().nextLong(TimeUnit.MICROSECONDS.toNanos(200)));
        }
        if (roll < 15 && asideOnce.putIfAbsent(w, true) == null) {
            return Step.setAside(TimeUnit.MICROSECONDS.toNanos(300));
        }
        if (roll < 40) {
            // The completion is written on another thread, which may answer before the worker reports the wait.
            Object queue = w.slot;
            boolean fails = roll < 18;
            committer.execute(() -> {
                activeQueues.remove(queue);
                if (fails) {
                    retryLater(w);
                    w.slot.resume(Step.HANDED_BACK);
                } else {
                    w.markSettled();
                    w.slot.resume(Step.NEXT);
                }
            });
            return Step.AWAIT;
        }
        if (roll < 43) {
            retryLater(w);
            return Step.HANDED_BACK;
        }
        w.markSettled();
        return Step.NEXT;
    }

    /** As the pipeline's settlement hands a delivery back: settled once, its key queue detached first. */
    private static void retryLater(Work w) {
        if (!w.markSettled()) {
            return;
        }
        KeyScheduler.Slot slot = w.slot;
        if (slot != null) {
            slot.detach();
        }
    }
}
