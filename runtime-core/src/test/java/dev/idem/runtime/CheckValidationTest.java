package dev.idem.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.spi.ConfigException;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.StoreContext;
import dev.idem.store.caffeine.CaffeineDedupStoreProvider;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import dev.idem.testkit.memory.InMemoryBroker;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code check} ({@link Idem.Builder#validate()}) refuses what a start would refuse, all of it at once, and never hangs. */
class CheckValidationTest {

    private final ManualTicker ticker = new ManualTicker();
    private final InMemoryBroker broker = new InMemoryBroker(ticker, 50);
    private final DedupStore store = new CaffeineDedupStoreProvider().create(
            TestPluginConfig.defaults("store.caffeine", new CaffeineDedupStoreProvider().configSpec()),
            new StoreContext(ticker));

    @BeforeEach
    void block() {
        BlockingHandler.release = new CountDownLatch(1);
    }

    @AfterEach
    void release() {
        BlockingHandler.release.countDown();
        store.close();
    }

    /** A handler whose constructor waits for a service that never answers. */
    public static final class BlockingHandler implements MessageHandler {
        static volatile CountDownLatch release;

        public BlockingHandler() throws InterruptedException {
            release.await();
        }

        @Override
        public void handle(Message message, HandlerContext context) {
        }
    }

    /** A handler that counts its closes. */
    public static final class CountingHandler implements MessageHandler, AutoCloseable {
        static final AtomicInteger CLOSED = new AtomicInteger();

        @Override
        public void handle(Message message, HandlerContext context) {
        }

        @Override
        public void close() {
            CLOSED.incrementAndGet();
        }
    }

    private static String config(String runtime, String pipeline) {
        return "broker: {type: memory}\nstore: {type: caffeine}\n" + runtime + "pipelines:\n  orders:\n    source: orders\n"
                + pipeline.lines().map(l -> "    " + l + "\n").reduce("", String::concat);
    }

    private Idem.Builder builder(String yaml) {
        return Idem.builder().configYaml(yaml).env(Map.of()).broker("memory", broker.connect()).store("caffeine", store)
                .handlerLoader(CheckValidationTest.class.getClassLoader());
    }

    @Test
    void everyBadTemplateIsReportedWithTheOtherProblemsByCheckAndByStart() {
        String yaml = config("", """
                handler: %s
                lease: -5s
                id:
                  - {type: template, template: "order-{/orderId"}
                  - {type: template, template: "fixed"}
                """.formatted(CountingHandler.class.getName()));

        for (Runnable attempt : new Runnable[] {() -> builder(yaml).validate(), () -> builder(yaml).start()}) {
            ConfigException failure = catchThrowableOfType(attempt::run, ConfigException.class);
            assertThat(failure.problems()).hasSize(3)
                    .anySatisfy(p -> assertThat(p).isEqualTo("Invalid value '-5s' for pipelines.orders.lease: must be at least 1s"))
                    .anySatisfy(p -> assertThat(p).startsWith("Invalid value 'order-{/orderId' for"
                            + " pipelines.orders.id[0].template: unclosed '{'"))
                    .anySatisfy(p -> assertThat(p).startsWith("Invalid value 'fixed' for pipelines.orders.id[1].template:"
                            + " has no placeholder"));
        }
    }

    @Test
    void aHandlerConstructorThatBlocksFailsCheckWithinTheTimeoutNamingTheClass() {
        String yaml = config("runtime: {handler-create-timeout: 300ms}\n",
                "handler: " + BlockingHandler.class.getName());
        long started = System.nanoTime();

        ConfigException failure = catchThrowableOfType(() -> builder(yaml).validate(), ConfigException.class);

        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(20));
        assertThat(failure.problems()).singleElement().asString()
                .startsWith("Handler class '" + BlockingHandler.class.getName() + "' (pipelines.orders.handler, from ")
                .contains("was not created within 300ms (runtime.handler-create-timeout)")
                .contains("was still running at " + BlockingHandler.class.getName() + ".<init>")
                .endsWith("or raise runtime.handler-create-timeout");
    }

    @Test
    void whatRunsBeforeConnectingCanAbortTheStartBeforeAnythingConsumes() {
        CountingHandler.CLOSED.set(0);
        String yaml = config("", "handler: " + CountingHandler.class.getName());
        broker.publish("orders", new OutboundMessage(null, null, Map.of("message-id", "m-1"), new byte[0]));

        IllegalStateException failure = catchThrowableOfType(() -> builder(yaml)
                .beforeConnect(config -> {
                    throw new IllegalStateException("port 9464 in use");
                }).start(), IllegalStateException.class);

        assertThat(failure).hasMessage("port 9464 in use");
        assertThat(broker.depth("orders")).as("nothing was consumed").isEqualTo(1);
        assertThat(broker.unsettled("orders")).isZero();
        assertThat(CountingHandler.CLOSED).as("the handler made for the start is closed").hasValue(1);
    }
}
