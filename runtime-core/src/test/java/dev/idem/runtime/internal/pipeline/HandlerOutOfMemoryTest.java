package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.DLQ;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.config;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.InboundMessage;
import dev.idem.testkit.memory.InMemoryBroker;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A handler that throws {@link OutOfMemoryError}: the failure is the run's, so the message gets a bounded outcome
 * (retried, then dead-lettered) instead of going back to the broker for ever; a run that ran out of memory while
 * other handlers ran beside it runs again alone before its failure counts, so a message whose run failed only
 * because others filled the heap is not blamed.
 */
class HandlerOutOfMemoryTest {

    private final PipelineHarness harness = new PipelineHarness();

    @AfterEach
    void close() {
        harness.close();
    }

    @Test
    void aHandlerThatRunsOutOfMemoryEveryTimeIsRetriedAloneThenDeadLetteredWhileTheOthersAreProcessed() {
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        AtomicInteger running = new AtomicInteger();
        List<Integer> runningBesideRetries = new CopyOnWriteArrayList<>();
        IdemRuntime runtime = harness.start(config("concurrency: 4\nordering: none\nmax-deliveries: 5"),
                (message, context) -> {
                    int besides = running.getAndIncrement();
                    try {
                        String key = message.idempotencyKey().orElseThrow();
                        int run = runs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                        if (key.equals("oom-1")) {
                            if (run > 1) {
                                runningBesideRetries.add(besides);
                            }
                            throw new OutOfMemoryError("test: a 1 GiB buffer");
                        }
                    } finally {
                        running.decrementAndGet();
                    }
                });
        harness.publish("oom-1", "too big");
        for (int i = 0; i < 20; i++) {
            harness.publish("ok-" + i, "fine");
        }

        InboundMessage dead = awaitDeadLetter();
        assertThat(dead.headers())
                .containsEntry("message-id", "oom-1")
                .containsEntry(InMemoryBroker.DEAD_LETTER_CAUSE, "handler-failed")
                .containsEntry(InMemoryBroker.ATTEMPTS, "3");
        assertThat(dead.headers().get(InMemoryBroker.DEAD_LETTER_DETAIL))
                .isEqualTo("java.lang.OutOfMemoryError: test: a 1 GiB buffer");
        await().until(() -> count(runtime, "processed") == 20);
        harness.awaitSettled();

        assertThat(runs.get("oom-1")).as("retry.max-attempts runs, no more").hasValue(3);
        assertThat(runningBesideRetries).as("each retry ran alone").containsExactly(0, 0);
        assertThat(count(runtime, "retried")).isEqualTo(2);
        assertThat(count(runtime, "dead-lettered")).isEqualTo(1);
        assertThat(count(runtime, "store-unavailable")).isZero();
        assertThat(runs).allSatisfy((key, n) -> {
            if (!key.equals("oom-1")) {
                assertThat(n).as(key).hasValue(1);
            }
        });
    }

    @Test
    void aMessageThatRanOutOfMemoryBesideAnotherRunsAgainAloneAndIsNotBlamed() throws Exception {
        AtomicBoolean hogRunning = new AtomicBoolean();
        CountDownLatch hogStarted = new CountDownLatch(1);
        CountDownLatch releaseHog = new CountDownLatch(1);
        List<Boolean> victimRunsBesideTheHog = new CopyOnWriteArrayList<>();
        // No retries at all: only the run alone stands between the victim and the dead-letter queue.
        IdemRuntime runtime = harness.start(PipelineHarness.pipeline("""
                concurrency: 4
                ordering: none
                retry:
                  max-attempts: 1
                """), (message, context) -> {
                    if (message.idempotencyKey().orElseThrow().equals("hog")) {
                        hogRunning.set(true);
                        hogStarted.countDown();
                        try {
                            assertThat(releaseHog.await(20, TimeUnit.SECONDS)).isTrue();
                        } finally {
                            hogRunning.set(false);
                        }
                        return;
                    }
                    boolean besideTheHog = hogRunning.get();
                    victimRunsBesideTheHog.add(besideTheHog);
                    if (besideTheHog) {
                        // The hog holds the heap: whoever allocates next runs out of memory.
                        throw new OutOfMemoryError("Java heap space");
                    }
                });
        harness.publish("hog", "holds the heap");
        assertThat(hogStarted.await(10, TimeUnit.SECONDS)).isTrue();
        harness.publish("victim", "needs a little memory");
        await().until(() -> count(runtime, "retried") == 1);
        releaseHog.countDown();

        await().until(() -> count(runtime, "processed") == 2);
        harness.awaitSettled();
        assertThat(victimRunsBesideTheHog).as("ran beside the hog, then alone").containsExactly(true, false);
        assertThat(harness.broker.depth(DLQ)).isZero();
        assertThat(count(runtime, "dead-lettered")).isZero();
    }

