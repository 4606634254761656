/**
 * Runs every call into a plugin in the plugin's class loader context: {@link
 * dev.idem.runtime.internal.plugin.PluginContext} switches the thread's context class loader in and back, and
 * {@code PluginProxy}, the one wrapper, binds an adapter, a store or an extractor with every SPI capability it has.
 */
package dev.idem.runtime.internal.plugin;
