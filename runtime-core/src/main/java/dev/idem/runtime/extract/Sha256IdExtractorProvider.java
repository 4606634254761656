package dev.idem.runtime.extract;

import dev.idem.spi.ConfigSpec;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.IdExtractorProvider;
import dev.idem.spi.PluginConfig;

/**
 * {@code sha256}: the key is the lowercase hex SHA-256 of the payload, so it is always present.
 * Two messages are then duplicates exactly when their bodies are byte-for-byte equal: right for
 * producers that resend identical bodies, wrong where two genuine messages can be identical
 * (two equal orders) or one message can be re-serialised differently. Takes no settings.
 *
 * <p>Stateless and thread-safe, like the extractor it creates.
 */
public final class Sha256IdExtractorProvider implements IdExtractorProvider {

    @Override
    public String id() {
        return "sha256";
    }

    @Override
    public ConfigSpec configSpec() {
        return ConfigSpec.empty();
    }

    @Override
    public IdExtractor create(PluginConfig config) {
        return Sha256IdExtractor.INSTANCE;
    }
}
