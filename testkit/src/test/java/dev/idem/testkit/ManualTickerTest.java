package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ManualTickerTest {

    @Test
    void tickerStartsAtDefaultStartWhichIsNotZero() {
        assertThat(new ManualTicker().getAsLong()).isEqualTo(ManualTicker.DEFAULT_START).isNotZero();
    }

    @Test
    void tickerMovesOnlyWhenAdvanced() {
        ManualTicker ticker = new ManualTicker(42);

        assertThat(ticker.getAsLong()).isEqualTo(42);
        ticker.advance(Duration.ofMillis(3)).advance(Duration.ofNanos(1));
        assertThat(ticker.getAsLong()).isEqualTo(42 + 3_000_001);
    }

    @Test
    void tickerRejectsGoingBackwards() {
        ManualTicker ticker = new ManualTicker();

        assertThatThrownBy(() -> ticker.advance(Duration.ofNanos(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("only moves forward");
        assertThat(ticker.getAsLong()).isEqualTo(ManualTicker.DEFAULT_START);
    }

    @Test
    void tickerWrapsAroundLikeNanoTime() {
        ManualTicker ticker = new ManualTicker(Long.MAX_VALUE);

        ticker.advance(Duration.ofNanos(1));

        assertThat(ticker.getAsLong()).isEqualTo(Long.MIN_VALUE);
    }

    @Test
    void concurrentAdvancesAreAllCounted() throws Exception {
        ManualTicker ticker = new ManualTicker(0);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            for (int i = 0; i < 8_000; i++) {
                pool.execute(() -> ticker.advance(Duration.ofNanos(1)));
            }
        } finally {
            pool.shutdown();
            assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
        }

        assertThat(ticker.getAsLong()).isEqualTo(8_000);
    }
}
