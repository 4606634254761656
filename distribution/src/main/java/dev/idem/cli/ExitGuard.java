package dev.idem.cli;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells an end of the process that idem asked for from one that code inside it asked for. idem ends the process in
 * two ways only: {@link Main#main} exits with the command's status once the command returned, and a signal (SIGTERM,
 * SIGINT, SIGHUP) exits with 128+n through the JVM's own handler. A handler or plugin that calls
 * {@code System.exit} ends it a third way, with whatever status it chose (often 0), and without this guard the
 * process would stop gracefully and exit 0 as if asked to.
 *
 * <p>The guard is a shutdown hook. When it runs and idem did not ask for the exit, it finds the thread blocked in
 * {@code System.exit} (or {@code Runtime.exit}), logs an error naming the frame that called it and its thread,
 * runs the command's stop ({@link #whenExiting}: {@code idem run}'s graceful stop), then halts with
 * {@link #unexpectedExitStatus} ({@value Main#FAILED} unless the command said otherwise), since the JVM would
 * otherwise exit with the status the caller chose. A signal reaches {@code Shutdown.exit} without
 * {@code Runtime.exit}, so it is not mistaken for one.
 *
 * <p>Installed by {@link Main#main} only: in process (tests, embedding) nothing is guarded and a stop runs on a
 * shutdown hook of its own.
 */
final class ExitGuard {

    private static final Logger log = LoggerFactory.getLogger(ExitGuard.class);

    private static volatile boolean installed;
    private static volatile boolean idemExits;
    private static volatile int unexpectedExitStatus = Main.FAILED;
    private static final List<Runnable> stops = new CopyOnWriteArrayList<>();

    private ExitGuard() {
    }

    /** Guards this process; {@link Main#main} calls it once, before the command runs. */
    static synchronized void install() {
        if (!installed) {
            installed = true;
            Runtime.getRuntime().addShutdownHook(new Thread(ExitGuard::onShutdown, "idem-exit-guard"));
        }
    }

    /** idem itself ends the process now, with the command's exit status. */
    static void idemExits() {
        idemExits = true;
    }

    /** The status to exit with when code inside idem ended the process: {@code check} says 2, a handler problem. */
    static void unexpectedExitStatus(int status) {
        unexpectedExitStatus = status;
    }

    /** Runs {@code stop} when the process ends, whoever ends it, before the guard halts an unexpected exit. */
    static void whenExiting(Runnable stop, String name) {
        if (installed) {
            stops.add(stop);
        } else {
            Runtime.getRuntime().addShutdownHook(new Thread(stop, name));
        }
    }

    private static void onShutdown() {
        Caller caller = idemExits ? null : exitCaller(Thread.getAllStackTraces());
        if (caller != null) {
            log.error("{} called System.exit on thread '{}': idem did not ask to end the process. {} A handler or"
                    + " plugin must not call System.exit; a handler throws an exception to fail a message.",
                    caller.frame(), caller.thread(), stops.isEmpty() ? "Exiting with status " + unexpectedExitStatus
                            + "." : "Stopping gracefully, then exiting with status " + unexpectedExitStatus + ".");
        }
        for (Runnable stop : stops) {
            try {
                stop.run();
            } catch (RuntimeException e) {
                log.error("Stopping failed: {}", e.toString(), e);
            }
        }
        if (caller != null) {
            // The exit code would otherwise be the caller's, often 0.
            Runtime.getRuntime().halt(unexpectedExitStatus);
        }
    }

    /** Who called {@code System.exit}: the frame that called it, and its thread. */
    record Caller(String frame, String thread) {
    }

    /**
     * The code that called {@code System.exit} or {@code Runtime.exit} among {@code threads}, or null when no thread
     * did: the JVM exits for a signal (through {@code Shutdown.exit} directly) or because its last thread ended.
     */
    static Caller exitCaller(Map<Thread, StackTraceElement[]> threads) {
        for (Map.Entry<Thread, StackTraceElement[]> thread : threads.entrySet()) {
            StackTraceElement[] frames = thread.getValue();
            boolean inShutdown = false;
            int exit = -1;
            for (int i = 0; i < frames.length; i++) {
                String type = frames[i].getClassName();
                String method = frames[i].getMethodName();
                if (type.equals("java.lang.Shutdown") && method.equals("exit")) {
                    inShutdown = true;
                } else if (inShutdown && method.equals("exit")
                        && (type.equals("java.lang.Runtime") || type.equals("java.lang.System"))) {
                    exit = i;
                }
            }
            if (exit >= 0) {
                String frame = exit + 1 < frames.length ? show(frames[exit + 1]) : "Code whose frames are unknown";
                return new Caller(frame, thread.getKey().getName());
            }
        }
        return null;
    }

    /** {@code com.example.Handler.handle(Handler.java:12)}, without the class loader and module prefixes. */
    private static String show(StackTraceElement frame) {
        String source = frame.getFileName() == null ? "unknown source"
                : frame.getFileName() + (frame.getLineNumber() > 0 ? ":" + frame.getLineNumber() : "");
        return frame.getClassName() + "." + frame.getMethodName() + "(" + source + ")";
    }
}
