package dev.idem.spi;

import java.util.List;

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
     * Checks what {@link #create} would refuse about the configuration without contacting anything: keys
     * that contradict each other, values the client library rejects. {@code idem check} and every start call
     * it once the keys themselves are valid, and report its problems with every other configuration problem,
     * so one run shows them all. It must not connect, start threads or block; reading a local file (a trust
     * store) is fine. Thread-safe, like the provider.
     *
     * @param config the validated {@code broker.<id>} section
     * @return every problem found, each naming its key's path; empty (the default) when there is none
     */
    default List<ConfigProblem> validate(PluginConfig config) {
        return List.of();
    }

    /**
     * Creates an adapter.
     *
     * @param config the validated {@code broker.<id>} section
     * @throws BrokerException if the broker cannot be reached
     * @throws ConfigException if the configuration is inconsistent in a way its keys alone cannot tell (what
     *         {@link #validate} reports)
     */
    BrokerAdapter create(PluginConfig config);
}
