package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.QUEUE;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.config;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.BatchHandler;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.ReplyAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Request/reply through the whole pipeline (in-memory broker, Caffeine store): a handler's {@code context.reply} goes
 * to the request's reply address with its correlation ID once the run succeeded; a duplicate request does not run the
 * handler and gets the stored reply, with its own correlation ID; a failed run replies nothing.
 */
class RequestReplyTest {

    private static final String REPLIES = "replies";

    private final PipelineHarness harness = new PipelineHarness();

    @AfterEach
    void close() {
        harness.close();
    }

    private void request(String id, String body, String correlation) {
        harness.broker.publishRequest(QUEUE, new OutboundMessage(null, null, Map.of("message-id", id),
                body.getBytes(StandardCharsets.UTF_8)), ReplyAddress.of(REPLIES, correlation));
    }

    private List<InboundMessage> awaitReplies(int expected) {
        List<InboundMessage> replies = new ArrayList<>();
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            replies.addAll(harness.broker.drain(REPLIES));
            return replies.size() >= expected;
        });
        return replies;
    }

    private static String correlation(InboundMessage reply) {
        return new String(ReplyAddress.correlationFromHeader(reply.headers().get(ReplyAddress.CORRELATION_ID_HEADER)),
                StandardCharsets.UTF_8);
    }

    private static String body(InboundMessage m) {
        return new String(m.payload(), StandardCharsets.UTF_8);
    }

    /** Replies with the request's body and a value of this run only, so a second run would show. */
    private final MessageHandler echo = (message, context) -> context.reply(
            ("echo " + message.payloadAsString() + " " + UUID.randomUUID()).getBytes(StandardCharsets.UTF_8),
            Map.of("content-type", "text/plain"));

    @Test
    void aRequestGetsItsReplyAndADuplicateGetsTheStoredOneWithItsOwnCorrelationId() {
        IdemRuntime runtime = harness.start(config(""), echo);

        request("r-1", "one", "corr-a");
        InboundMessage first = awaitReplies(1).get(0);
        request("r-1", "one", "corr-b");
        InboundMessage again = awaitReplies(1).get(0);
        harness.awaitSettled();

        assertThat(body(first)).startsWith("echo one ");
        assertThat(correlation(first)).isEqualTo("corr-a");
        assertThat(first.headers()).containsEntry("content-type", "text/plain");
        assertThat(body(again)).as("the stored reply, not a second run").isEqualTo(body(first));
        assertThat(correlation(again)).isEqualTo("corr-b");
        assertThat(again.brokerMessageId()).as("every copy of a reply carries one ID").isEqualTo(first.brokerMessageId());
        assertThat(count(runtime, "processed")).isEqualTo(1);
        assertThat(count(runtime, "duplicate")).isEqualTo(1);
        assertThat(runtime.meterRegistry().find(PipelineMetrics.REPLIES).tag("from", "store").counter().count())
                .isEqualTo(1);
    }

    @Test
    void duplicatesInOneDeliveryBatchEachGetTheReply() {
        AtomicInteger runs = new AtomicInteger();
        MessageHandler handler = (message, context) -> {
            runs.incrementAndGet();
            echo.handle(message, context);
        };
        for (int i = 0; i < 5; i++) {
            request("r-1", "one", "corr-" + i);
        }
        IdemRuntime runtime = harness.start(config(""), handler);

        List<InboundMessage> replies = awaitReplies(5);
        harness.awaitSettled();

        assertThat(runs).hasValue(1);
        assertThat(replies).extracting(RequestReplyTest::body).containsOnly(body(replies.get(0)));
        assertThat(replies).extracting(RequestReplyTest::correlation)
                .containsExactlyInAnyOrder("corr-0", "corr-1", "corr-2", "corr-3", "corr-4");
        assertThat(count(runtime, "processed")).isEqualTo(1);
    }

    @Test
    void aRunThatFailsRepliesNothingAndItsRetryReplies() {
        AtomicInteger runs = new AtomicInteger();
        MessageHandler handler = (message, context) -> {
            context.reply(("run " + runs.incrementAndGet()).getBytes(StandardCharsets.UTF_8), Map.of());
            if (runs.get() == 1) {
                throw new IllegalStateException("fails after replying (test)");
            }
        };
        harness.start(config(""), handler);

        request("r-1", "one", "corr-a");
        List<InboundMessage> replies = awaitReplies(1);
        harness.awaitSettled();

        assertThat(replies).extracting(RequestReplyTest::body).containsExactly("run 2");
        assertThat(harness.broker.depth(REPLIES)).isZero();
    }

    @Test
    void aReplyToAMessageWithoutAReplyAddressOrTooLargeFailsTheRun() {
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        MessageHandler handler = (message, context) -> {
            try {
                context.reply(new byte[message.replyTo().isPresent() ? 70_000 : 1], Map.of());
            } catch (RuntimeException e) {
                failures.add(e);
            }
        };
        harness.start(config("reply: {max-size: 65536}\n"), handler);

        harness.publish("plain-1", "no reply address");
        request("r-1", "big", "corr-a");
        await().until(() -> failures.size() == 2);

        assertThat(failures).anySatisfy(e -> assertThat(e).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("carries no reply address"));
        assertThat(failures).anySatisfy(e -> assertThat(e).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("more than pipelines.orders.reply.max-size (65536)"));
    }

    @Test
    void aBatchHandlerRepliesPerMessage() {
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        BatchHandler handler = (messages, context) -> {
            for (Message m : messages) {
                runs.computeIfAbsent(m.idempotencyKey().orElseThrow(), k -> new AtomicInteger()).incrementAndGet();
                context.of(m).reply(("done " + m.idempotencyKey().orElseThrow()).getBytes(StandardCharsets.UTF_8),
                        Map.of());
            }
        };
        for (int i = 0; i < 6; i++) {
            request("r-" + i, "x", "corr-" + i);
        }
        harness.start(config("batch: {size: 6, linger: 50ms}\n"), handler);

        List<InboundMessage> replies = awaitReplies(6);

        assertThat(replies).extracting(r -> correlation(r) + "=" + body(r)).containsExactlyInAnyOrder(
                "corr-0=done r-0", "corr-1=done r-1", "corr-2=done r-2", "corr-3=done r-3", "corr-4=done r-4",
                "corr-5=done r-5");
        assertThat(runs.values()).allSatisfy(n -> assertThat(n).hasValue(1));
    }
}
