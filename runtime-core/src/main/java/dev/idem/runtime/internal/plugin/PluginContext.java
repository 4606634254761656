package dev.idem.runtime.internal.plugin;

import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DedupStore;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.TransactionalDedupStore;
import java.util.function.Supplier;

/**
 * Runs code with a plugin's class loader as the thread's context class loader, as client libraries that
 * load classes by name expect (Kafka's configurable classes, JDBC's {@code DriverManager}, ServiceLoader
 * lookups); threads the plugin starts meanwhile inherit it.
 *
 * <p>The context must hold for every call into plugin code, whichever thread makes it: a readiness probe on
 * the HTTP thread, a claim on a consumer thread of another plugin, a close in a shutdown hook. So the
 * instances {@link PluginRegistry} creates are {@linkplain #bind(BrokerAdapter) bound}: each call on them
 * switches the context in and back (two field writes, no allocation), and code the plugin calls back (a
 * {@link TransactionalDedupStore.Work}, wrapped once per transactional run) runs in the caller's context
 * again. {@link PluginProxy} is the one wrapper that does it.
 */
public final class PluginContext {

    private PluginContext() {
    }

    /** The plugin's own instance: the wrapped one for an instance bound here, else {@code plugin} itself. */
    public static Object unwrap(Object plugin) {
        return plugin instanceof Bound bound ? bound.plugin() : plugin;
    }

    /** The class loader {@code plugin}'s code runs in: the loader of its {@linkplain #unwrap own} class. */
    public static ClassLoader loaderOf(Object plugin) {
        return unwrap(plugin).getClass().getClassLoader();
    }

    /** Calls {@code action} with {@code plugin}'s class loader as context class loader, then restores the previous one. */
    public static <T> T call(Object plugin, Supplier<T> action) {
        ClassLoader previous = enter(loaderOf(plugin));
        try {
            return action.get();
        } finally {
            leave(previous);
        }
    }

    /**
     * {@code adapter} with every call, and every call on the subscriptions it returns, in its class loader's
     * context. Binding a bound adapter returns it unchanged.
     */
    public static BrokerAdapter bind(BrokerAdapter adapter) {
        return adapter instanceof Bound ? adapter : PluginProxy.bind(BrokerAdapter.class, adapter, loaderOf(adapter));
    }

    /**
     * {@code store} with every call in its class loader's context, implementing the same optional capabilities
     * ({@link InspectableDedupStore}, {@link TransactionalDedupStore}, ...). Binding a bound store returns it
     * unchanged.
     */
    public static DedupStore bind(DedupStore store) {
        return store instanceof Bound ? store : PluginProxy.bind(DedupStore.class, store, loaderOf(store));
    }

    /** {@code extractor} with every call in its class loader's context. Binding a bound extractor returns it unchanged. */
    public static IdExtractor bind(IdExtractor extractor) {
        return extractor instanceof Bound ? extractor : new BoundIdExtractor(extractor, loaderOf(extractor));
    }

    /** Makes {@code loader} the current thread's context class loader; returns the one to restore with {@link #leave}. */
    static ClassLoader enter(ClassLoader loader) {
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        if (previous != loader) {
            thread.setContextClassLoader(loader);
        }
        return previous;
    }

    /** Restores the context class loader {@link #enter} replaced. */
    static void leave(ClassLoader previous) {
        Thread thread = Thread.currentThread();
        if (thread.getContextClassLoader() != previous) {
            thread.setContextClassLoader(previous);
        }
    }

    /** A plugin instance whose calls run in its plugin's context. */
    interface Bound {
        /** The instance the calls go to. */
        Object plugin();
    }
}
