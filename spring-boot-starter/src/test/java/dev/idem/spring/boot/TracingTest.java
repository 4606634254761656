package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.MessageHandler;
import dev.idem.testkit.memory.InMemoryBroker;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The runtime traces on the application's OpenTelemetry bean. */
class TracingTest {

    static final InMemoryBroker BROKER = new InMemoryBroker();
    static final InMemorySpanExporter SPANS = InMemorySpanExporter.create();

    @Configuration(proxyBeanMethods = false)
    static class App {
        @Bean
        OpenTelemetry openTelemetry() {
            return OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
                    .addSpanProcessor(SimpleSpanProcessor.create(SPANS)).build()).build();
        }

        @Bean
        IdemBuilderCustomizer memoryBroker() {
            return builder -> builder.broker("memory", BROKER);
        }

        @Bean
        @IdemHandler("orders")
        MessageHandler orders() {
            return (message, context) -> { };
        }
    }

    @Test
    void eachMessageIsASpanOfTheApplicationsOpenTelemetry() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(IdemAutoConfiguration.class))
                .withUserConfiguration(App.class)
                .withPropertyValues("idem.broker.type=memory", "idem.store.type=caffeine",
                        "idem.pipelines.orders.source=orders", "idem.runtime.summary-interval=0s")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    TestServices.publish(BROKER, "orders", "m-1", "{}");
                    await().atMost(Duration.ofSeconds(10)).until(() -> !SPANS.getFinishedSpanItems().isEmpty());
                    assertThat(SPANS.getFinishedSpanItems()).extracting(SpanData::getName).contains("orders process");
                });
    }
}
