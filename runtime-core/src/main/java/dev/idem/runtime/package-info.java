/**
 * Idem's runtime as a library: {@link dev.idem.runtime.Idem#builder()} validates a configuration, creates the
 * store, the broker adapter and the handlers, and starts every pipeline; the {@link dev.idem.runtime.IdemRuntime}
 * it returns reports health and in-flight work and stops gracefully; an {@link dev.idem.runtime.OutcomeListener}
 * is told of every message outcome. {@code Startup} (what builds a runtime), {@code HandlerFactory} and
 * {@code HandlerInit} (what creates and initialises the handlers a configuration names) are package-private.
 *
 * <p>The public types of {@code dev.idem.runtime}, {@code .config}, {@code .plugin} and {@code .extract} are what
 * the CLI and embedders use; everything under {@code dev.idem.runtime.internal} is the runtime's own and may change
 * in any release. {@code docs/architecture.md} maps the packages, the stages and their threads.
 */
package dev.idem.runtime;
