package dev.idem.cli;

import dev.idem.api.IdemException;
import dev.idem.spi.ConfigException;
import dev.idem.spi.PluginException;
import java.io.PrintWriter;
import picocli.CommandLine;

/**
 * {@code bin/idem}'s entry point. Exit codes: {@value #OK} done, {@value #FAILED} a failure at run time
 * (the broker or store unreachable, a command that could not complete), {@value #INVALID} invalid usage,
 * configuration, plugins or handlers (every problem is printed); {@code 128+n} when signal {@code n}
 * stopped {@code idem run}, after its graceful stop.
 */
public final class Main {

    static final int OK = 0;
    static final int FAILED = 1;
    static final int INVALID = 2;

    private Main() {
    }

    public static void main(String[] args) {
        System.setProperty("idem.console.level", consoleLevel(args));
        System.exit(execute(args));
    }

    /**
     * The console log level: info for the long-running commands, whose log is their output; warnings
     * only for the others, whose output is what they print. Read by {@code conf/logback.xml}, so it is set
     * before anything logs.
     */
    static String consoleLevel(String[] args) {
        for (String arg : args) {
            if (!arg.startsWith("-")) {
                return arg.equals("run") ? "INFO" : "WARN";
            }
        }
        return "WARN";
    }

    static int execute(String... args) {
        CommandLine cli = commandLine();
        return cli.execute(args);
    }

    static CommandLine commandLine() {
        CommandLine cli = new CommandLine(new IdemCommand());
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> report(e, commandLine.getErr()));
        cli.setExitCodeExceptionMapper(e -> INVALID);
        return cli;
    }

    private static int report(Exception e, PrintWriter err) {
        if (e instanceof CommandLine.ParameterException usage) {
            err.println(usage.getMessage());
            usage.getCommandLine().usage(err);
            err.flush();
            return INVALID;
        }
        if (e instanceof ConfigException config) {
            err.println(config.problems().size() == 1 ? "Invalid configuration:" :
                    config.problems().size() + " configuration problems:");
            for (String problem : config.problems()) {
                err.println("  - " + problem);
            }
            err.flush();
            return INVALID;
        }
        if (e instanceof PluginException) {
            err.println("Plugin problem: " + e.getMessage());
            err.flush();
            return INVALID;
        }
        if (e instanceof IdemException || e instanceof CommandFailed) {
            err.println(e.getMessage());
            if (e.getCause() != null && !(e instanceof CommandFailed)) {
                err.println("  caused by: " + e.getCause());
            }
            err.flush();
            return FAILED;
        }
        err.println("Unexpected failure: " + e);
        e.printStackTrace(err);
        err.flush();
        return FAILED;
    }

    /** A command could not do its job; the message says what and what to do. */
    static final class CommandFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CommandFailed(String message) {
            super(message);
        }
    }
}
