package dev.idem.cli;

import dev.idem.runtime.Idem;
import dev.idem.runtime.config.ConfigPrinter;
import dev.idem.runtime.config.KeyDigest;
import dev.idem.runtime.config.PluginSpecs.Kind;
import dev.idem.runtime.plugin.CodeLocations;
import dev.idem.runtime.plugin.PluginDescriptor;
import java.io.PrintWriter;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code idem check}: everything {@code idem run} does before it connects — plugins discovered, the
 * configuration validated against their declared keys, each pipeline's handler created from its JAR —
 * then prints what it found, secrets masked. Exit 0, or 2 with every problem.
 */
@Command(name = "check", mixinStandardHelpOptions = true,
        description = {"Validates the configuration and the handlers without consuming anything.",
                "Prints the broker, the store, the pipelines and their handlers; exit 0, or 2 with every problem."})
final class CheckCommand implements Callable<Integer> {

    @Mixin
    IdemCommand.Common common;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        // A handler that ends the process while it is created is a handler problem, as one that throws.
        ExitGuard.unexpectedExitStatus(Main.INVALID);
        Setup setup = common.open();
        Idem.Validated validated = setup.builder().validate();
        out.println("Configuration " + setup.home.show(setup.configFile) + " is valid.");
        out.println();
        out.println("Broker: " + describe(validated, Kind.BROKER, validated.config().broker().type()));
        out.println("Store:  " + describe(validated, Kind.STORE, validated.config().store().type()));
        KeyDigest digest = validated.config().keyDigest();
        if (digest != KeyDigest.NONE) {
            out.println("        keeps a digest of each key (store.key-digest: " + digest.configValue() + ")");
            out.println("Warning: store.key-digest must stay what it was when the store first held keys. Keys written"
                    + " under another setting are not found: a message delivered again would run again. Switch it"
                    + " only on an empty store, or once every key has expired (pipelines.<name>.retention).");
        }
        out.println("Pipelines:");
        for (Map.Entry<String, Class<?>> handler : validated.handlers().entrySet()) {
            var pipeline = validated.config().pipelines().get(handler.getKey());
            out.println("  " + handler.getKey() + ": consumes '" + pipeline.source() + "', handler "
                    + handler.getValue().getName() + " from "
                    + setup.home.show(CodeLocations.of(handler.getValue())));
        }
        out.println();
        out.println("Effective configuration (defaults filled in, secrets masked):");
        out.print(ConfigPrinter.print(validated.config()));
        out.flush();
        return Main.OK;
    }

    private static String describe(Idem.Validated validated, Kind kind, String id) {
        for (PluginDescriptor plugin : validated.plugins()) {
            if (plugin.kind() == kind && plugin.id().equals(id)) {
                return id + " (version " + plugin.version() + ", from " + plugin.location() + ")";
            }
        }
        return id;
    }
}
