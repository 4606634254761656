package dev.idem.spi;

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
     * Creates a store, connecting to its server if it has one.
     *
     * @param config the validated {@code store.<id>} section
     * @param context what the runtime provides to every store
     * @throws StoreException if the server cannot be reached or set up
     * @throws ConfigException if the configuration is inconsistent in a way its keys alone cannot tell
     */
    DedupStore create(PluginConfig config, StoreContext context);
}
