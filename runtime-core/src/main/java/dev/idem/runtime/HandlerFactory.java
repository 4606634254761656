package dev.idem.runtime;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.runtime.plugin.IsolatedClassLoader;
import dev.idem.spi.ConfigKey;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Creates the handlers a configuration names by class: finds the class in exactly one handler class loader,
 * checks it, and runs its no-arg constructor on a thread of its own, bounded by
 * {@code runtime.handler-create-timeout}. Every problem is added to a list, so one start reports them all.
 */
final class HandlerFactory {

    private HandlerFactory() {
    }

    static MessageHandler instantiateHandler(PipelineConfig p, List<ClassLoader> loaders, Duration timeout,
            List<String> problems) {
        String path = "pipelines." + p.name() + ".handler";
        if (p.handler() == null) {
            problems.add("Missing required key " + path + ": name the handler class (a public class implementing "
                    + MessageHandler.class.getName() + " with a public no-arg constructor), or bind a handler"
                    + " with Idem.builder().handler(\"" + p.name() + "\", ...)");
            return null;
        }
        Map<Class<?>, String> found = new LinkedHashMap<>();
        List<String> searched = new ArrayList<>();
        for (ClassLoader loader : loaders) {
            searched.add(locationOf(loader));
            try {
                Class<?> type = Class.forName(p.handler(), false, loader);
                found.putIfAbsent(type, locationOf(type.getClassLoader()));
            } catch (ClassNotFoundException e) {
                // Not in this JAR; the others are searched too.
            } catch (LinkageError e) {
                problems.add("Handler class '" + p.handler() + "' (" + path + ") in " + locationOf(loader)
                        + " could not be loaded: " + e + ". Does the JAR bundle the classes it needs?");
                return null;
            }
        }
        if (found.isEmpty()) {
            problems.add("Handler class '" + p.handler() + "' (" + path + ") was not found in " + searched
                    + ". Is its JAR in handlers/, and is the class name spelled as in the JAR?");
            return null;
        }
        if (found.size() > 1) {
            problems.add("Handler class '" + p.handler() + "' (" + path + ") is in several handler JARs: "
                    + found.values() + ". Keep one of them in handlers/");
            return null;
        }
        Class<?> type = found.keySet().iterator().next();
        String where = p.handler() + "' (" + path + ", from " + found.get(type) + ")";
        if (!MessageHandler.class.isAssignableFrom(type)) {
            problems.add("Handler class '" + where + " does not implement " + MessageHandler.class.getName());
            return null;
        }
        if (Modifier.isAbstract(type.getModifiers()) || !Modifier.isPublic(type.getModifiers())) {
            problems.add("Handler class '" + where + " must be public and not abstract");
            return null;
        }
        Constructor<?> constructor;
        try {
            constructor = type.getConstructor();
        } catch (NoSuchMethodException e) {
            problems.add("Handler class '" + where + " has no public no-arg constructor");
            return null;
        } catch (LinkageError e) {
            problems.add("Handler class '" + where + " could not be created: " + e);
            return null;
        }
        return construct(p, constructor, where, timeout, problems);
    }

    /**
     * Runs the handler's constructor on a thread of its own, in the handler's class loader, and waits at most
     * {@code timeout}: a constructor that blocks (on a service that does not answer) must not hang
     * {@code idem check} or a start. A constructor still running then is interrupted and left behind on its
     * daemon thread; the Java platform offers no way to stop it.
     */
    private static MessageHandler construct(PipelineConfig p, Constructor<?> constructor, String where,
            Duration timeout, List<String> problems) {
        FutureTask<Object> creation = new FutureTask<>(constructor::newInstance);
        Thread thread = new Thread(creation, "idem-handler-create-" + p.name());
        thread.setDaemon(true);
        thread.setContextClassLoader(constructor.getDeclaringClass().getClassLoader());
        thread.start();
        try {
            return (MessageHandler) creation.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            String stuckAt = stuckAt(thread);
            creation.cancel(true);
            problems.add("Handler class '" + where + " was not created within " + ConfigKey.formatDuration(timeout)
                    + " (runtime." + RuntimeConfigSpecs.HANDLER_CREATE_TIMEOUT.name() + "): its constructor "
                    + (stuckAt == null ? "did not return" : "was still running at " + stuckAt) + ". A constructor"
                    + " should not wait for a service; connect lazily or in the background, or raise runtime."
                    + RuntimeConfigSpecs.HANDLER_CREATE_TIMEOUT.name());
        } catch (ExecutionException e) {
            Throwable failure = e.getCause();
            if (failure instanceof InvocationTargetException thrown) {
                problems.add("Handler class '" + where + " threw from its constructor: " + describe(thrown.getCause()));
            } else {
                problems.add("Handler class '" + where + " could not be created: " + describe(failure));
            }
        } catch (InterruptedException e) {
            creation.cancel(true);
            Thread.currentThread().interrupt();
            problems.add("Handler class '" + where + " was not created: interrupted while its constructor ran");
        }
        return null;
    }

    /**
     * What creating a handler threw, as a person reads it. An {@link ExceptionInInitializerError} says nothing by
     * itself: what the static initializer threw, with its message and the frame it came from, is the problem.
     */
    static String describe(Throwable failure) {
        if (failure instanceof ExceptionInInitializerError init && init.getCause() != null) {
            Throwable cause = init.getCause();
            String at = ownFrame(cause.getStackTrace());
            return "a static initializer threw " + cause + (at == null ? "" : ", at " + at);
        }
        if (failure instanceof NoClassDefFoundError && String.valueOf(failure.getMessage())
                .startsWith("Could not initialize class")) {
            return failure + " (its static initializer failed before: see the first problem with it)";
        }
        return String.valueOf(failure);
    }

    /** The first frame of the handler's own code (not the JDK's) where {@code thread} runs, or null. */
    static String stuckAt(Thread thread) {
        return ownFrame(thread.getStackTrace());
    }

    /** The first of {@code frames} in code other than the JDK's, else the first frame, or null for none. */
    private static String ownFrame(StackTraceElement[] frames) {
        for (StackTraceElement frame : frames) {
            String c = frame.getClassName();
            if (!(c.startsWith("java.") || c.startsWith("javax.") || c.startsWith("jdk.") || c.startsWith("sun."))) {
                return show(frame);
            }
        }
        return frames.length == 0 ? null : show(frames[0]);
    }

    /** {@code com.example.Handler.<init>(Handler.java:12)}, without the class loader and module prefixes. */
    private static String show(StackTraceElement frame) {
        String source = frame.getFileName() == null ? "unknown source"
                : frame.getFileName() + (frame.getLineNumber() > 0 ? ":" + frame.getLineNumber() : "");
        return frame.getClassName() + "." + frame.getMethodName() + "(" + source + ")";
    }

    private static String locationOf(ClassLoader loader) {
        if (loader instanceof IsolatedClassLoader isolated) {
            return isolated.location();
        }
        return loader == null ? "the JDK" : "the class path";
    }
}
