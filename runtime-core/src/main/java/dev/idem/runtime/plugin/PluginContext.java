package dev.idem.runtime.plugin;

import java.util.function.Supplier;

/**
 * Runs code with a plugin's class loader as the thread's context class loader, as client libraries that
 * load classes by name expect (Kafka's configurable classes, JDBC's {@code DriverManager}, ServiceLoader
 * lookups); threads the plugin starts meanwhile inherit it.
 */
public final class PluginContext {

    private PluginContext() {
    }

    /** Calls {@code action} with {@code plugin}'s class loader as context class loader, then restores the previous one. */
    public static <T> T call(Object plugin, Supplier<T> action) {
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        thread.setContextClassLoader(plugin.getClass().getClassLoader());
        try {
            return action.get();
        } finally {
            thread.setContextClassLoader(previous);
        }
    }
}
