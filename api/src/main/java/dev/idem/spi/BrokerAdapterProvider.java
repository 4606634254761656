package dev.idem.spi;

/**
 * Creates {@link BrokerAdapter}s for one kind of broker. Found through {@link java.util.ServiceLoader}
 * (listed in {@code META-INF/services/dev.idem.spi.BrokerAdapterProvider}) and selected by
 * {@code broker.type} in the configuration.
 *
 * <p>A cheap, stateless factory with a public no-arg constructor; the runtime may instantiate it
 * only to list it. All work happens in {@link #create}.
 */
public interface BrokerAdapterProvider {

    /** The unique lowercase id users write in {@code broker.type}, e.g. {@code kafka}. */
    String id();

    /** The keys accepted under {@code broker.<id>}. */
    ConfigSpec configSpec();

    /**
     * Creates an adapter.
     *
     * @param config the validated {@code broker.<id>} section
     * @throws BrokerException if the broker cannot be reached
     * @throws ConfigException if the configuration is inconsistent in a way its keys alone cannot tell
     */
    BrokerAdapter create(PluginConfig config);
}
