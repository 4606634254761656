package dev.idem.cli;

import dev.idem.runtime.plugin.PluginDescriptor;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code idem plugins}: the broker adapters, dedup stores and ID extractors found, with versions and folders. */
@Command(name = "plugins", mixinStandardHelpOptions = true,
        description = "Lists the broker adapters, dedup stores and ID extractors found, with versions and folders.")
final class PluginsCommand implements Callable<Integer> {

    @Mixin
    IdemCommand.Common common;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        Setup setup = Setup.open(Home.detect(), common.config, false);
        List<PluginDescriptor> plugins = setup.plugins().plugins();
        String format = "%-15s %-13s %-16s %s%n";
        out.printf(format, "KIND", "ID", "VERSION", "LOCATION");
        for (PluginDescriptor p : plugins) {
            out.printf(format, p.kind().label(), p.id(), p.version(), setup.home.show(p.location()));
        }
        out.flush();
        return Main.OK;
    }
}
