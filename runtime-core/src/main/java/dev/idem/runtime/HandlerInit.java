package dev.idem.runtime;

import dev.idem.api.HandlerLifecycle;
import dev.idem.api.HandlerSettings;
import dev.idem.api.IdemException;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.spi.ConfigKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls {@link HandlerLifecycle#init} on the handlers a start created, before anything is contacted: each on
 * a thread of its own, in the handler's class loader, bounded like the construction by
 * {@code runtime.handler-create-timeout}. Every failure is collected, so one start reports them all.
 */
final class HandlerInit {

    private static final Logger log = LoggerFactory.getLogger(HandlerInit.class);

    private HandlerInit() {
    }

    /**
     * @param handlers the handlers the runtime created, by pipeline name; those bound in code are not initialised
     * @param stuck receives the handlers whose {@code init} still ran at the timeout: closing one would race it
     * @throws IdemException naming the pipeline, the class and the failure of every {@code init} that failed
     */
    static void initAll(Map<String, PipelineConfig> pipelines, Map<String, MessageHandler> handlers, Duration timeout,
            Set<MessageHandler> stuck) {
        List<String> failures = new ArrayList<>();
        List<Throwable> causes = new ArrayList<>();
        handlers.forEach((name, handler) -> {
            if (handler instanceof HandlerLifecycle lifecycle) {
                init(pipelines.get(name), lifecycle, timeout, stuck, failures, causes);
            }
        });
        if (failures.isEmpty()) {
            return;
        }
        IdemException failure;
        if (failures.size() == 1) {
            failure = new IdemException(failures.get(0), causes.isEmpty() ? null : causes.get(0));
        } else {
            failure = new IdemException(failures.size() + " handlers failed to initialise:\n  - "
                    + String.join("\n  - ", failures), causes.isEmpty() ? null : causes.get(0));
            causes.stream().skip(1).forEach(failure::addSuppressed);
        }
        throw failure;
    }

    private static void init(PipelineConfig p, HandlerLifecycle handler, Duration timeout, Set<MessageHandler> stuck,
            List<String> failures, List<Throwable> causes) {
        HandlerSettings settings = p.handlerSettings();
        String what = "Handler class '" + handler.getClass().getName() + "' of pipeline '" + p.name() + "'";
        FutureTask<Void> call = new FutureTask<>(() -> {
            handler.init(settings);
            return null;
        });
        Thread thread = new Thread(call, "idem-handler-init-" + p.name());
        thread.setDaemon(true);
        thread.setContextClassLoader(handler.getClass().getClassLoader());
        long started = System.nanoTime();
        thread.start();
        try {
            call.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            log.debug("{} initialised with {} in {} ms", what, settings,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        } catch (TimeoutException e) {
            String stuckAt = HandlerFactory.stuckAt(thread);
            call.cancel(true);
            stuck.add((MessageHandler) handler);
            failures.add(what + " did not finish init within " + ConfigKey.formatDuration(timeout) + " (runtime."
                    + RuntimeConfigSpecs.HANDLER_CREATE_TIMEOUT.name() + "): it "
                    + (stuckAt == null ? "did not return" : "was still running at " + stuckAt) + ". Bound what init"
                    + " waits for (give its connections a timeout), or raise runtime."
                    + RuntimeConfigSpecs.HANDLER_CREATE_TIMEOUT.name());
        } catch (ExecutionException e) {
            Throwable thrown = e.getCause();
            causes.add(thrown);
            failures.add(what + " failed in init: " + thrown + ". Check its settings (pipelines." + p.name()
                    + "." + RuntimeConfigSpecs.HANDLER_SETTINGS.name() + ") and the services it connects to");
        } catch (InterruptedException e) {
            call.cancel(true);
            stuck.add((MessageHandler) handler);
            Thread.currentThread().interrupt();
            failures.add(what + " was not initialised: interrupted while its init ran");
        }
    }
}
