package dev.idem.cli;

import dev.idem.api.IdemException;
import dev.idem.spi.ConfigException;
import dev.idem.spi.PluginException;
import dev.idem.spi.Secret;
import java.io.PrintWriter;
import java.io.StringWriter;
import picocli.CommandLine;

/**
 * {@code bin/idem}'s entry point. Exit codes: {@value #OK} done, {@value #FAILED} a failure at run time
 * (the broker or store unreachable, a command that could not complete), {@value #INVALID} invalid usage,
 * configuration, plugins or handlers (every problem is printed); {@code 128+n} when signal {@code n}
 * stopped {@code idem run}, after its graceful stop. A handler or plugin that calls {@code System.exit} does not
 * choose the status: see {@link ExitGuard}.
 */
public final class Main {

    static final int OK = 0;
    static final int FAILED = 1;
    static final int INVALID = 2;

    /**
     * Where H2 binds the TCP server it starts for an {@code AUTO_SERVER=TRUE} database, as the shipped store's
     * is, so that {@code idem store} reads the file {@code idem run} holds. H2 binds every interface unless this
     * property names one; idem makes it the loopback interface unless {@code -Dh2.bindAddress} in
     * {@code JAVA_OPTS} says otherwise. Read once, when the JDBC plugin's H2 first starts.
     */
    static final String H2_BIND_ADDRESS = "h2.bindAddress";

    private Main() {
    }

    public static void main(String[] args) {
        System.setProperty("idem.console.level", consoleLevel(args));
        if (System.getProperty(H2_BIND_ADDRESS) == null) {
            System.setProperty(H2_BIND_ADDRESS, "127.0.0.1");
        }
        ExitGuard.install();
        int status = execute(args);
        ExitGuard.idemExits();
        System.exit(status);
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
        cli.setParameterExceptionHandler((e, args) -> usageError(e.getMessage(), e.getCommandLine()));
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> report(e, commandLine));
        cli.setExitCodeExceptionMapper(e -> INVALID);
        return cli;
    }

    /** A usage error is one line, with where to read the command's usage: a stack trace or a page of help hides it. */
    private static int usageError(String message, CommandLine command) {
        PrintWriter err = command.getErr();
        err.println(message.strip().replaceAll("\\R+", " ") + " (see '"
                + command.getCommandSpec().qualifiedName() + " --help')");
        err.flush();
        return INVALID;
    }

    static int report(Exception e, CommandLine command) {
        PrintWriter err = command.getErr();
        if (e instanceof CommandLine.ParameterException usage) {
            return usageError(usage.getMessage(), usage.getCommandLine());
        }
        if (e instanceof UsageError usage) {
            return usageError(usage.getMessage(), command);
        }
        if (e instanceof ConfigException config) {
            err.println(config.problems().size() == 1 ? "Invalid configuration:" :
                    config.problems().size() + " configuration problems:");
            for (String problem : config.problems()) {
                err.println("  - " + Secret.maskCredentials(problem));
            }
            err.flush();
            return INVALID;
        }
        if (e instanceof PluginException) {
            err.println("Plugin problem: " + Secret.maskCredentials(e.getMessage()));
            err.flush();
            return INVALID;
        }
        if (e instanceof IdemException || e instanceof CommandFailed) {
            err.println(Secret.maskCredentials(e.getMessage()));
            if (e.getCause() != null && !(e instanceof CommandFailed)) {
                err.println("  caused by: " + Secret.maskCredentials(e.getCause().toString()));
            }
            err.flush();
            return FAILED;
        }
        StringWriter trace = new StringWriter();
        e.printStackTrace(new PrintWriter(trace));
        err.println("Unexpected failure: " + Secret.maskCredentials(trace.toString()).stripTrailing());
        err.flush();
        return FAILED;
    }

    /**
     * The command was called wrongly (an option out of range, a file that cannot be read, a name the configuration
     * does not declare): exit {@value #INVALID} with the message on one line, no stack trace. The message says what
     * was given and what is accepted.
     */
    static final class UsageError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UsageError(String message) {
            super(message);
        }
    }

    /** A command could not do its job; the message says what and what to do. */
    static final class CommandFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CommandFailed(String message) {
            super(message);
        }
    }
}
