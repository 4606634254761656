package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * How the guard tells who ended the process, on the stacks the JVM shows while its shutdown hooks run. The real
 * thing, a handler calling {@code System.exit} under {@code bin/idem}, is in {@code HandlerExitIT}.
 */
class ExitGuardTest {

    private static StackTraceElement frame(String type, String method, String file, int line) {
        return new StackTraceElement(type, method, file, line);
    }

    /** What the thread that called System.exit shows while it waits for the shutdown hooks. */
    private static final StackTraceElement[] HANDLER_EXITS = {
        frame("java.lang.Object", "wait", "Object.java", -2),
        frame("java.lang.Thread", "join", "Thread.java", 1304),
        frame("java.lang.ApplicationShutdownHooks", "runHooks", "ApplicationShutdownHooks.java", 107),
        frame("java.lang.Shutdown", "runHooks", "Shutdown.java", 130),
        frame("java.lang.Shutdown", "exit", "Shutdown.java", 173),
        frame("java.lang.Runtime", "exit", "Runtime.java", 115),
        frame("java.lang.System", "exit", "System.java", 1871),
        frame("com.example.ExitingHandler", "handle", "ExitingHandler.java", 21),
        frame("dev.idem.runtime.internal.pipeline.ClaimedRun", "execute", "ClaimedRun.java", 80),
    };

    /** What the JVM's signal handler thread shows for SIGTERM: Shutdown.exit, never Runtime.exit. */
    private static final StackTraceElement[] SIGNAL = {
        frame("java.lang.Thread", "join", "Thread.java", 1304),
        frame("java.lang.ApplicationShutdownHooks", "runHooks", "ApplicationShutdownHooks.java", 107),
        frame("java.lang.Shutdown", "runHooks", "Shutdown.java", 130),
        frame("java.lang.Shutdown", "exit", "Shutdown.java", 173),
        frame("java.lang.Terminator$1", "handle", "Terminator.java", 51),
        frame("jdk.internal.misc.Signal$1", "run", "Signal.java", 219),
        frame("java.lang.Thread", "run", "Thread.java", 840),
    };

    /** A worker waiting for work: exit frames elsewhere than under Shutdown.exit do not count. */
    private static final StackTraceElement[] IDLE = {
        frame("jdk.internal.misc.Unsafe", "park", "Unsafe.java", -2),
        frame("dev.idem.runtime.internal.pipeline.KeyScheduler", "take", "KeyScheduler.java", 120),
    };

    @Test
    void namesTheFrameThatCalledSystemExitAndItsThread() {
        Thread worker = new Thread(() -> { }, "idem-orders-1");
        Thread other = new Thread(() -> { }, "idem-orders-2");

        ExitGuard.Caller caller = ExitGuard.exitCaller(Map.of(worker, HANDLER_EXITS, other, IDLE));

        assertThat(caller).isEqualTo(new ExitGuard.Caller("com.example.ExitingHandler.handle(ExitingHandler.java:21)",
                "idem-orders-1"));
    }

    @Test
    void aSignalOrTheLastThreadEndingIsNoUnexpectedExit() {
        assertThat(ExitGuard.exitCaller(Map.of(new Thread(() -> { }, "SIGTERM handler"), SIGNAL,
                new Thread(() -> { }, "idem-orders-1"), IDLE))).isNull();
        assertThat(ExitGuard.exitCaller(Map.of(new Thread(() -> { }, "idem-orders-1"), IDLE))).isNull();
    }
}
