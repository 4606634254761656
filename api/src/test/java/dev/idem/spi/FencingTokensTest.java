package dev.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class FencingTokensTest {

    @Test
    void tokensArePositiveAndDistinctAcrossThreads() throws Exception {
        int threads = 8;
        int perThread = 50_000;
        long[][] drawn = new long[threads][perThread];
        List<Thread> started = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            Thread drawer = new Thread(() -> {
                for (int i = 0; i < perThread; i++) {
                    drawn[thread][i] = FencingTokens.next();
                }
            });
            drawer.start();
            started.add(drawer);
        }
        for (Thread drawer : started) {
            drawer.join();
        }

        long[] all = Arrays.stream(drawn).flatMapToLong(Arrays::stream).toArray();
        assertThat(Arrays.stream(all).min().orElseThrow()).isPositive();
        assertThat(Arrays.stream(all).distinct().count()).isEqualTo((long) threads * perThread);
    }
}
