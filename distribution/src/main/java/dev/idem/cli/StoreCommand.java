package dev.idem.cli;

import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code idem store get|delete|stats}: an operator's view of the configured dedup store. Keys live in
 * the namespace of their pipeline, so {@code --pipeline} says which (not needed with one pipeline).
 */
@Command(name = "store", mixinStandardHelpOptions = true,
        description = "Shows or removes keys in the configured dedup store.",
        subcommands = {StoreCommand.Get.class, StoreCommand.Delete.class, StoreCommand.Stats.class})
final class StoreCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        return IdemCommand.missingSubcommand(spec);
    }

    /** Options of the subcommands that address one key. */
    static final class KeyOptions {
        @Option(names = "--pipeline", paramLabel = "NAME", description = "The pipeline whose key namespace the ID belongs to.")
        String pipeline;

        @Parameters(paramLabel = "ID", description = "The idempotency key, as the pipeline extracted it.")
        String id;

        /**
         * Refuses, before anything is opened, an ID no pipeline could have stored.
         *
         * @throws Main.UsageError for an ID longer than a key may be
         */
        void checkId() {
            int bytes = id.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > StoreKey.MAX_ID_BYTES) {
                throw new Main.UsageError(String.format("The ID is %,d bytes of UTF-8, but a key is at most %d bytes:"
                        + " a pipeline never stores a longer one (it treats it as no key)", bytes, StoreKey.MAX_ID_BYTES));
            }
        }

        /** @throws Main.UsageError when the pipeline is not declared, or not named among several */
        StoreKey key(IdemConfig config) {
            String name = pipeline;
            if (name == null) {
                if (config.pipelines().size() != 1) {
                    throw new Main.UsageError("Say which pipeline's key with --pipeline NAME; configured: "
                            + config.pipelines().keySet());
                }
                name = config.pipelines().keySet().iterator().next();
            } else if (!config.pipelines().containsKey(name)) {
                throw new Main.UsageError("No pipeline '" + name + "' in the configuration; configured: "
                        + config.pipelines().keySet());
            }
            return new StoreKey(config.pipelines().get(name).namespace(), id);
        }
    }

    /**
     * Opens the configured store, checks it offers an operator view, and runs {@code action} on it.
     *
     * @param key the key the command addresses, resolved before the store is opened; null for none
     */
    static <T> T withStore(IdemCommand.Common common, KeyOptions key, Function<Opened, T> action) {
        Setup setup = common.open();
        PluginRegistry registry = setup.plugins();
        IdemConfig config = setup.config(registry);
        StoreKey storeKey = key == null ? null : key.key(config);
        DedupStore store = registry.createStore(config.store().type(), config.store().config(),
                new StoreContext(System::nanoTime));
        try {
            if (!(store instanceof InspectableDedupStore inspectable)) {
                throw new Main.CommandFailed("The dedup store '" + config.store().type() + "' offers no operator view"
                        + " (it does not implement " + InspectableDedupStore.class.getName() + ")");
            }
            return action.apply(new Opened(config, inspectable, storeKey));
        } finally {
            store.close();
        }
    }

    record Opened(IdemConfig config, InspectableDedupStore store, StoreKey key) {
    }

    @Command(name = "get", mixinStandardHelpOptions = true, description = "Shows a key's state in the store.")
    static final class Get implements Callable<Integer> {
        @Mixin
        IdemCommand.Common common;
        @Mixin
        KeyOptions key;
        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            key.checkId();
            return withStore(common, key, opened -> {
                StoreKey storeKey = opened.key();
                Optional<StoredKey> found = opened.store().inspect(storeKey);
                if (found.isEmpty()) {
                    out.println(storeKey.namespace() + "/" + storeKey.id() + ": absent (never seen, released, or expired)");
                } else {
                    StoredKey k = found.get();
                    out.println(storeKey.namespace() + "/" + storeKey.id() + ": " + k.state().name().toLowerCase()
                            + ", attempts " + k.attempts()
                            + (k.fingerprint() != null ? ", fingerprint " + k.fingerprint() : "")
                            + (k.state() == StoredKey.State.CLAIMED ? ", lease until " : ", remembered until ")
                            + k.expiresAt());
                }
                out.flush();
                return Main.OK;
            });
        }
    }

    @Command(name = "delete", mixinStandardHelpOptions = true,
            description = {"Removes a key, so a message with that ID is processed again.",
                    "A consumer running the key's handler now loses its claim, as if its lease had run out."})
    static final class Delete implements Callable<Integer> {
        @Mixin
        IdemCommand.Common common;
        @Mixin
        KeyOptions key;
        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            key.checkId();
            return withStore(common, key, opened -> {
                StoreKey storeKey = opened.key();
                boolean deleted = opened.store().delete(storeKey);
                out.println(storeKey.namespace() + "/" + storeKey.id() + (deleted ? ": deleted" : ": was absent"));
                out.flush();
                return Main.OK;
            });
        }
    }

    @Command(name = "stats", mixinStandardHelpOptions = true, description = "Counts the keys claimed and completed.")
    static final class Stats implements Callable<Integer> {
        @Mixin
        IdemCommand.Common common;
        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            return withStore(common, null, opened -> {
                StoreStats stats = opened.store().stats();
                out.printf("store '%s': %,d claimed, %,d completed%s%n", opened.config().store().type(), stats.claimed(),
                        stats.completed(), stats.truncated() ? " (counting stopped early: at least these)" : "");
                out.flush();
                return Main.OK;
            });
        }
    }
}
