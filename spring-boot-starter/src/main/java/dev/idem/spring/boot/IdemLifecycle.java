package dev.idem.spring.boot;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.runtime.config.IdemConfig;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * The runtime as Spring's lifecycle sees it: built and validated when the context creates this bean (so a bad
 * configuration fails the context before anything connects), started once every singleton exists and the context
 * starts its lifecycle beans, stopped gracefully when the context closes.
 *
 * <p>It runs in the last phase ({@link SmartLifecycle#DEFAULT_PHASE}): started after the web server, stopped before
 * it and before any bean is destroyed. {@link #stop()} is {@link IdemRuntime#stop} with
 * {@code runtime.shutdown-timeout}, synchronously, so Spring's {@code spring.lifecycle.timeout-per-shutdown-phase}
 * does not cut it short: the pipelines stop taking messages, running handlers finish (or are interrupted at the
 * timeout, their keys released and their messages handed back unacked), completions are stored before their acks,
 * and Kafka offsets are committed; only then does Spring close the data source and the other beans.
 *
 * <p>Thread-safe.
 */
public final class IdemLifecycle implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(IdemLifecycle.class);

    private final Idem.Builder builder;
    private final IdemConfig config;
    private volatile IdemRuntime runtime;
    private volatile boolean running;

    IdemLifecycle(Idem.Builder builder, IdemConfig config) {
        this.builder = builder;
        this.config = config;
    }

    /** The validated configuration. */
    public IdemConfig config() {
        return config;
    }

    /** The runtime once started, also after it stopped (its health then says so); empty before. */
    public Optional<IdemRuntime> runtime() {
        return Optional.ofNullable(runtime);
    }

    @Override
    public synchronized void start() {
        if (running) {
            return;
        }
        if (runtime != null) {
            throw new IllegalStateException("Idem stopped and cannot start again in this context; refresh the"
                    + " context instead");
        }
        runtime = builder.start();
        running = true;
    }

    @Override
    public synchronized void stop() {
        if (!running) {
            return;
        }
        running = false;
        boolean drained = runtime.stop(config.runtime().shutdownTimeout());
        if (!drained) {
            log.warn("Idem stopped after runtime.shutdown-timeout ({}) with handlers still running: they were"
                    + " interrupted, and their messages handed back unacked", config.runtime().shutdownTimeout());
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return DEFAULT_PHASE;
    }
}
