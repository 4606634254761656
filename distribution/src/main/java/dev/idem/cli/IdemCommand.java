package dev.idem.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code idem}: the top command; every subcommand takes {@code --config} and {@code --help}. */
@Command(name = "idem", mixinStandardHelpOptions = true, versionProvider = IdemCommand.Version.class,
        description = "Runs message handlers effectively once over an at-least-once broker.",
        subcommands = {RunCommand.class, CheckCommand.class, PluginsCommand.class, PublishCommand.class,
                StoreCommand.class, DlqCommand.class, DemoCommand.class},
        footer = {"", "Exit codes: 0 done, 1 failure, 2 invalid usage, configuration or handlers, "
                + "128+n stopped by signal n after a graceful stop."})
final class IdemCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    /** No command named: the usage, on stderr, as for any other usage error. */
    @Override
    public Integer call() {
        return missingSubcommand(spec);
    }

    /** Prints a command's usage to stderr and returns the usage-error exit code; for commands made of subcommands. */
    static int missingSubcommand(CommandSpec spec) {
        PrintWriter err = spec.commandLine().getErr();
        err.println("Missing command: name one of " + spec.subcommands().keySet().stream()
                .filter(name -> !name.equals("help")).toList() + ".");
        spec.commandLine().usage(err);
        err.flush();
        return Main.INVALID;
    }

    /** The options every subcommand shares. */
    static final class Common {

        @Option(names = "--config", paramLabel = "FILE",
                description = "The configuration file (default: conf/idem.yaml under the installation).")
        Path config;

        Setup open() {
            return Setup.open(Home.detect(), config);
        }
    }

    static final class Version implements IVersionProvider {
        @Override
        public String[] getVersion() {
            String version = IdemCommand.class.getPackage().getImplementationVersion();
            return new String[] {"idem " + (version != null ? version : "(development build)"),
                    "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"};
        }
    }
}