    /**
     * A real allocation past the heap, in a JVM of its own with {@code -Xmx96m}: a handler asks for 1 GiB, the JVM
     * throws {@code OutOfMemoryError: Java heap space}, and the message is dead-lettered after its retries while the
     * next message is processed. {@link RealAllocation} is that JVM's main class.
     */
    @Test
    void aRealAllocationPastTheHeapIsDeadLetteredAfterItsRetries(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("out.txt");
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx96m", "-XX:+UseSerialGC", "-cp", classPath, RealAllocation.class.getName(), out.toString())
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("console.txt").toFile())
                .start();
        boolean ended = child.waitFor(90, TimeUnit.SECONDS);
        if (!ended) {
            child.destroyForcibly();
        }
        String console = Files.readString(dir.resolve("console.txt"));
        assertThat(ended).as("the child JVM ended; its output:\n%s", console).isTrue();
        assertThat(child.exitValue()).as("exit code; output:\n%s", console).isZero();
        assertThat(Files.readAllLines(out, StandardCharsets.UTF_8)).as("output:\n%s", console).containsExactly(
                "cause=handler-failed",
                "detail=java.lang.OutOfMemoryError: Java heap space",
                "attempts=3",
                "big runs=3",
                "small processed=1");
    }

    /** The child JVM of {@link #aRealAllocationPastTheHeapIsDeadLetteredAfterItsRetries}. */
    static final class RealAllocation {

        /** Where the allocation lands, should it ever succeed: kept reachable so it cannot be optimised away. */
        static volatile byte[] held;

        public static void main(String[] args) throws IOException {
            AtomicInteger bigRuns = new AtomicInteger();
            List<String> lines = new ArrayList<>();
            try (PipelineHarness h = new PipelineHarness()) {
                IdemRuntime runtime = h.start(config("concurrency: 2"), (message, context) -> {
                    if (message.idempotencyKey().orElseThrow().equals("big")) {
                        bigRuns.incrementAndGet();
                        held = new byte[1 << 30];
                    }
                });
                h.publish("big", "1 GiB please");
                h.publish("small", "a few bytes");
                List<InboundMessage> dead = new ArrayList<>();
                await().atMost(Duration.ofSeconds(60)).until(() -> {
                    dead.addAll(h.broker.drain(DLQ));
                    return !dead.isEmpty() && count(runtime, "processed") == 1;
                });
                h.awaitSettled();
                Map<String, String> headers = dead.get(0).headers();
                lines.add("cause=" + headers.get(InMemoryBroker.DEAD_LETTER_CAUSE));
                lines.add("detail=" + headers.get(InMemoryBroker.DEAD_LETTER_DETAIL));
                lines.add("attempts=" + headers.get(InMemoryBroker.ATTEMPTS));
                lines.add("big runs=" + bigRuns.get());
                lines.add("small processed=" + (long) count(runtime, "processed"));
                assertThat(h.broker.depth(QUEUE)).isZero();
            }
            Files.write(Path.of(args[0]), lines, StandardCharsets.UTF_8);
            System.exit(0);
        }
    }

    private InboundMessage awaitDeadLetter() {
        List<InboundMessage> dead = new ArrayList<>();
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            dead.addAll(harness.broker.drain(DLQ));
            return !dead.isEmpty();
        });
        return dead.get(0);
    }
}
