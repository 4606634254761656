package dev.idem.runtime.internal.plugin;

import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;

/**
 * An ID extractor whose calls run in its plugin's context, as {@link PluginProxy} binds the other plugins, but by a
 * direct call: the intake calls it once per message, where a proxy's reflective call and argument array showed in
 * profiles. An extractor has no optional capabilities to carry, so a plain class does what the proxy does.
 * Thread-safe if the extractor is.
 */
final class BoundIdExtractor implements IdExtractor, PluginContext.Bound {

    private final IdExtractor extractor;
    private final ClassLoader loader;

    BoundIdExtractor(IdExtractor extractor, ClassLoader loader) {
        this.extractor = extractor;
        this.loader = loader;
    }

    @Override
    public String extract(InboundMessage message) {
        ClassLoader caller = PluginContext.enter(loader);
        try {
            return extractor.extract(message);
        } finally {
            PluginContext.leave(caller);
        }
    }

    @Override
    public Object plugin() {
        return extractor;
    }

    @Override
    public String toString() {
        return extractor.toString();
    }
}
