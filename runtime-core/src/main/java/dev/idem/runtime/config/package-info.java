/**
 * Configuration: every key declared once ({@link dev.idem.runtime.config.RuntimeConfigSpecs} for the runtime's,
 * each plugin's {@code ConfigSpec} for its own), loaded from YAML with {@code ${ENV}} substitution
 * ({@link dev.idem.runtime.config.ConfigLoader}), validated all at once into one error that names every key path,
 * bound into {@link dev.idem.runtime.config.IdemConfig} and {@link dev.idem.runtime.config.PipelineConfig}, printed
 * back with secrets masked ({@link dev.idem.runtime.config.ConfigPrinter}) and rendered as the reference page
 * ({@link dev.idem.runtime.config.ConfigDocs}). Validation and binding ({@code SectionValidator},
 * {@code PipelineBinder}, {@code PluginSelector}, {@code Problems}) are package-private.
 */
package dev.idem.runtime.config;
