package dev.idem.runtime.plugin;

import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;

/** An ID extractor whose calls run in its plugin's context. */
final class BoundIdExtractor implements IdExtractor, PluginContext.Bound {

    private final IdExtractor extractor;
    private final ClassLoader loader;

    BoundIdExtractor(IdExtractor extractor, ClassLoader loader) {
        this.extractor = extractor;
        this.loader = loader;
    }

    @Override
    public Object plugin() {
        return extractor;
    }

    @Override
    public String extract(InboundMessage message) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return extractor.extract(message);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public String toString() {
        return extractor.toString();
    }
}
