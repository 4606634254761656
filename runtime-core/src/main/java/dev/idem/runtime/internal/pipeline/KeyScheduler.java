package dev.idem.runtime.internal.pipeline;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Dispatches works to a pool of {@code concurrency} workers by ordering key, the way Confluent's
 * Parallel Consumer schedules by key: one FIFO queue per ordering key that has work, and any idle
 * worker takes the next runnable key. A key is runnable while none of its messages runs or is
 * parked, so its messages run one at a time and in order, while other keys go on.
 *
 * <ul>
 *   <li>A run that must wait (retry back-off, a key another consumer holds) parks its key on a timer
 *       with the work still at the head; no thread waits, and the key's later messages stay behind it.
 *   <li>A run whose completion is written in a batch holds its key the same way until {@link #resume}:
 *       the worker goes on with other keys meanwhile.
 *   <li>A work that cannot run before later works of its key (a sequence gap) is set aside beside the
 *       key's queue, which goes on; it returns to the head after the key's next message settles, or on a
 *       timer. An idle key with works set aside keeps its queue.
 *   <li>A run that hands its work back to the broker hands the key's queued works back with it, so
 *       no later message of the key runs before the redelivery of an earlier one.
 *   <li>A suspect (a key taken over after a lease ran out) runs alone: no other work of the pipeline
 *       starts until the running ones finish, and none starts while the suspect runs.
 *   <li>Keys are served round-robin: after each message its key goes to the back of the line, so no
 *       busy key starves the others. A key's queue is dropped as soon as it is empty.
 * </ul>
 *
 * <p>Later stages report back through the {@link Slot} each work carries, never by calling the scheduler: a
 * written completion resumes the key ({@link Slot#resume}), a hand-back detaches it ({@link Slot#detach}). The
 * order in which works set aside come back is given, not read from the works ({@code asideOrder}).
 *
 * <p>Thread-safe. One lock guards the queues; runs happen outside it. Memory is bounded by the
 * pipeline's in-flight limit, which counts every work handed in. The workers start in {@link #start}.
 */
final class KeyScheduler {

    private static final Logger log = LoggerFactory.getLogger(KeyScheduler.class);

    /** What the scheduler runs; called from worker threads without the scheduler's lock. */
    interface Runner {
        /**
         * Runs {@code work} once and says what comes next for its key; must not throw.
         *
         * @param alone whether the scheduler guarantees that nothing else of the pipeline runs meanwhile
         */
        Step run(Work work, boolean alone);

        /** Hands a queued work that will not run back to the broker, giving up its claim. */
        void handBack(Work work);

        /**
         * Runs the first {@code count} works, the heads of as many keys, as {@link #run} would each (possibly
         * together), and puts each one's step at its index in {@code steps}; must not throw.
         */
        default void runAll(Work[] works, int count, boolean alone, Step[] steps) {
            for (int i = 0; i < count; i++) {
                steps[i] = run(works[i], alone);
            }
        }
    }

    /**
     * How a worker gathers a batch handler's batch: up to {@code size} runnable keys, waiting up to
     * {@code lingerNanos} for that many before it takes fewer.
     */
    record Batching(int size, long lingerNanos) {
    }

    /**
     * A work's place in the scheduler: its ordering key's queue. What a later stage tells the scheduler about a
     * work, it tells through this handle. Thread-safe.
     */
    interface Slot {
        /**
         * The work goes back to the broker: later arrivals of its key start a new queue, so its redelivery cannot
         * land behind the works this queue still holds, which go back after it.
         */
        void detach();

        /**
         * Ends the wait of a work whose run returned {@link Step#AWAIT}: applies what its completion decided
         * ({@link Step#NEXT} once acked, {@link Step#HANDED_BACK} once given back) to its key. Called once per such
         * work, from any thread, possibly before its worker reported the {@code AWAIT}.
         */
        void resume(Step step);
    }

    private final class KeyQueue implements Slot {
        /** The ordering key, or {@code null} for a work ordered with nothing (never in the map). */
        final String key;
        private final int hash;
        final ArrayDeque<Work> works = new ArrayDeque<>(2);
        /** Works set aside ({@link Step.Kind#SET_ASIDE}) while the key's later ones run; null while none. */
        List<Work> aside;
        /** What the head's completion decided before its worker reported {@link Step#AWAIT}; null otherwise. */
        Step decidedEarly;

        KeyQueue(String key) {
            this.key = key;
            this.hash = key != null ? key.hashCode() : ++unorderedQueues;
        }

        /**
         * Equality stays identity; the hash is the key's (a queue detached from its key and the key's new queue
         * share it, which costs a collision at most), since the identity hash would be installed in a new object's
         * header for each message that passes {@link #awaiting}.
         */
        @Override
        public int hashCode() {
            return hash;
        }

        boolean hasAside() {
            return aside != null && !aside.isEmpty();
        }

        /** Puts the works set aside back at the front, first in {@code asideOrder}. */
        void bringBackAside() {
            if (!hasAside()) {
                return;
            }
            aside.sort(asideOrder.reversed());
            for (Work w : aside) {
                works.addFirst(w);
            }
            aside.clear();
        }

        @Override
        public void detach() {
            if (key == null) {
                return;
            }
            lock.lock();
            try {
                queues.remove(key, this);
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void resume(Step step) {
            List<Work> handBack;
            lock.lock();
            try {
                if (!awaiting.remove(this)) {
                    // Its worker has not reported the run yet; the step applies when it does.
                    decidedEarly = step;
                    return;
                }
                handBack = apply(this, step);
            } finally {
                lock.unlock();
            }
            if (handBack != null) {
                handBackAll(handBack);
            }
        }
    }

    /** The most keys a worker takes at once, unless runs are grouped in larger transactions. */
    private static final int MAX_CHUNK = 16;

    private final Runner runner;
    private final DelayedTasks timers;
    private final Comparator<Work> asideOrder;
    private final Running running;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition workReady = lock.newCondition();
    private final Map<String, KeyQueue> queues = new HashMap<>();
    private final ArrayDeque<KeyQueue> ready = new ArrayDeque<>();
    /** Keys whose head is a suspect, waiting for the pipeline to be quiet. */
    private final ArrayDeque<KeyQueue> suspects = new ArrayDeque<>();
    private final Set<KeyQueue> parked = new HashSet<>();
    /** Keys whose head work's completion is being written. */
    private final Set<KeyQueue> awaiting = new HashSet<>();
    /** How many queues of works ordered with nothing were made: their hash. Guarded by {@code lock}. */
    private int unorderedQueues;
    private final Thread[] workers;
    /** The most keys one worker takes at once. */
    private final int maxChunk;
    /** How a batch handler's batches are gathered; {@code null} for other handlers. */
    private final Batching batching;
    private int waitingWorkers;
    /** The suspect's key while it runs alone. */
    private KeyQueue isolated;
    private boolean aborting;
    private boolean closed;

    /**
     * How many works the workers run now: the scheduler writes it under its lock, anyone may read it. The group
     * commit reads it to write a batch at once when no run could still add to it.
     */
    static final class Running {
        private volatile int count;
        private volatile Runnable whenIdle = () -> { };

        /** Works running now: a lower bound of the completions that may come soon. */
        int count() {
            return count;
        }

        /**
         * Calls {@code action} each time the count drops to zero, on the worker that ended the last run and under
         * the scheduler's lock: it must be short and must not call the scheduler.
         */
        void whenIdle(Runnable action) {
            this.whenIdle = action;
        }

        private void ended() {
            if (--count == 0) {
                whenIdle.run();
            }
        }
    }

    KeyScheduler(String pipeline, int concurrency, ClassLoader handlerLoader, Runner runner, DelayedTasks timers) {
        this(pipeline, concurrency, handlerLoader, runner, timers, MAX_CHUNK, Comparator.comparingInt(w -> 0),
                new Running(), null);
    }

    /**
     * @param maxChunk the most keys a worker takes at once: at least the size of a transaction group
     * @param asideOrder the order in which works set aside come back to their key's head (the sequence guard's:
     *        lowest number first)
     * @param running where the scheduler counts the works running now
     * @param batching how a batch handler's batches are gathered, or {@code null}: a worker then takes a fair share
     *        of the runnable keys, up to {@code maxChunk}
     */
    KeyScheduler(String pipeline, int concurrency, ClassLoader handlerLoader, Runner runner, DelayedTasks timers,
            int maxChunk, Comparator<Work> asideOrder, Running running, Batching batching) {
        this.maxChunk = Math.max(MAX_CHUNK, batching == null ? maxChunk : batching.size());
        this.batching = batching;
        this.runner = runner;
        this.timers = timers;
        this.asideOrder = asideOrder;
        this.running = running;
        this.workers = new Thread[concurrency];
        AtomicInteger count = new AtomicInteger();
        for (int i = 0; i < concurrency; i++) {
            Thread t = new Thread(() -> {
                MDC.put(Pipeline.MDC_PIPELINE, pipeline);
                work();
            }, "idem-" + pipeline + "-" + count.incrementAndGet());
            t.setDaemon(true);
            t.setContextClassLoader(handlerLoader);
            workers[i] = t;
        }
    }

    /** Starts the workers. */
    void start() {
        for (Thread t : workers) {
            t.start();
        }
    }

    /** Queues works in list order behind their keys' earlier works. Hands them back if aborting. */
    void submit(List<Work> works) {
        int added = 0;
        lock.lock();
        try {
            if (!aborting && !closed) {
                for (Work w : works) {
                    if (enqueue(w)) {
                        added++;
                    }
                }
                for (int i = Math.min(added, waitingWorkers); i > 0; i--) {
                    workReady.signal();
                }
                return;
            }
        } finally {
            lock.unlock();
        }
        handBackAll(works);
    }

    /** Whether the work made a key runnable. */
    private boolean enqueue(Work w) {
        String key = w.orderKey;
        if (key == null) {
            KeyQueue single = new KeyQueue(null);
            w.slot = single;
            single.works.add(w);
            ready.addLast(single);
            return true;
        }
        KeyQueue q = queues.get(key);
        if (q != null) {
            w.slot = q;
            boolean idle = q.works.isEmpty(); // Only works set aside: nothing runs, parks or waits for it.
            q.works.addLast(w);
            if (idle) {
                ready.addLast(q);
            }
            return idle;
        }
        q = new KeyQueue(key);
        w.slot = q;
        q.works.add(w);
        queues.put(key, q);
        ready.addLast(q);
        return true;
    }

    private void work() {
        KeyQueue[] held = new KeyQueue[maxChunk];
        Step[] steps = new Step[maxChunk];
        Work[] heads = new Work[maxChunk];
        int count = 0;
        List<Work> handBack = new ArrayList<>();
        while (true) {
            boolean alone = false;
            lock.lock();
            try {
                for (int i = 0; i < count; i++) {
                    List<Work> rest = finishOrGiveUp(held[i], steps[i]);
                    if (rest != null) {
                        handBack.addAll(rest);
                    }
                    held[i] = null;
                }
                count = 0;
                if (handBack.isEmpty()) {
                    count = take(held);
                    alone = count == 1 && held[0] == isolated;
                    // Read under the lock: the intake appends to a held key's queue while its head runs, and an
                    // ArrayDeque read during another thread's append (a resize) can fail or return another element.
                    for (int i = 0; i < count; i++) {
                        heads[i] = held[i].works.peekFirst();
                    }
                }
            } catch (Throwable t) {
                // take() failed (finishing gives up on its own): the keys it had taken go back, unrun.
                log.error("A pipeline worker failed while taking its next keys; handing back what it took", t);
                count = 0;
                for (int i = 0; i < held.length; i++) {
                    if (held[i] != null) {
                        handBack.addAll(giveUp(held[i]));
                        held[i] = null;
                    }
                }
            } finally {
                lock.unlock();
            }
            if (!handBack.isEmpty()) {
                handBackAll(handBack);
                handBack.clear();
                continue;
            }
            if (count == 0) {
                if (closed()) {
                    return;
                }
                continue;
            }
            if (count == 1) {
                steps[0] = runHead(heads[0], alone);
                heads[0] = null;
            } else {
                runHeads(heads, count, alone, steps);
            }
        }
    }

    private boolean closed() {
        lock.lock();
        try {
            return closed;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Applies a run's step to its key, as {@link #finish} does. Should the scheduler's own bookkeeping fail (a defect,
     * or an error such as out of memory), the key's works not settled yet go back to the broker and the key leaves
     * the scheduler, so the worker, and the rest of the pipeline, go on: a worker that died would leave the keys it
     * held in flight for good. Under the lock.
     */
    private List<Work> finishOrGiveUp(KeyQueue q, Step step) {
        try {
            return finish(q, step);
        } catch (Throwable t) {
            log.error("A pipeline worker failed while applying {} to the key '{}'; handing back its messages",
                    step.kind(), q.key, t);
            Work head = q.works.peekFirst();
            List<Work> rest = giveUp(q);
            if (step.kind() == Step.Kind.AWAIT) {
                rest.remove(head); // Its completion is being written: that write settles it.
            }
            return rest;
        }
    }

    /** Takes the key out of the scheduler; returns its works not settled yet, to hand back. Under the lock. */
    private List<Work> giveUp(KeyQueue q) {
        ready.remove(q);
        suspects.remove(q);
        parked.remove(q);
        awaiting.remove(q);
        if (isolated == q) {
            isolated = null;
        }
        workReady.signalAll();
        List<Work> rest = drain(q);
        rest.removeIf(Work::isSettled);
        return rest;
    }

    /** Hands each work back; a failure on one is logged and the others still go. */
    private void handBackAll(List<Work> works) {
        for (Work w : works) {
            try {
                runner.handBack(w);
            } catch (Throwable t) {
                log.error("Could not hand {} back; the broker redelivers it once the process ends", w.describe(), t);
            }
        }
    }

    private void runHeads(Work[] heads, int count, boolean alone, Step[] steps) {
        Arrays.fill(steps, 0, count, null);
        try {
            runner.runAll(heads, count, alone, steps);
        } catch (Throwable t) {
            log.error("A pipeline worker failed on {} messages; handing back those not settled", count, t);
            for (int i = 0; i < count; i++) {
                if (steps[i] == null) {
                    try {
                        runner.handBack(heads[i]);
                    } catch (Throwable again) {
                        log.error("Could not hand {} back; the broker redelivers it once the process ends",
                                heads[i].describe(), again);
                    }
                    steps[i] = Step.HANDED_BACK;
                }
            }
        }
        Arrays.fill(heads, 0, count, null);
    }

    private Step runHead(Work head, boolean alone) {
        try {
            return runner.run(head, alone);
        } catch (Throwable t) {
            // A failure of the runtime's own code around the run (a handler's failures, out of memory included,
            // are the run's, see RunStrategy.retryOrGiveUp): hand the message back unfinished and keep the worker,
            // as the pool's size is the pipeline's concurrency.
            log.error("A pipeline worker failed on {}; handing it back", head.describe(), t);
            try {
                runner.handBack(head);
            } catch (Throwable again) {
                log.error("Could not hand {} back; the broker redelivers it once the process ends",
                        head.describe(), again);
            }
            return Step.HANDED_BACK;
        }
    }

    /**
     * Takes the next keys to run into {@code out}: one suspect alone, or up to a fair share of the
     * runnable keys (so a worker pays the lock once per chunk, not per message, while the other workers
     * still find keys); 0 once closed. Called under the lock; may wait.
     */
    private int take(KeyQueue[] out) {
        long lingerEnd = 0;
        boolean lingering = false;
        while (!closed) {
            if (isolated == null) {
                if (!suspects.isEmpty()) {
                    if (running.count == 0) {
                        isolated = suspects.pollFirst();
                        running.count++;
                        out[0] = isolated;
                        return 1;
                    }
                } else if (!ready.isEmpty()) {
                    if (batching != null && ready.size() < batching.size() && batching.lingerNanos() > 0) {
                        long now = System.nanoTime();
                        if (!lingering) {
                            lingering = true;
                            lingerEnd = now + batching.lingerNanos();
                        }
                        if (lingerEnd - now > 0) {
                            waitingWorkers++;
                            try {
                                workReady.awaitNanos(lingerEnd - now);
                            } catch (InterruptedException e) {
                                // Workers are not stopped by interrupts (they wait uninterruptibly elsewhere): a stray
                                // one ends the linger, nothing more.
                                lingerEnd = now;
                            } finally {
                                waitingWorkers--;
                            }
                            continue;
                        }
                    }
                    int share = batching != null ? Math.min(out.length, Math.min(batching.size(), ready.size()))
                            : Math.max(1, Math.min(out.length, ready.size() / workers.length));
                    int n = 0;
                    while (n < share) {
                        KeyQueue q = ready.pollFirst();
                        if (q == null) {
                            break;
                        }
                        if (q.works.isEmpty()) {
                            // A defect of this class: running it would run nothing, or another key's work.
                            log.error("A pipeline worker found the key '{}' ready with nothing queued; skipping it",
                                    q.key);
                            continue;
                        }
                        if (q.works.peekFirst().claim.suspect()) {
                            suspects.addLast(q);
                            break;
                        }
                        out[n++] = q;
                    }
                    if (n > 0) {
                        running.count += n;
                        return n;
                    }
                    continue;
                }
            }
            waitingWorkers++;
            try {
                workReady.awaitUninterruptibly();
            } finally {
                waitingWorkers--;
            }
        }
        return 0;
    }

    /** Applies a run's step to its key; returns works to hand back, or {@code null}. Under the lock. */
    private List<Work> finish(KeyQueue q, Step step) {
        running.ended();
        return apply(q, step);
    }

    private List<Work> apply(KeyQueue q, Step step) {
        List<Work> handBack = null;
        Step.Kind kind = step.kind();
        if (!aborting && (kind == Step.Kind.PARK || kind == Step.Kind.SET_ASIDE || kind == Step.Kind.ISOLATE)
                && q.works.peekFirst().revoked) {
            // Its delivery was revoked while it ran: it goes back rather than wait here, and its key goes on.
            Work head = q.works.pollFirst();
            head.slot = null;
            handBack = new ArrayList<>(2);
            handBack.add(head);
            List<Work> rest = headLeft(q);
            if (rest != null) {
                handBack.addAll(rest);
            }
        } else {
            switch (kind) {
                case NEXT -> {
                    q.works.pollFirst();
                    handBack = headLeft(q);
                }
                case PARK -> {
                    if (aborting) {
                        handBack = drain(q);
                    } else if (step.parkNanos() == 0) {
                        ready.addLast(q);
                    } else {
                        parked.add(q);
                        timers.schedule(step.parkNanos(), () -> unpark(q));
                    }
                }
                case AWAIT -> {
                    Step decided = q.decidedEarly;
                    if (decided != null) {
                        q.decidedEarly = null;
                        return apply(q, decided);
                    }
                    awaiting.add(q);
                    if (aborting) {
                        handBack = drainBehindHead(q);
                    }
                }
                case ISOLATE -> {
                    if (aborting) {
                        handBack = drain(q);
                    } else {
                        suspects.addLast(q);
                    }
                }
                case HANDED_BACK -> {
                    q.works.pollFirst();
                    handBack = drain(q);
                }
                case SET_ASIDE -> {
                    Work head = q.works.pollFirst();
                    if (q.aside == null) {
                        q.aside = new ArrayList<>(2);
                    }
                    q.aside.add(head);
                    if (aborting || (detached(q) && !q.works.isEmpty())) {
                        handBack = drain(q);
                    } else {
                        timers.schedule(step.parkNanos(), () -> recall(q, head));
                        requeueOrDrop(q);
                    }
                }
            }
        }
        if (q == isolated) {
            isolated = null;
            workReady.signalAll();
        } else if (running.count == 0 && (!suspects.isEmpty() || closed)) {
            workReady.signalAll();
        } else if (!ready.isEmpty() && waitingWorkers > 0) {
            workReady.signal();
        }
        return handBack;
    }

    /** The head left its key's queue settled (or revoked): the works set aside come back, the key goes on. */
    private List<Work> headLeft(KeyQueue q) {
        q.bringBackAside();
        if ((aborting || detached(q)) && !q.works.isEmpty()) {
            return drain(q);
        }
        requeueOrDrop(q);
        return null;
    }

    private void requeueOrDrop(KeyQueue q) {
        if (!q.works.isEmpty()) {
            ready.addLast(q);
        } else if (q.key != null && !q.hasAside()) {
            queues.remove(q.key, q);
        }
        // A key with only works set aside stays in the map, idle, so its later messages queue behind them.
    }

    /** A set-aside work's wait ran out: back to its key's queue, behind a head that may be running. */
    private void recall(KeyQueue q, Work w) {
        List<Work> handBack = null;
        lock.lock();
        try {
            if (q.aside == null || !q.aside.remove(w)) {
                return; // Brought back already, or handed back.
            }
            if (aborting) {
                handBack = List.of(w);
            } else if (q.works.isEmpty()) {
                q.works.add(w);
                ready.addLast(q);
                if (waitingWorkers > 0) {
                    workReady.signal();
                }
            } else {
                Work head = q.works.pollFirst();
                q.works.addFirst(w);
                q.works.addFirst(head);
            }
        } finally {
            lock.unlock();
        }
        if (handBack != null) {
            handBackAll(handBack);
        }
    }

    private boolean detached(KeyQueue q) {
        return q.key != null && queues.get(q.key) != q;
    }

    private List<Work> drain(KeyQueue q) {
        List<Work> rest = new ArrayList<>(q.works);
        q.works.clear();
        if (q.hasAside()) {
            rest.addAll(q.aside);
            q.aside.clear();
        }
        if (q.key != null) {
            queues.remove(q.key, q);
        }
        return rest;
    }

    /** The queued works behind a key's head, which stays; the key keeps its place in the map. */
    private static List<Work> drainBehindHead(KeyQueue q) {
        Work head = q.works.pollFirst();
        List<Work> rest = new ArrayList<>(q.works);
        q.works.clear();
        q.works.add(head);
        if (q.hasAside()) {
            rest.addAll(q.aside);
            q.aside.clear();
        }
        return rest;
    }

    private void unpark(KeyQueue q) {
        List<Work> handBack = null;
        lock.lock();
        try {
            if (!parked.remove(q)) {
                return;
            }
            if (aborting) {
                handBack = drain(q);
            } else {
                ready.addLast(q);
                if (waitingWorkers > 0) {
                    workReady.signal();
                }
            }
        } finally {
            lock.unlock();
        }
        if (handBack != null) {
            handBackAll(handBack);
        }
    }

    /**
     * The broker took these works' deliveries away (their partition or queue was revoked): each that does not run
     * now (queued behind its key's head, set aside, or the head of a key waiting for a worker, parked on a timer or
     * waiting to run alone) leaves its key's queue and is handed back, its claim released; the key's other works go
     * on in their order. A work that runs now, or whose completion is being written, finishes; should it then ask to
     * wait (park, set aside, run alone), it is handed back instead. A work settled already, or not here, is ignored.
     * Any thread; the hand-backs run on the caller's.
     *
     * @return how many works it handed back
     */
    int revoke(Collection<Work> works) {
        List<Work> handBack = new ArrayList<>();
        lock.lock();
        try {
            Set<KeyQueue> touched = new HashSet<>();
            for (Work w : works) {
                if (!w.revoked && !w.isSettled() && w.slot instanceof KeyQueue q) {
                    w.revoked = true;
                    touched.add(q);
                }
            }
            if (touched.isEmpty()) {
                return 0;
            }
            // Keys waiting for a worker: their heads do not run either.
            Set<KeyQueue> waiting = new HashSet<>();
            ready.removeIf(q -> touched.contains(q) && waiting.add(q));
            suspects.removeIf(q -> touched.contains(q) && waiting.add(q));
            for (KeyQueue q : touched) {
                Work head = q.works.peekFirst();
                boolean headRuns = head != null && !waiting.contains(q) && !parked.contains(q);
                takeOutRevoked(q, headRuns ? head : null, handBack);
                if (headRuns) {
                    continue; // Its run, when it returns, decides what comes next for the key.
                }
                if (q.works.isEmpty()) {
                    parked.remove(q); // Its timer then finds it gone.
                    if (q.key != null && !q.hasAside()) {
                        queues.remove(q.key, q);
                    }
                } else if (waiting.contains(q) || (q.works.peekFirst() != head && parked.remove(q))) {
                    ready.addLast(q);
                }
            }
            if (!ready.isEmpty() && waitingWorkers > 0) {
                workReady.signalAll();
            }
        } finally {
            lock.unlock();
        }
        handBackAll(handBack);
        return handBack.size();
    }

    /**
     * Moves the revoked works of {@code q} but {@code keep} to {@code out}, out of the queue: their hand-back must not
     * detach the queue, which goes on with the others. Under the lock.
     */
    private static void takeOutRevoked(KeyQueue q, Work keep, List<Work> out) {
        int from = out.size();
        q.works.removeIf(w -> w != keep && w.revoked && out.add(w));
        if (q.hasAside()) {
            q.aside.removeIf(w -> w.revoked && out.add(w));
        }
        for (int i = from; i < out.size(); i++) {
            out.get(i).slot = null;
        }
    }

    /**
     * Stops running queued work: every work not running now (queued, parked, waiting to run alone) is
     * handed back, and so is whatever a running work's key still holds once that run returns.
     */
    void abort() {
        List<Work> handBack = new ArrayList<>();
        lock.lock();
        try {
            aborting = true;
            for (ArrayDeque<KeyQueue> waiting : List.of(ready, suspects)) {
                for (KeyQueue q : waiting) {
                    handBack.addAll(drain(q));
                }
                waiting.clear();
            }
            for (KeyQueue q : parked) {
                handBack.addAll(drain(q));
            }
            parked.clear();
            for (KeyQueue q : awaiting) {
                handBack.addAll(drainBehindHead(q));
            }
            for (KeyQueue q : List.copyOf(queues.values())) {
                if (q.works.isEmpty() && q.hasAside()) {
                    handBack.addAll(drain(q));
                }
            }
        } finally {
            lock.unlock();
        }
        handBackAll(handBack);
    }

    /** Ordering keys with a queue now: a key that went idle holds none. */
    int keysHeld() {
        lock.lock();
        try {
            return queues.size();
        } finally {
            lock.unlock();
        }
    }

    /** Lets the workers end after their current run; call once the pipeline drained or {@link #abort aborted}. */
    void shutdown() {
        lock.lock();
        try {
            closed = true;
            workReady.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Waits for the workers to end; true if all did before the deadline (System.nanoTime). */
    boolean awaitTermination(long deadlineNanos) throws InterruptedException {
        for (Thread t : workers) {
            long left = deadlineNanos - System.nanoTime();
            if (left > 0) {
                TimeUnit.NANOSECONDS.timedJoin(t, left);
            }
            if (t.isAlive()) {
                return false;
            }
        }
        return true;
    }

    /** Interrupts the workers, which end after their current run. */
    void shutdownNow() {
        shutdown();
        for (Thread t : workers) {
            t.interrupt();
        }
    }
}
