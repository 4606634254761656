package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.StoreKey;
import dev.idem.testkit.TestPluginConfig;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store file written by an earlier release opens with this one: {@code h2-2.3.232/idem.mv.db} holds 40 keys
 * ({@code orders/order-0} to {@code order-39}, fingerprints {@code sha256:fp-N}, retained for 100 years), claimed and
 * completed through the store of the release that shipped H2 2.3.232 on its {@code jdbc:h2:file:} URL. This release
 * opens it with a newer H2, through the {@code async:} file system, and must find every key completed (and, the
 * replies table added to it at start, without a reply).
 */
class H2StoreFileCompatibilityTest {

    private static final Duration LEASE = Duration.ofSeconds(30);

    @TempDir
    Path directory;

    @Test
    void aStoreFileOfTheReleaseOnH2_2_3_232OpensWithEveryCompletedKey() throws IOException {
        try (InputStream written = getClass().getResourceAsStream("/h2-2.3.232/idem.mv.db")) {
            Files.copy(written, directory.resolve("idem.mv.db"));
        }
        TestPluginConfig config = TestPluginConfig.defaults("store.jdbc", new JdbcDedupStoreProvider().configSpec())
                .with("url", "jdbc:h2:file:" + directory.resolve("idem").toAbsolutePath())
                .with("purge.interval", "0");
        for (int open = 1; open <= 2; open++) {
            try (JdbcDedupStore store = AbstractJdbcDedupStoreTest.create(config)) {
                List<ClaimRequest> written = new ArrayList<>();
                List<ClaimResult> expected = new ArrayList<>();
                for (int i = 0; i < 40; i++) {
                    written.add(new ClaimRequest(new StoreKey("orders", "order-" + i), "sha256:fp-" + i, LEASE,
                            Duration.ofDays(1)));
                    expected.add(new ClaimResult.Duplicate(true));
                }
                assertThat(store.claim(written)).as("open %d", open).isEqualTo(expected);
                assertThat(store.reply(new StoreKey("orders", "order-0"))).as("completed before replies were stored")
                        .isEmpty();
                ClaimResult fresh = store.claim(List.of(new ClaimRequest(new StoreKey("orders", "new-" + open), null,
                        LEASE, Duration.ofDays(1)))).get(0);
                assertThat(fresh).isInstanceOf(ClaimResult.Acquired.class);
            }
        }
    }
}
