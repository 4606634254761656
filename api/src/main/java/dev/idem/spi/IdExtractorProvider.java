package dev.idem.spi;

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
     * @param config the validated entry
     * @throws ConfigException if the entry is inconsistent (a template with no field)
     */
    IdExtractor create(PluginConfig config);
}
