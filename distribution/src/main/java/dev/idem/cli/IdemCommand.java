package dev.idem.cli;

import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Option;

/** {@code idem}: the top command; every subcommand takes {@code --config} and {@code --help}. */
@Command(name = "idem", mixinStandardHelpOptions = true, versionProvider = IdemCommand.Version.class,
        description = "Runs message handlers effectively once over an at-least-once broker.",
        subcommands = {RunCommand.class, CheckCommand.class, PluginsCommand.class, PublishCommand.class,
                StoreCommand.class, DemoCommand.class},
        footer = {"", "Exit codes: 0 done, 1 failure, 2 invalid usage, configuration or handlers, "
                + "128+n stopped by signal n after a graceful stop."})
final class IdemCommand implements Runnable {

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
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
