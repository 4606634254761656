package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.PipelineHarness.config;
import static dev.idem.runtime.internal.pipeline.PipelineHarness.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.idem.runtime.IdemRuntime;
import java.util.ListResourceBundle;
import java.util.ResourceBundle;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * {@code context.logger()}: a {@link System.Logger} whose lines go through SLF4J, to logger
 * {@code idem.handler.<pipeline>}, with the MDC of the run ({@code idem.pipeline}, {@code idem.key}), formatted as
 * {@link System.Logger} specifies.
 */
class HandlerLoggerTest {

    private final Logger slf4j = (Logger) LoggerFactory.getLogger("idem.handler.orders");
    /** Takes each event's MDC on the thread that logged it: logback reads it lazily otherwise. */
    private final ListAppender<ILoggingEvent> lines = new ListAppender<>() {
        @Override
        protected void append(ILoggingEvent event) {
            event.prepareForDeferredProcessing();
            super.append(event);
        }
    };
    private Level levelBefore;

    @BeforeEach
    void capture() {
        levelBefore = slf4j.getLevel();
        slf4j.setLevel(Level.DEBUG);
        lines.start();
        slf4j.addAppender(lines);
    }

    @AfterEach
    void release() {
        slf4j.detachAppender(lines);
        slf4j.setLevel(levelBefore);
    }

    @Test
    void aHandlersLinesReachSlf4jWithThePipelineAndTheKeyInTheMdc() {
        try (PipelineHarness harness = new PipelineHarness()) {
            IdemRuntime runtime = harness.start(config(""), (message, context) -> {
                assertThat(context.logger().getName()).isEqualTo("idem.handler.orders");
                context.logger().log(System.Logger.Level.INFO, "charged {0} for {1}",
                        message.idempotencyKey().orElseThrow(), message.payloadAsString());
                context.logger().log(System.Logger.Level.WARNING, "line one\n12:00:00.000 INFO forged",
                        new IllegalStateException("card declined"));
            });
            harness.publish("pay-1", "12.50");
            await().until(() -> count(runtime, "processed") == 1);
        }

        assertThat(lines.list).hasSize(2);
        ILoggingEvent charged = lines.list.get(0);
        assertThat(charged.getLoggerName()).isEqualTo("idem.handler.orders");
        assertThat(charged.getLevel()).isEqualTo(Level.INFO);
        assertThat(charged.getFormattedMessage()).isEqualTo("charged pay-1 for 12.50");
        assertThat(charged.getMDCPropertyMap()).containsEntry(Pipeline.MDC_PIPELINE, "orders")
                .containsEntry(Pipeline.MDC_KEY, "pay-1");
        ILoggingEvent warning = lines.list.get(1);
        assertThat(warning.getLevel()).isEqualTo(Level.WARN);
        assertThat(warning.getFormattedMessage()).as("as written: escaping is the log format's job")
                .isEqualTo("line one\n12:00:00.000 INFO forged");
        assertThat(warning.getThrowableProxy().getMessage()).isEqualTo("card declined");
        assertThat(warning.getMDCPropertyMap()).containsEntry(Pipeline.MDC_KEY, "pay-1");
    }

    @Test
    void messagesAreFormattedAsSystemLoggerSpecifies() {
        System.Logger logger = HandlerLogger.of("orders");
        ResourceBundle bundle = new ListResourceBundle() {
            @Override
            protected Object[][] getContents() {
                return new Object[][] {{"charged", "{0} abgebucht"}};
            }
        };

        logger.log(System.Logger.Level.INFO, "no parameters: {0} and {} stay");
        logger.log(System.Logger.Level.INFO, "order {0} of {1}", "a-1", 2);
        logger.log(System.Logger.Level.INFO, "a broken pattern {0", "x");
        logger.log(System.Logger.Level.INFO, bundle, "charged", "a-1");
        logger.log(System.Logger.Level.INFO, bundle, "not in the bundle {0}", "a-1");
        logger.log(System.Logger.Level.ERROR, () -> "from a supplier");
        logger.log(System.Logger.Level.TRACE, "trace is off");
        logger.log(System.Logger.Level.OFF, "never");

        assertThat(lines.list).extracting(ILoggingEvent::getFormattedMessage).containsExactly(
                "no parameters: {0} and {} stay", "order a-1 of 2", "a broken pattern {0", "a-1 abgebucht",
                "not in the bundle a-1", "from a supplier");
        assertThat(lines.list).extracting(ILoggingEvent::getLevel).containsExactly(
                Level.INFO, Level.INFO, Level.INFO, Level.INFO, Level.INFO, Level.ERROR);
    }

    @Test
    void levelsMapToSlf4jAndNothingIsFormattedForADisabledOne() {
        System.Logger logger = HandlerLogger.of("orders");
        assertThat(logger.isLoggable(System.Logger.Level.DEBUG)).isTrue();
        assertThat(logger.isLoggable(System.Logger.Level.TRACE)).isFalse();
        assertThat(logger.isLoggable(System.Logger.Level.ALL)).isFalse();
        assertThat(logger.isLoggable(System.Logger.Level.OFF)).isFalse();

        AtomicBoolean asked = new AtomicBoolean();
        logger.log(System.Logger.Level.TRACE, () -> {
            asked.set(true);
            return "expensive";
        });
        logger.log(System.Logger.Level.DEBUG, "debug");
        logger.log(System.Logger.Level.WARNING, "warning");

        assertThat(asked).isFalse();
        assertThat(lines.list).extracting(ILoggingEvent::getLevel).containsExactly(Level.DEBUG, Level.WARN);
    }
}
