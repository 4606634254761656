/**
 * Plugin discovery and isolation: {@link dev.idem.runtime.plugin.PluginRegistry} finds broker adapters, dedup stores
 * and ID extractors through {@code ServiceLoader}, reports every broken one at once naming its JAR, and creates the
 * configured ones bound to their plugin's context; {@link dev.idem.runtime.plugin.IsolatedClassLoader} gives each
 * {@code plugins/<id>/} folder and each handler JAR a loader of its own ({@link
 * dev.idem.runtime.plugin.PluginDirectories} builds them). The binding itself is in
 * {@code dev.idem.runtime.internal.plugin}.
 */
package dev.idem.runtime.plugin;
