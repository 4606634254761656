package dev.idem.spi;

import java.util.List;

/**
 * Creates {@link IdExtractor}s of one kind, named by {@code type} in a pipeline's {@code id} list.
 * Found through {@link java.util.ServiceLoader}
 * ({@code META-INF/services/dev.idem.spi.IdExtractorProvider}).
 *
 * <p>A cheap, stateless factory with a public no-arg constructor.
 */
public interface IdExtractorProvider {

    /** The unique lowercase id users write as {@code type}, e.g. {@code header}. */
    String id();

    /** The keys accepted beside {@code type} in one entry of a pipeline's {@code id} list. */
    ConfigSpec configSpec();

    /**
     * Checks what {@link #create} would refuse about the configuration without contacting anything: keys
     * that contradict each other, values the client library rejects. {@code idem check} and every start call
     * it once the keys themselves are valid, and report its problems with every other configuration problem,
     * so one run shows them all. It must not connect, start threads or block; reading a local file (a trust
     * store) is fine. Thread-safe, like the provider.
     *
     * @param config the validated entry ({@code pipelines.<name>.id[i]})
     * @return every problem found, each naming its key's path; empty (the default) when there is none
     */
    default List<ConfigProblem> validate(PluginConfig config) {
        return List.of();
    }

    /**
     * @param config the validated entry
     * @throws ConfigException if the entry is inconsistent (a template with no field), as {@link #validate}
     *         reports it
     */
    IdExtractor create(PluginConfig config);
}
