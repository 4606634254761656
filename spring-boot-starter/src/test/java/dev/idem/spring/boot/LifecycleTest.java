package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.testkit.memory.InMemoryBroker;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/** The runtime starts with the context and stops gracefully when it closes: no ack of an unfinished message. */
class LifecycleTest {

    static InMemoryBroker broker;
    static CountDownLatch started;
    static CountDownLatch release;
    static final AtomicBoolean FINISHED = new AtomicBoolean();

    @SpringBootConfiguration
    @EnableAutoConfiguration(excludeName = "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration")
    static class App {
        @Bean
        IdemBuilderCustomizer memoryBroker() {
            return builder -> builder.broker("memory", broker);
        }

        @Bean
        @IdemHandler("orders")
        MessageHandler slow() {
            return (Message message, HandlerContext context) -> {
                started.countDown();
                release.await();
                FINISHED.set(true);
            };
        }
    }

    private static ConfigurableApplicationContext start(String shutdownTimeout) {
        broker = new InMemoryBroker();
        started = new CountDownLatch(1);
        release = new CountDownLatch(1);
        FINISHED.set(false);
        return new SpringApplicationBuilder(App.class).web(WebApplicationType.NONE).run(
                "--idem.broker.type=memory", "--idem.store.type=caffeine", "--idem.pipelines.orders.source=orders",
                "--idem.pipelines.orders.handler-timeout=1m", "--idem.runtime.shutdown-timeout=" + shutdownTimeout,
                "--idem.runtime.summary-interval=0s");
    }

    @Test
    void closingTheContextWaitsForTheRunningHandlerThenAcksItsMessage() throws Exception {
        ConfigurableApplicationContext context = start("10s");
        IdemLifecycle idem = context.getBean(IdemLifecycle.class);
        assertThat(idem.isRunning()).isTrue();
        TestServices.publish(broker, "orders", "m-1", "{}");
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

        Thread closing = new Thread(context::close);
        closing.start();
        Thread.sleep(300);
        assertThat(closing.isAlive()).as("the context waits for the handler").isTrue();
        release.countDown();
        closing.join(10_000);

        assertThat(FINISHED).isTrue();
        assertThat(idem.isRunning()).isFalse();
        assertThat(broker.depth("orders")).isZero();
        assertThat(broker.unsettled("orders")).isZero();
    }

    @Test
    void aHandlerStillRunningAtTheShutdownTimeoutIsInterruptedAndItsMessageHandedBackUnacked() throws Exception {
        ConfigurableApplicationContext context = start("500ms");
        TestServices.publish(broker, "orders", "m-1", "{}");
        assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();

        long before = System.nanoTime();
        context.close();

        assertThat(Duration.ofNanos(System.nanoTime() - before)).isLessThan(Duration.ofSeconds(10));
        assertThat(FINISHED).isFalse();
        await().atMost(Duration.ofSeconds(5)).until(() -> broker.depth("orders") == 1);
        assertThat(broker.unsettled("orders")).isZero();
    }
}
