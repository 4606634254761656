package dev.idem.spi;

import java.util.List;

/**
 * Creates {@link DedupStore}s of one kind. Found through {@link java.util.ServiceLoader}
 * (list the class in {@code META-INF/services/dev.idem.spi.DedupStoreProvider}) and selected
 * by {@code store.type} in the configuration.
 *
 * <p>A provider is a cheap, stateless factory with a public no-arg constructor; the runtime may
 * instantiate it only to list it. All work happens in {@link #create}.
 */
public interface DedupStoreProvider {

    /** The unique lowercase id users write in {@code store.type}, e.g. {@code redis}. */
    String id();

    /** The keys accepted under {@code store.<id>}. */
    ConfigSpec configSpec();

    /**
     * Checks what {@link #create} would refuse about the configuration without contacting anything: keys
     * that contradict each other, values the client library rejects. {@code idem check} and every start call
     * it once the keys themselves are valid, and report its problems with every other configuration problem,
     * so one run shows them all. It must not connect, start threads or block; reading a local file (a trust
     * store) is fine. Thread-safe, like the provider.
     *
     * @param config the validated {@code store.<id>} section
     * @return every problem found, each naming its key's path; empty (the default) when there is none
     */
    default List<ConfigProblem> validate(PluginConfig config) {
        return List.of();
    }

    /**
     * Creates a store, connecting to its server if it has one.
     *
     * @param config the validated {@code store.<id>} section
     * @param context what the runtime provides to every store
     * @throws StoreException if the server cannot be reached or set up
     * @throws ConfigException if the configuration is inconsistent in a way its keys alone cannot tell (what
     *         {@link #validate} reports)
     */
    DedupStore create(PluginConfig config, StoreContext context);
}
