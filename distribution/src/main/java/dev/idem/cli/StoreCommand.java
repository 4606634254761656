package dev.idem.cli;

import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.KeyFilter;
import dev.idem.spi.KeyPage;
import dev.idem.spi.ListedKey;
import dev.idem.spi.PurgeBatch;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code idem store get|delete|stats|list|purge}: an operator's view of the configured dedup store. Keys live in
 * the namespace of their pipeline, so {@code --pipeline} says which (not needed with one pipeline).
 */
@Command(name = "store", mixinStandardHelpOptions = true,
        description = "Shows, lists or removes keys in the configured dedup store.",
        subcommands = {StoreCommand.Get.class, StoreCommand.Delete.class, StoreCommand.Stats.class,
                StoreCommand.ListKeys.class, StoreCommand.Purge.class})
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
            return new StoreKey(pipeline(config, pipeline, "key").namespace(), config.keyDigest().apply(id));
        }

        /** The key as typed, and what the store holds for it when {@code store.key-digest} is on. */
        String shown(StoreKey storeKey) {
            return storeKey.namespace() + "/" + id + (storeKey.id().equals(id) ? "" : " (stored as " + storeKey.id() + ")");
        }
    }

    /**
     * The pipeline {@code name} of the configuration, or its only pipeline when {@code name} is null.
     *
     * @param what what the command addresses of the pipeline, for the message when it must be named
     * @throws Main.UsageError when the pipeline is not declared, or not named among several
     */
    static PipelineConfig pipeline(IdemConfig config, String name, String what) {
        if (name == null) {
            if (config.pipelines().size() != 1) {
                throw new Main.UsageError("Say which pipeline's " + what + " with --pipeline NAME; configured: "
                        + config.pipelines().keySet());
            }
            return config.pipelines().values().iterator().next();
        }
        if (!config.pipelines().containsKey(name)) {
            throw new Main.UsageError("No pipeline '" + name + "' in the configuration; configured: "
                    + config.pipelines().keySet());
        }
        return config.pipelines().get(name);
    }

    /**
     * Opens the configured store, checks it offers an operator view, and runs {@code action} on it.
     *
     * @param key the key the command addresses, resolved before the store is opened; null for none
     */
    static <T> T withStore(IdemCommand.Common common, KeyOptions key, Function<Opened, T> action) {
        return withStore(common, config -> key == null ? null : key.key(config),
                (opened, storeKey) -> action.apply(new Opened(opened.config(), opened.store(), storeKey)));
    }

    /**
     * Opens the configured store, checks it offers an operator view, and runs {@code action} on it with what
     * {@code resolve} found in the configuration: resolved before the store is opened, so a name the configuration
     * does not declare is reported without contacting the store.
     */
    static <R, T> T withStore(IdemCommand.Common common, Function<IdemConfig, R> resolve,
            BiFunction<Opened, R, T> action) {
        Setup setup = common.open();
        PluginRegistry registry = setup.plugins();
        IdemConfig config = setup.config(registry);
        R resolved = resolve.apply(config);
        DedupStore store = registry.createStore(config.store().type(), config.store().config(),
                new StoreContext(System::nanoTime));
        try {
            if (!(store instanceof InspectableDedupStore inspectable)) {
                throw new Main.CommandFailed("The dedup store '" + config.store().type() + "' offers no operator view"
                        + " (it does not implement " + InspectableDedupStore.class.getName() + ")");
            }
            return action.apply(new Opened(config, inspectable, null), resolved);
        } finally {
            store.close();
        }
    }

    /**
     * The opened store and what the command addresses.
     *
     * @param key the key the command addresses; null for a command that addresses none
     */
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
                    out.println(key.shown(storeKey) + ": absent (never seen, released, or expired)");
                } else {
                    StoredKey k = found.get();
                    out.println(key.shown(storeKey) + ": " + k.state().name().toLowerCase()
                            + ", attempts " + k.attempts()
                            + (k.state() == StoredKey.State.CLAIMED ? ", starts " + k.starts() : "")
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
                out.println(key.shown(storeKey) + (deleted ? ": deleted" : ": was absent"));
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

    /** How many keys one call of the store's list asks for at most. */
    static final int LIST_BATCH = 1000;

    @Command(name = "list", mixinStandardHelpOptions = true,
            description = {"Lists a pipeline's keys, one per line, as a claim would see them now.",
                    "Columns, separated by tabs: ID, state, attempts, until when (a claimed key's lease end, a"
                            + " completed key's retention end), fingerprint ('-' for none). Control characters and"
                            + " backslashes in IDs are printed as backslash escapes (\\n, \\t, \\u0000, \\\\)."
                            + " The count goes to stderr.",
                    "The store is read a page at a time while pipelines go on using it: a key present throughout"
                            + " is listed once; keys written meanwhile may or may not be."},
            footer = {"", "Example: idem store list --pipeline orders --state claimed --prefix order-4 --limit 20"})
    static final class ListKeys implements Callable<Integer> {
        @Mixin
        IdemCommand.Common common;
        @Spec
        CommandSpec spec;

        @Option(names = "--pipeline", paramLabel = "NAME",
                description = "The pipeline whose keys to list (not needed with one pipeline).")
        String pipeline;

        @Option(names = "--state", paramLabel = "STATE", description = "Only keys in this state: claimed or completed.")
        String state;

        @Option(names = "--prefix", paramLabel = "TEXT", defaultValue = "",
                description = "Only keys whose ID starts with TEXT, taken literally: no wildcards, case-sensitive.")
        String prefix;

        @Option(names = "--limit", paramLabel = "N", defaultValue = "100",
                description = "List at most N keys (default: ${DEFAULT-VALUE}).")
        int limit;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            if (limit < 1) {
                throw new Main.UsageError("--limit must be at least 1: " + limit);
            }
            KeyFilter filter = new KeyFilter(state(state), prefix);
            return withStore(common, config -> pipeline(config, pipeline, "keys"), (opened, p) -> {
                // A store may list a key twice in rare cases it documents (Redis, while its table shrinks).
                Set<String> listed = new HashSet<>();
                String cursor = null;
                do {
                    String after = cursor;
                    int batch = Math.min(LIST_BATCH, limit - listed.size());
                    KeyPage page = capability(opened, "list its keys",
                            () -> opened.store().list(p.namespace(), filter, after, batch));
                    for (ListedKey k : page.keys()) {
                        if (listed.size() < limit && listed.add(k.key().id())) {
                            out.println(line(k));
                        }
                    }
                    out.flush();
                    cursor = page.cursor();
                } while (cursor != null && listed.size() < limit);
                String which = "pipeline '" + p.name() + "'" + (p.namespace().equals(p.name()) ? ""
                        : " (namespace '" + p.namespace() + "')");
                String kind = filter.state() == null ? "" : " " + state.toLowerCase(Locale.ROOT);
                String starting = prefix.isEmpty() ? "" : " with IDs starting '" + escape(prefix) + "'";
                if (cursor != null) {
                    err.printf("Listed the first %,d%s keys of %s%s; there may be more: raise --limit, or narrow with"
                            + " --prefix or --state.%n", listed.size(), kind, which, starting);
                } else {
                    err.printf("Listed %,d%s key%s of %s%s.%n", listed.size(), kind, listed.size() == 1 ? "" : "s",
                            which, starting);
                }
                err.flush();
                return Main.OK;
            });
        }

        /** {@code --state}, or null for both. */
        private static StoredKey.State state(String option) {
            if (option == null) {
                return null;
            }
            return switch (option.toLowerCase(Locale.ROOT)) {
                case "claimed" -> StoredKey.State.CLAIMED;
                case "completed" -> StoredKey.State.COMPLETED;
                default -> throw new Main.UsageError("--state must be claimed or completed: " + option);
            };
        }

        /** One key's line: ID, state, attempts, until when, fingerprint, separated by tabs. */
        static String line(ListedKey k) {
            StoredKey stored = k.stored();
            return escape(k.key().id()) + "\t" + stored.state().name().toLowerCase(Locale.ROOT) + "\t"
                    + stored.attempts() + "\t" + stored.expiresAt() + "\t"
                    + (stored.fingerprint() == null ? "-" : escape(stored.fingerprint()));
        }
    }

    /**
     * {@code text} with each backslash doubled and each control character (and each lone surrogate, which no terminal
     * shows) written as a backslash escape, so that one key is one line and every ID printed is unambiguous.
     */
    static String escape(String text) {
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    boolean pair = Character.isHighSurrogate(c) && i + 1 < text.length()
                            && Character.isLowSurrogate(text.charAt(i + 1));
                    if (pair) {
                        out.append(c).append(text.charAt(++i));
                    } else if (Character.isISOControl(c) || Character.isSurrogate(c)) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.toString();
    }

    /** How many keys one call of the store's purge deletes at most, unless {@code --batch} says otherwise. */
    static final int PURGE_BATCH = 1000;

    @Command(name = "purge", mixinStandardHelpOptions = true,
            description = {"Deletes a pipeline's keys completed longer ago than --older-than.",
                    "In batches, while pipelines go on using the store; claimed keys are never deleted, and a"
                            + " redelivered message of a deleted key is processed again. Shows progress on a terminal"
                            + " and prints the count at the end.",
                    "A key's completion time is taken as the end of its retention minus the pipeline's retention as"
                            + " configured now (pipelines.<name>.retention): a key completed while a longer retention"
                            + " was configured counts as younger than it is (and is kept longer), one completed under"
                            + " a shorter retention as older."},
            footer = {"", "Example: idem store purge --pipeline orders --older-than 30d"})
    static final class Purge implements Callable<Integer> {
        @Mixin
        IdemCommand.Common common;
        @Spec
        CommandSpec spec;

        @Option(names = "--pipeline", paramLabel = "NAME",
                description = "The pipeline whose keys to purge (not needed with one pipeline).")
        String pipeline;

        @Option(names = "--older-than", paramLabel = "DURATION", required = true,
                description = "Delete keys completed longer ago than this, such as 30d, 12h or PT90M.")
        String olderThan;

        @Option(names = "--batch", paramLabel = "N", defaultValue = "" + PURGE_BATCH,
                description = "Delete at most N keys per call of the store (default: ${DEFAULT-VALUE}).")
        int batch;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            Duration age = age(olderThan);
            if (batch < 1 || batch > 100_000) {
                throw new Main.UsageError("--batch must be from 1 to 100000: " + batch);
            }
            return withStore(common, config -> pipeline(config, pipeline, "keys"), (opened, p) -> {
                String which = "pipeline '" + p.name() + "'";
                Duration retention = p.retention();
                if (age.compareTo(retention) >= 0) {
                    out.printf("Nothing to purge: %s keeps completed keys for %s (pipelines.%s.retention), so none is"
                            + " older than %s; the store forgets them by itself.%n", which,
                            ConfigKey.formatDuration(retention), p.name(), ConfigKey.formatDuration(age));
                    out.flush();
                    return Main.OK;
                }
                // A key completed `age` ago ends its retention `retention - age` from now.
                Instant expiringBefore = Instant.now().plus(retention).minus(age);
                PurgeProgress progress = new PurgeProgress(err, System.console() != null,
                        System::nanoTime, "Purging " + which);
                long deleted = 0;
                long calls = 0;
                String cursor = null;
                try {
                    do {
                        String after = cursor;
                        PurgeBatch done = capability(opened, "purge its keys",
                                () -> opened.store().purge(p.namespace(), expiringBefore, after, batch));
                        deleted += done.deleted();
                        calls++;
                        cursor = done.cursor();
                        progress.update(deleted, calls);
                    } while (cursor != null);
                } catch (StoreException e) {
                    progress.done();
                    throw new Main.CommandFailed("The purge of " + which + " stopped after deleting "
                            + String.format("%,d", deleted) + " keys: " + e.getMessage()
                            + " Run it again to go on.");
                }
                progress.done();
                out.printf("Purged %,d completed key%s of %s, completed more than %s ago.%n", deleted,
                        deleted == 1 ? "" : "s", which, ConfigKey.formatDuration(age));
                out.flush();
                return Main.OK;
            });
        }

        /** {@code --older-than} as a duration. */
        static Duration age(String option) {
            Duration age;
            try {
                age = ConfigKey.parseDuration(option);
            } catch (IllegalArgumentException e) {
                if (tooLong(option, e)) {
                    throw new Main.UsageError("--older-than " + option.strip() + " is too long: the longest accepted"
                            + " is " + ConfigKey.MAX_DURATION_DAYS + "d (about 292 years)");
                }
                age = null;
            }
            if (age == null || age.isNegative() || age.isZero()) {
                throw new Main.UsageError("--older-than must be a positive duration such as 30d, 12h or PT90M: "
                        + option);
            }
            return age;
        }

        /**
         * Whether {@code option} is a duration refused only for its length: an overflow while parsing, or a whole
         * number with a unit that does not fit in a long.
         */
        private static boolean tooLong(String option, IllegalArgumentException refused) {
            for (Throwable t = refused; t != null; t = t.getCause()) {
                if (t instanceof ArithmeticException) {
                    return true;
                }
            }
            return option.strip().toLowerCase(Locale.ROOT).matches("[0-9]+\\s*(ns|us|ms|s|m|h|d)");
        }
    }

    /**
     * Calls a capability a store may lack ({@code list}, {@code purge}): a store that throws
     * {@link UnsupportedOperationException} is reported as unable to, by its configured name.
     */
    static <T> T capability(Opened opened, String what, Supplier<T> call) {
        try {
            return call.get();
        } catch (UnsupportedOperationException e) {
            throw new Main.CommandFailed("The dedup store '" + opened.config().store().type() + "' cannot " + what
                    + ": " + e.getMessage());
        }
    }
}
