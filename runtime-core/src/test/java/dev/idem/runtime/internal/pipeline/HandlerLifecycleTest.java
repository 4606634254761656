package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A handler the runtime made from its class name is closed on stop, in its own class loader; one bound in code is not. */
class HandlerLifecycleTest {

    private final PipelineHarness harness = new PipelineHarness();

    @AfterEach
    void close() {
        harness.close();
    }

    /** Made by the runtime from {@code pipelines.orders.handler}. */
    public static final class ClosingHandler implements MessageHandler, AutoCloseable {
        static final AtomicInteger CLOSED = new AtomicInteger();
        static volatile ClassLoader closedIn;

        @Override
        public void handle(Message message, HandlerContext context) {
        }

        @Override
        public void close() {
            closedIn = Thread.currentThread().getContextClassLoader();
            CLOSED.incrementAndGet();
        }
    }

    @Test
    void aHandlerMadeFromItsClassNameIsClosedOnStop() {
        ClosingHandler.CLOSED.set(0);
        IdemRuntime runtime = Idem.builder()
                .configYaml(PipelineHarness.pipeline("handler: " + ClosingHandler.class.getName()))
                .env(Map.of())
                .broker("memory", harness.broker.connect())
                .store("caffeine", harness.store)
                .handlerLoader(ClosingHandler.class.getClassLoader())
                .ticker(harness.ticker)
                .start();
        harness.publish("m-1", "x");
        await().until(() -> count(runtime, "processed") == 1);
        assertThat(ClosingHandler.CLOSED).hasValue(0);

        runtime.stop(Duration.ofSeconds(5));
        assertThat(ClosingHandler.CLOSED).hasValue(1);
        assertThat(ClosingHandler.closedIn).isSameAs(ClosingHandler.class.getClassLoader());
        runtime.stop(Duration.ofSeconds(5));
        assertThat(ClosingHandler.CLOSED).as("stop is idempotent").hasValue(1);
    }

    @Test
    void aHandlerBoundInCodeBelongsToTheCallerAndIsNotClosed() throws Exception {
        AtomicInteger closed = new AtomicInteger();
        class Bound implements MessageHandler, AutoCloseable {
            @Override
            public void handle(Message message, HandlerContext context) {
            }

            @Override
            public void close() {
                closed.incrementAndGet();
            }
        }
        IdemRuntime runtime = harness.start(PipelineHarness.config(""), new Bound());
        runtime.stop(Duration.ofSeconds(5));
        assertThat(closed).hasValue(0);
    }
}
