package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import dev.idem.api.HandlerContext;
import dev.idem.api.HandlerLifecycle;
import dev.idem.api.HandlerSettings;
import dev.idem.api.IdemException;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.ConfigException;
import java.net.URL;
import java.net.URLClassLoader;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link HandlerLifecycle#init}: once per handler the runtime creates, with its pipeline's settings, before the
 * first message, in the handler's class loader and bounded by {@code runtime.handler-create-timeout}; a failure
 * stops the start before anything is consumed.
 */
class HandlerInitTest {

    private final PipelineHarness harness = new PipelineHarness();

    /** Everything the handlers below did, in order: {@code new}, {@code init:<pipeline>}, {@code handle}, {@code close}. */
    static final List<String> EVENTS = new CopyOnWriteArrayList<>();
    static final List<RecordingHandler> CREATED = new CopyOnWriteArrayList<>();
    static volatile CountDownLatch release = new CountDownLatch(1);

    @BeforeEach
    void reset() {
        EVENTS.clear();
        CREATED.clear();
        release = new CountDownLatch(1);
    }

    @AfterEach
    void close() {
        release.countDown();
        harness.close();
    }

    /** Remembers its settings and where its init ran. */
    public static final class RecordingHandler implements MessageHandler, HandlerLifecycle, AutoCloseable {
        final List<HandlerSettings> inits = new CopyOnWriteArrayList<>();
        volatile String initThread;
        volatile ClassLoader initContext;
        // Written in init only: handle must see it without synchronisation.
        String ledger;

        public RecordingHandler() {
            EVENTS.add("new");
            CREATED.add(this);
        }

        @Override
        public void init(HandlerSettings settings) {
            EVENTS.add("init:" + settings.pipeline());
            inits.add(settings);
            initThread = Thread.currentThread().getName();
            initContext = Thread.currentThread().getContextClassLoader();
            ledger = settings.require("ledger.file");
        }

        @Override
        public void handle(Message message, HandlerContext context) {
            EVENTS.add("handle:" + context.pipeline() + ":" + ledger);
        }

        @Override
        public void close() {
            EVENTS.add("close");
        }
    }

    /** Needs {@code db.url}, which the tests leave out. */
    public static final class NeedsDatabaseHandler implements MessageHandler, HandlerLifecycle, AutoCloseable {
        @Override
        public void init(HandlerSettings settings) {
            EVENTS.add("init");
            settings.require("db.url");
        }

        @Override
        public void handle(Message message, HandlerContext context) {
            EVENTS.add("handle");
        }

        @Override
        public void close() {
            EVENTS.add("close");
        }
    }

    /** An init that waits for a service that never answers. */
    public static final class BlockingInitHandler implements MessageHandler, HandlerLifecycle, AutoCloseable {
        @Override
        public void init(HandlerSettings settings) throws InterruptedException {
            release.await();
        }

        @Override
        public void handle(Message message, HandlerContext context) {
        }

        @Override
        public void close() {
            EVENTS.add("close");
        }
    }

    private Idem.Builder builder(String yaml) {
        return Idem.builder()
                .configYaml(yaml)
                .env(Map.of("LEDGER", "/var/lib/idem/orders.log"))
                .broker("memory", harness.broker.connect())
                .store("caffeine", harness.store)
                .handlerLoader(HandlerInitTest.class.getClassLoader())
                .ticker(harness.ticker);
    }

    private static String twoPipelines(Class<?> handler, String ordersSettings, String auditSettings) {
        return """
                broker: {type: memory}
                store: {type: caffeine}
                pipelines:
                  orders:
                    source: orders
                    handler: %1$s
                    handler-settings: %2$s
                  audit:
                    source: audit
                    handler: %1$s
                    handler-settings: %3$s
                """.formatted(handler.getName(), ordersSettings, auditSettings);
    }

    @Test
    void initRunsOncePerPipelineWithItsSettingsBeforeTheFirstMessage() throws Exception {
        String yaml = twoPipelines(RecordingHandler.class, "{ledger.file: '${LEDGER}', fsync: true}",
                "{ledger: {file: /tmp/audit.log}}");
        ClassLoader caller = Thread.currentThread().getContextClassLoader();
        IdemRuntime runtime;
        // The caller's context loader is another one, so the init's context can only be the handler's own.
        try (URLClassLoader elsewhere = new URLClassLoader(new URL[0], null)) {
            Thread.currentThread().setContextClassLoader(elsewhere);
            try {
                runtime = builder(yaml).start();
            } finally {
                Thread.currentThread().setContextClassLoader(caller);
            }
        }
        harness.publish("m-1", "x");
        await().until(() -> count(runtime, "processed") == 1);
        runtime.stop(Duration.ofSeconds(5));

        assertThat(CREATED).hasSize(2);
        RecordingHandler orders = CREATED.get(0);
        RecordingHandler audit = CREATED.get(1);
        assertThat(orders.inits).singleElement()
                .isEqualTo(HandlerSettings.of("orders", Map.of("ledger.file", "/var/lib/idem/orders.log", "fsync", "true")));
        assertThat(audit.inits).singleElement()
                .isEqualTo(HandlerSettings.of("audit", Map.of("ledger.file", "/tmp/audit.log")));
        assertThat(orders.initThread).isEqualTo("idem-handler-init-orders");
        assertThat(orders.initContext).isSameAs(RecordingHandler.class.getClassLoader());
        assertThat(EVENTS).containsExactly("new", "new", "init:orders", "init:audit",
                "handle:orders:/var/lib/idem/orders.log", "close", "close");
    }

