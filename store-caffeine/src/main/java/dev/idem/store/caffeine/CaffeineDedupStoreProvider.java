package dev.idem.store.caffeine;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.StoreContext;
import java.util.Objects;

/**
 * The {@code caffeine} dedup store: keys kept in this process's memory.
 *
 * <p>Fast (no network round trip) and needs no server, but it remembers keys only within one
 * process and only until it stops: a redelivery to another instance of the service, or after a
 * restart, is not recognised as a duplicate. Use it for a single consumer process, for tests and
 * for benchmarks; use {@code redis} or {@code jdbc} when several processes share a pipeline.
 *
 * <p>Leases and retention run on {@link StoreContext#nanoTicker()}. Claimed keys are always kept
 * (a running handler is never forgotten); completed keys are kept for their retention, at most
 * {@code maximum-size} of them. Past that bound the keys completed longest ago are forgotten
 * first, and a redelivery of a forgotten key runs its handler again. Size the bound above completed
 * messages per second times retention so that it is never reached in steady state. (The store keeps
 * its name from the Caffeine cache it was built on; its sequence watermarks are still one, its completed
 * keys no longer: see {@link CompletedKeys} for why.)
 *
 * <p>The store it creates is also an {@link dev.idem.spi.InspectableDedupStore}: {@code stats} visits
 * every key in memory and is never truncated.
 *
 * <p>Stateless and thread-safe, as every provider is. Found through {@link java.util.ServiceLoader}.
 */
public final class CaffeineDedupStoreProvider implements DedupStoreProvider {

    /** The id users write in {@code store.type}. */
    public static final String ID = "caffeine";

    /** {@code store.caffeine.maximum-size}: how many completed keys are kept at most. */
    public static final ConfigKey<Long> MAXIMUM_SIZE = ConfigKey.longValue("maximum-size")
            .defaultValue(1_000_000L)
            .atLeast(1L)
            .doc("How many completed keys are remembered at most. Keys still being processed are not counted "
                    + "and never evicted. Past this bound the keys completed longest ago are "
                    + "forgotten first, before their retention ends, and a redelivery of one of them runs its handler again: "
                    + "size it above completed messages per second times the retention.");

    /** {@code store.caffeine.initial-capacity}: how many keys to size the table for up front. */
    public static final ConfigKey<Integer> INITIAL_CAPACITY = ConfigKey.integer("initial-capacity")
            .defaultValue(0)
            .atLeast(0)
            .doc("How many keys to size the table for at start, to spare resizing while it fills; "
                    + "0 lets it grow as needed.");

    private static final ConfigSpec SPEC = ConfigSpec.builder()
            .define(MAXIMUM_SIZE)
            .define(INITIAL_CAPACITY)
            .build();

    /** For {@link java.util.ServiceLoader}. */
    public CaffeineDedupStoreProvider() {
    }

    @Override
    public String id() {
        return ID;
    }

    @Override
    public ConfigSpec configSpec() {
        return SPEC;
    }

    /** Creates an empty store; never throws for a validated configuration. */
    @Override
    public DedupStore create(PluginConfig config, StoreContext context) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(context, "context");
        return new CaffeineDedupStore(config.get(MAXIMUM_SIZE), config.get(INITIAL_CAPACITY),
                Objects.requireNonNull(context.nanoTicker(), "context.nanoTicker"));
    }
}
