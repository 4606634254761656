package dev.idem.runtime.config;

import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.PluginConfig;
import java.util.List;
import java.util.Optional;
import java.util.SortedSet;

/**
 * The config specs of the plugins that were discovered, by kind and id: what the config loader
 * validates the {@code broker.<id>}, {@code store.<id>} and {@code id} entries against.
 * Implemented by the plugin registry; thread-safe.
 */
public interface PluginSpecs {

    /** The kinds of plugin a configuration selects. */
    enum Kind {
        BROKER("broker adapter"), STORE("dedup store"), ID_EXTRACTOR("ID extractor");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        /** How messages name the kind: "dedup store". */
        public String label() {
            return label;
        }
    }

    /** The spec of the plugin with that id, or empty if none was discovered. */
    Optional<ConfigSpec> spec(Kind kind, String id);

    /** The ids discovered for a kind, for "Available: [...]" hints. */
    SortedSet<String> ids(Kind kind);

    /**
     * What the plugin finds wrong with its section once its keys are valid (its provider's {@code validate}),
     * without contacting anything; none by default.
     *
     * @param config the section's validated keys, as the provider's {@code create} will get them
     */
    default List<ConfigProblem> validate(Kind kind, String id, PluginConfig config) {
        return List.of();
    }
}
