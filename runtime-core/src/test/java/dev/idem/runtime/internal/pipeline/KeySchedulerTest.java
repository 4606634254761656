package dev.idem.runtime.internal.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.InboundMessage;
import dev.idem.testkit.ManualTicker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The scheduler on its own: order per key, no starvation, nothing kept for idle keys, hand-back behind a key. */
class KeySchedulerTest {

    private final ManualTicker ticker = new ManualTicker();
    private final DelayedTasks timers = new DelayedTasks("test-timer", ticker);
    private final List<String> handedBack = new CopyOnWriteArrayList<>();
    private KeyScheduler scheduler;

    @AfterEach
    void close() throws InterruptedException {
        if (scheduler != null) {
            scheduler.abort();
            scheduler.shutdownNow();
            scheduler.awaitTermination(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        }
        timers.close();
    }

    private KeyScheduler start(int workers, KeyScheduler.Runner runner) {
        scheduler = new KeyScheduler("test", workers, getClass().getClassLoader(), runner, timers);
        timers.start();
        scheduler.start();
        return scheduler;
    }

    /** A work of {@code orderKey} whose idempotency key is {@code id}, on a delivery that does nothing. */
    static Work work(String orderKey, String id) {
        InboundMessage message = new InboundMessage("q", null, orderKey, Map.of(), new byte[0], id, false, 1);
        Work w = new Work(new Delivery() {
            @Override
            public InboundMessage message() {
                return message;
            }

            @Override
            public void ack() {
            }

            @Override
            public void retryLater(Duration delay) {
            }

            @Override
            public void deadLetter(DeadLetterReason reason) {
            }
        });
        w.orderKey = orderKey;
        w.key = id;
        return w;
    }

    @Test
    void runsEachKeyInOrderAndForgetsKeysThatWentIdle() {
        Map<String, List<Integer>> seen = new ConcurrentHashMap<>();
        AtomicInteger done = new AtomicInteger();
        start(8, new KeyScheduler.Runner() {
            @Override
            public Step run(Work w, boolean alone) {
                String[] parts = w.key.split("/");
                seen.computeIfAbsent(parts[0], k -> new CopyOnWriteArrayList<>()).add(Integer.parseInt(parts[1]));
                done.incrementAndGet();
                return Step.NEXT;
            }

            @Override
            public void handBack(Work w) {
                handedBack.add(w.key);
            }
        });
        int keys = 500;
        int perKey = 20;
        for (int seq = 0; seq < perKey; seq++) {
            List<Work> batch = new ArrayList<>();
            for (int k = 0; k < keys; k++) {
                batch.add(work("k" + k, "k" + k + "/" + seq));
            }
            scheduler.submit(batch);
        }
        await().until(() -> done.get() == keys * perKey);
        assertThat(seen.values()).allSatisfy(seqs -> assertThat(seqs).isSorted().hasSize(perKey));
        await().until(() -> scheduler.keysHeld() == 0);
        assertThat(handedBack).isEmpty();
    }

    @Test
    void aBusyKeyDoesNotStarveTheOthers() throws InterruptedException {
        CountDownLatch lateKeyRan = new CountDownLatch(1);
        CountDownLatch lateKeySubmitted = new CountDownLatch(1);
        AtomicInteger hotRuns = new AtomicInteger();
        AtomicInteger hotRunsBeforeLate = new AtomicInteger(-1);
        start(1, new KeyScheduler.Runner() {
            @Override
            public Step run(Work w, boolean alone) {
                if (w.orderKey.equals("late")) {
                    hotRunsBeforeLate.set(hotRuns.get());
                    lateKeyRan.countDown();
                } else if (hotRuns.incrementAndGet() == 1) {
                    try {
                        // The hot key's first run lasts until the other key is queued behind it.
                        lateKeySubmitted.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return Step.NEXT;
            }

            @Override
            public void handBack(Work w) {
            }
        });
        List<Work> hot = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) {
            hot.add(work("hot", "h" + i));
        }
        scheduler.submit(hot);
        scheduler.submit(List.of(work("late", "l")));
        lateKeySubmitted.countDown();
        assertThat(lateKeyRan.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(hotRunsBeforeLate.get()).as("served round-robin, not after the hot key's backlog")
                .isBetween(1, 2);
    }

    @Test
    void aHandedBackWorkTakesItsKeysLaterWorksBackAndLeavesOtherKeysAlone() {
        List<String> ran = new CopyOnWriteArrayList<>();
        start(2, handingBackA1(ran, null));
        scheduler.submit(List.of(work("A", "a1"), work("A", "a2"), work("A", "a3"), work("B", "b1"), work("B", "b2")));
        await().until(() -> handedBack.size() == 2 && ran.containsAll(List.of("b1", "b2")));
        assertThat(handedBack).containsExactly("a2", "a3");
        assertThat(ran).doesNotContain("a2", "a3");
    }

    @Test
    void aParkedKeyWakesOnTheTickerAndASuspectRunsAlone() {
        List<String> ran = new CopyOnWriteArrayList<>();
        List<String> aloneRuns = new CopyOnWriteArrayList<>();
        start(4, new KeyScheduler.Runner() {
            private final AtomicInteger parkedOnce = new AtomicInteger();

            @Override
            public Step run(Work w, boolean alone) {
                if (w.key.equals("p1") && parkedOnce.getAndIncrement() == 0) {
                    return Step.park(TimeUnit.SECONDS.toNanos(5));
                }
                if (alone) {
                    aloneRuns.add(w.key);
                }
                ran.add(w.key);
                return Step.NEXT;
            }

            @Override
            public void handBack(Work w) {
            }
        });
        Work suspect = work("S", "s1");
        suspect.claim.acquired(7, 2, ticker.getAsLong());
        scheduler.submit(List.of(work("P", "p1"), work("P", "p2"), suspect, work("Q", "q1")));
        await().until(() -> ran.containsAll(List.of("s1", "q1")));
        assertThat(ran).doesNotContain("p1", "p2");
        assertThat(aloneRuns).containsExactly("s1");

        ticker.advance(Duration.ofSeconds(5));
        await().until(() -> ran.containsAll(List.of("p1", "p2")));
        assertThat(ran.indexOf("p2")).isGreaterThan(ran.indexOf("p1"));
    }

    @Test
    void aWorkerWhoseBookkeepingFailsHandsBackWhatItsKeyHeldAndGoesOn() {
        List<String> ran = new CopyOnWriteArrayList<>();
        KeyScheduler.Running running = new KeyScheduler.Running();
        AtomicInteger idleCalls = new AtomicInteger();
        // Called under the scheduler's lock as a run is finished: the first call fails, as a defect there would.
        running.whenIdle(() -> {
            if (idleCalls.getAndIncrement() == 0) {
                throw new IllegalStateException("bookkeeping defect");
            }
        });
        scheduler = new KeyScheduler("test", 1, getClass().getClassLoader(), new KeyScheduler.Runner() {
            @Override
            public Step run(Work w, boolean alone) {
                ran.add(w.key);
                w.markSettled();
                return Step.NEXT;
            }

            @Override
            public void handBack(Work w) {
                handedBack.add(w.key);
            }
        }, timers, 16, (a, b) -> 0, running, null);
        timers.start();
        scheduler.submit(List.of(work("A", "a1"), work("A", "a2")));
        scheduler.start();
        await().until(() -> handedBack.contains("a2"));
        assertThat(ran).containsExactly("a1");
        assertThat(handedBack).as("a1 was settled; only what its key still held goes back").containsExactly("a2");

        scheduler.submit(List.of(work("A", "a3"), work("B", "b1")));
        await().until(() -> ran.containsAll(List.of("a3", "b1")));
        await().until(() -> scheduler.keysHeld() == 0);
    }

    @Test
    void aHandBackThatFailsDoesNotStopTheOthersNorTheWorker() {
        List<String> ran = new CopyOnWriteArrayList<>();
        start(1, handingBackA1(ran, "a2"));
        scheduler.submit(List.of(work("A", "a1"), work("A", "a2"), work("A", "a3")));
        await().until(() -> handedBack.contains("a3"));
        scheduler.submit(List.of(work("B", "b1")));
        await().until(() -> ran.contains("b1"));
        assertThat(ran).containsExactly("a1", "b1");
    }

    /**
     * A runner that records what runs, hands back the work {@code a1} (and with it what its key queued) and records
     * what goes back, failing on the hand-back of {@code refused} (or of none when {@code null}).
     */
    private KeyScheduler.Runner handingBackA1(List<String> ran, String refused) {
        return new KeyScheduler.Runner() {
            @Override
            public Step run(Work w, boolean alone) {
                ran.add(w.key);
                return w.key.equals("a1") ? Step.HANDED_BACK : Step.NEXT;
            }

            @Override
            public void handBack(Work w) {
                if (w.key.equals(refused)) {
                    throw new IllegalStateException("broker gone");
                }
                handedBack.add(w.key);
            }
        };
    }
}
