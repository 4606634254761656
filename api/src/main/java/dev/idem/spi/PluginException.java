package dev.idem.spi;

import dev.idem.api.IdemException;

/**
 * A plugin could not be found, loaded or created: an unknown id, two providers with one id,
 * a provider class that fails to load. The message names the id, the JAR and what is available.
 */
public class PluginException extends IdemException {

    private static final long serialVersionUID = 1L;

    public PluginException(String message) {
        super(message);
    }

    public PluginException(String message, Throwable cause) {
        super(message, cause);
    }
}
