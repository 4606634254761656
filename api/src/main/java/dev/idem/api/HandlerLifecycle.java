package dev.idem.api;

/**
 * Optional: a {@link MessageHandler} that implements this gets its pipeline's {@code handler-settings}
 * once, before its first message. Its counterpart is {@link AutoCloseable#close()}, which the runtime calls
 * on stop.
 *
 * <pre>{@code
 * public final class OrderHandler implements MessageHandler, HandlerLifecycle, AutoCloseable {
 *     private DataSource db;
 *
 *     public void init(HandlerSettings settings) {
 *         db = connect(settings.require("db.url"), settings.get("db.user").orElse("app"));
 *     }
 *     ...
 * }
 * }</pre>
 *
 * <p><b>When.</b> The runtime calls {@code init} exactly once on each handler it creates from a pipeline's
 * {@code handler:} class name, after every handler was constructed and the configuration validated, and
 * before the dedup store and the broker are contacted, so before any message. It creates one instance per
 * pipeline: a class named by two pipelines gets two instances, each given its own pipeline's settings.
 * {@code idem check} (and {@code Idem.Builder.validate()}) constructs handlers but does not call
 * {@code init}, since it may connect to services; check validates the settings' syntax only, and refuses
 * settings for a handler class that does not implement this interface, since nothing would read them. A handler
 * bound in code ({@code Idem.builder().handler(...)}) belongs to the caller, who initialises and closes it.
 *
 * <p><b>Thread.</b> {@code init} runs on a thread of its own with the handler's class loader as context
 * class loader. What it writes is visible to every later {@link MessageHandler#handle} call without
 * synchronisation: the runtime starts the pipeline's threads after it returns.
 *
 * <p><b>Failures.</b> If {@code init} throws, the start fails, naming the pipeline, the handler class and
 * the exception; nothing is consumed, and the handlers already created are closed (this one included, so
 * {@code close()} must cope with a failed or missing {@code init}). If it does not return within
 * {@code runtime.handler-create-timeout} (30s by default), the start fails the same way, naming where it
 * was stuck; its thread is interrupted and left behind. A missing or malformed setting is best reported
 * with {@link HandlerSettings#require} and the typed getters, whose messages name the setting's path.
 */
public interface HandlerLifecycle {

    /**
     * Receives the pipeline's settings; called once, before the first message.
     *
     * @param settings the pipeline's {@code handler-settings}, placeholders resolved; never {@code null},
     *        empty when the pipeline sets none
     * @throws Exception anything that makes the handler unusable; the start fails with it
     */
    void init(HandlerSettings settings) throws Exception;
}