    @Test
    void checkCreatesTheHandlersButDoesNotInitialiseThem() {
        Idem.Validated validated = builder(twoPipelines(RecordingHandler.class, "{ledger.file: a}", "{ledger.file: b}"))
                .validate();

        assertThat(validated.config().pipelines().get("audit").handlerSettings().asMap())
                .containsExactly(Map.entry("ledger.file", "b"));
        assertThat(EVENTS).containsExactly("new", "new");
    }

    @Test
    void aFailingInitStopsTheStartNamingThePipelineTheClassAndTheSetting() {
        harness.publish("m-1", "x");

        IdemException failure = catchThrowableOfType(() -> builder(PipelineHarness.pipeline(
                "handler: " + NeedsDatabaseHandler.class.getName())).start(), IdemException.class);

        assertThat(failure).hasMessage("Handler class '" + NeedsDatabaseHandler.class.getName() + "' of pipeline"
                + " 'orders' failed in init: java.lang.IllegalArgumentException: Missing handler setting"
                + " pipelines.orders.handler-settings.db.url: set it in the configuration, e.g. db.url: ${DB_URL}."
                + " Check its settings (pipelines.orders.handler-settings) and the services it connects to");
        assertThat(failure.getCause()).isInstanceOf(IllegalArgumentException.class);
        assertThat(harness.broker.depth(PipelineHarness.QUEUE)).as("nothing was consumed").isEqualTo(1);
        assertThat(harness.broker.unsettled(PipelineHarness.QUEUE)).isZero();
        assertThat(EVENTS).as("the failed handler is closed, and never ran").containsExactly("init", "close");
    }

    @Test
    void everyFailingInitIsReportedInOneError() {
        IdemException failure = catchThrowableOfType(() -> builder(twoPipelines(NeedsDatabaseHandler.class, "{}",
                "{other: x}")).start(), IdemException.class);

        assertThat(failure.getMessage()).startsWith("2 handlers failed to initialise:\n  - Handler class '")
                .contains("of pipeline 'orders' failed in init")
                .contains("of pipeline 'audit' failed in init");
        assertThat(failure.getSuppressed()).hasSize(1);
        assertThat(EVENTS).containsExactly("init", "init", "close", "close");
    }

    @Test
    void anInitThatBlocksFailsTheStartWithinTheTimeoutNamingWhereItWaits() {
        String yaml = PipelineHarness.pipeline("handler: " + BlockingInitHandler.class.getName())
                .replace("shutdown-timeout: 10s", "handler-create-timeout: 300ms");
        long started = System.nanoTime();

        IdemException failure = catchThrowableOfType(() -> builder(yaml).start(), IdemException.class);

        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(20));
        assertThat(failure.getMessage())
                .startsWith("Handler class '" + BlockingInitHandler.class.getName() + "' of pipeline 'orders' did not"
                        + " finish init within 300ms (runtime.handler-create-timeout): it was still running at "
                        + BlockingInitHandler.class.getName() + ".init(")
                .endsWith("or raise runtime.handler-create-timeout");
        assertThat(EVENTS).as("not closed while its init may still run").isEmpty();
    }

    @Test
    void aHandlerBoundInCodeIsTheCallersToInitialise() {
        RecordingHandler bound = new RecordingHandler();

        harness.start(PipelineHarness.config("handler-settings: {ledger.file: x}"), bound);

        assertThat(bound.inits).isEmpty();
    }

    /** Without init nothing reads the settings: the wrong class, or a forgotten interface. */
    public static final class PlainHandler implements MessageHandler {
        @Override
        public void handle(Message message, HandlerContext context) {
        }
    }

    @Test
    void settingsForAHandlerThatCannotReceiveThemAreRefusedByCheckAndStart() {
        String yaml = PipelineHarness.pipeline("handler: " + PlainHandler.class.getName() + "\n"
                + "handler-settings: {db.url: x}");

        for (Runnable attempt : new Runnable[] {() -> builder(yaml).validate(), () -> builder(yaml).start()}) {
            ConfigException failure = catchThrowableOfType(attempt::run, ConfigException.class);
            assertThat(failure.problems()).containsExactly("pipelines.orders.handler-settings is set, but handler"
                    + " class '" + PlainHandler.class.getName() + "' does not implement dev.idem.api.HandlerLifecycle,"
                    + " so nothing would receive the settings. Implement its init(HandlerSettings), or remove"
                    + " handler-settings");
        }
    }
}
