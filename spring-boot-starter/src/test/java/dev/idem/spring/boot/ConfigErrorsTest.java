package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.spi.ConfigException;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/** A bad configuration fails the context at startup, with every problem at once, in Idem's words. */
class ConfigErrorsTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(IdemAutoConfiguration.class))
            .withPropertyValues("idem.broker.type=rabbitmq", "idem.store.type=caffeine",
                    "idem.pipelines.orders.source=orders");

    @Configuration(proxyBeanMethods = false)
    static class OneHandler {
        @Bean
        @IdemHandler("orders")
        MessageHandler ordersHandler() {
            return (Message message, HandlerContext context) -> { };
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class TwoHandlers {
        @Bean
        @IdemHandler("orders")
        MessageHandler first() {
            return (message, context) -> { };
        }

        @Bean
        @IdemHandler("orders")
        MessageHandler second() {
            return (message, context) -> { };
        }

        @Bean
        @IdemHandler("billing")
        String notAHandler() {
            return "billing";
        }
    }

    @Test
    void everyInvalidValueIsReportedAtOnceWithItsPathAndRule() {
        runner.withUserConfiguration(OneHandler.class)
                .withPropertyValues("idem.pipelines.orders.concurrency=0", "idem.pipelines.orders.lease=-5s",
                        "idem.pipelines.orders.retry.max-atempts=3", "idem.store.caffeine.maximum-size=many")
                .run(context -> {
                    assertThat(context).hasFailed();
                    ConfigException e = configException(context.getStartupFailure());
                    assertThat(e.problems()).hasSize(4);
                    assertThat(e.getMessage())
                            .contains("pipelines.orders.concurrency")
                            .contains("Invalid value '-5s' for pipelines.orders.lease")
                            .contains("retry.max-atempts")
                            .contains("max-attempts")
                            .contains("store.caffeine.maximum-size");
                });
    }

    @Test
    void theMessagesAreTheSameAsForIdemYaml() {
        runner.withUserConfiguration(OneHandler.class)
                .withPropertyValues("idem.pipelines.orders.lease=-5s")
                .run(context -> {
                    String yaml = """
                            broker: {type: rabbitmq}
                            store: {type: caffeine}
                            pipelines:
                              orders: {source: orders, lease: -5s}
                            """;
                    ConfigException fromYaml = catchThrowableOfType(ConfigException.class,
                            () -> Idem.builder().configYaml(yaml).env(Map.of())
                                    .handler("orders", (m, c) -> { }).validate());
                    assertThat(configException(context.getStartupFailure()).problems())
                            .isEqualTo(fromYaml.problems());
                });
    }

    @Test
    void aPipelineWithoutHandlerTwoHandlersForOneAndAnAnnotatedNonHandlerAreReportedTogether() {
        runner.withUserConfiguration(TwoHandlers.class)
                .withPropertyValues("idem.pipelines.shipping.source=shipping", "idem.pipelines.orders.concurrency=0")
                .run(context -> {
                    ConfigException e = configException(context.getStartupFailure());
                    assertThat(e.problems()).hasSize(4);
                    assertThat(e.getMessage())
                            .contains("pipelines.orders.concurrency")
                            .contains("Pipeline 'orders' has 2 handler beans")
                            .contains("Pipeline 'shipping' has no handler: annotate a bean implementing"
                                    + " dev.idem.api.MessageHandler with @IdemHandler(\"shipping\")")
                            .contains("Bean 'notAHandler' (java.lang.String) is annotated @IdemHandler(\"billing\")");
                });
    }

    @Test
    void theFailureAnalysisSaysThePathsAreBelowIdem() {
        runner.withUserConfiguration(OneHandler.class)
                .withPropertyValues("idem.pipelines.orders.concurrency=0")
                .run(context -> {
                    FailureAnalysis analysis = new IdemFailureAnalyzer().analyze(context.getStartupFailure());
                    assertThat(analysis.getDescription()).contains("properties under 'idem.'")
                            .contains("pipelines.orders.concurrency");
                });
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration(excludeName = "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration")
    @Import(OneHandler.class)
    static class App {
    }

    @Test
    @ExtendWith(OutputCaptureExtension.class)
    void springBootsFailureReportShowsIdemsMessages(CapturedOutput output) {
        SpringApplicationBuilder app = new SpringApplicationBuilder(App.class).web(WebApplicationType.NONE);

        assertThatThrownBy(() -> app.run("--idem.broker.type=rabbitmq", "--idem.store.type=caffeine",
                "--idem.pipelines.orders.source=orders", "--idem.pipelines.orders.concurrency=0"))
                .hasRootCauseInstanceOf(ConfigException.class);
        assertThat(output).contains("APPLICATION FAILED TO START")
                .contains("Idem's configuration, the properties under 'idem.'")
                .contains("pipelines.orders.concurrency")
                .contains("Correct the properties named above");
    }

    @Test
    void idemEnabledFalseTurnsTheStarterOff() {
        runner.withPropertyValues("idem.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(IdemLifecycle.class));
    }

    private static ConfigException configException(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof ConfigException e) {
                return e;
            }
        }
        throw new AssertionError("No ConfigException in " + failure, failure);
    }
}
