package dev.idem.cli.legacystore;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * A store written before {@code list} and {@code purge} joined {@link InspectableDedupStore}: it inherits their
 * defaults. Packed into a plugin JAR by {@code StoreCommandTest}, never found on the test class path.
 */
public final class LegacyStoreProvider implements DedupStoreProvider {

    @Override
    public String id() {
        return "legacy";
    }

    @Override
    public ConfigSpec configSpec() {
        return ConfigSpec.empty();
    }

    @Override
    public DedupStore create(PluginConfig config, StoreContext context) {
        return new LegacyStore();
    }

    /** Knows no key; what matters is which methods it overrides. */
    static class OpaqueStore implements DedupStore {
        @Override
        public List<ClaimResult> claim(List<ClaimRequest> requests) {
            return requests.stream().<ClaimResult>map(r -> new ClaimResult.Acquired(1, 1)).toList();
        }

        @Override
        public boolean complete(StoreKey key, long token, Duration retention) {
            return true;
        }

        @Override
        public boolean release(StoreKey key, long token) {
            return true;
        }

        @Override
        public boolean renew(StoreKey key, long token, Duration lease) {
            return true;
        }

        @Override
        public void close() {
        }
    }

    static final class LegacyStore extends OpaqueStore implements InspectableDedupStore {
        @Override
        public Optional<StoredKey> inspect(StoreKey key) {
            return Optional.empty();
        }

        @Override
        public boolean delete(StoreKey key) {
            return false;
        }

        @Override
        public StoreStats stats() {
            return new StoreStats(0, 0, false);
        }
    }

    /** A store with no operator view at all. */
    public static final class Opaque implements DedupStoreProvider {
        @Override
        public String id() {
            return "opaque";
        }

        @Override
        public ConfigSpec configSpec() {
            return ConfigSpec.empty();
        }

        @Override
        public DedupStore create(PluginConfig config, StoreContext context) {
            return new OpaqueStore();
        }
    }
}
