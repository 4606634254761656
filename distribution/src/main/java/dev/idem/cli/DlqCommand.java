package dev.idem.cli;

import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.ConfigKey;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code idem dlq replay}: an operator's work on a pipeline's dead letters. */
@Command(name = "dlq", mixinStandardHelpOptions = true, description = "Works on the dead letters of a pipeline.",
        subcommands = {DlqCommand.Replay.class})
final class DlqCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        return IdemCommand.missingSubcommand(spec);
    }

    /** See {@link DlqReplay} for what moving means and when it stops. */
    @Command(name = "replay", mixinStandardHelpOptions = true,
            description = {"Moves a pipeline's dead letters back to its source, to be processed again.",
                    "Each copy keeps the original key, payload and headers (the dead-letter headers removed); the dead"
                            + " letter is removed only once the broker confirmed the copy. Dead letters of other"
                            + " pipelines sharing the destination stay. Ends when it has read what the destination"
                            + " held at the start, after --limit moves, or when none came for --idle. On Kafka the"
                            + " dead letters stay in the topic: the reader group idem-dlq-replay-<pipeline> moves"
                            + " past them.",
                    "With --aggregate ID (a pipeline with a sequence guard), only the dead letters of that aggregate"
                            + " move, once the read ended, lowest sequence number first, so that the guard sees them in"
                            + " order; the first failure stops the moves. It heals an aggregate blocked by a"
                            + " sequence-gap dead letter (idem.sequence.blocked).",
                    "Prints a line per dead letter; control characters and backslashes in IDs and reasons are printed"
                            + " as backslash escapes (\\n, \\u001b, \\\\), as 'idem store list' prints IDs.",
                    "Exit 0, or 1 when a dead letter could not be moved (it stays)."})
    static final class Replay implements Callable<Integer> {
        @Mixin
        IdemCommand.Common common;

        @Spec
        CommandSpec spec;

        @Option(names = "--pipeline", paramLabel = "NAME",
                description = "The pipeline whose dead letters to move (not needed with one pipeline).")
        String pipeline;

        @Option(names = "--limit", paramLabel = "N", description = "Move at most N dead letters.")
        Integer limit;

        @Option(names = "--id", paramLabel = "ID",
                description = "Move only the dead letter with this idempotency key or message ID; repeatable.")
        List<String> ids = new ArrayList<>();

        @Option(names = "--aggregate", paramLabel = "ID",
                description = "Move only the dead letters of this aggregate (the pipeline's sequence.aggregate),"
                        + " lowest sequence number first.")
        String aggregate;

        @Option(names = "--cause", paramLabel = "CAUSE",
                description = "Move only dead letters with this cause (sequence-gap, handler-failed, ...).")
        String cause;

        @Option(names = "--dry-run", description = "List what would move; move nothing.")
        boolean dryRun;

        @Option(names = "--idle", paramLabel = "DURATION", defaultValue = "2s",
                description = "Stop when no dead letter came for this long (default: ${DEFAULT-VALUE}).")
        String idle;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            DlqReplay.Options options = options();
            Setup setup = common.open();
            PluginRegistry registry = setup.plugins();
            IdemConfig config = setup.config(registry);
            PipelineConfig p = pipeline(config);
            DlqReplay.check(p, options);
            try (BrokerAdapter broker = registry.createBroker(config.broker().type(), config.broker().config())) {
                return DlqReplay.replay(registry, config, p, broker, options, out).ok() ? Main.OK : Main.FAILED;
            }
        }

        /** @throws Main.UsageError for a limit below 1 or an idle time that is no duration */
        private DlqReplay.Options options() {
            if (limit != null && limit < 1) {
                throw new Main.UsageError("--limit must be at least 1: " + limit);
            }
            Duration idleTime;
            try {
                idleTime = ConfigKey.parseDuration(idle);
            } catch (IllegalArgumentException e) {
                throw new Main.UsageError("Invalid value for option '--idle': '" + idle + "' " + e.getMessage());
            }
            if (idleTime.compareTo(Duration.ofMillis(100)) < 0) {
                throw new Main.UsageError("--idle must be at least 100ms: " + idle);
            }
            if (aggregate != null && aggregate.isEmpty()) {
                throw new Main.UsageError("--aggregate needs an aggregate ID");
            }
            if (cause != null && cause.isBlank()) {
                throw new Main.UsageError("--cause needs a cause, such as sequence-gap");
            }
            return new DlqReplay.Options(limit, new LinkedHashSet<>(ids), dryRun, idleTime, aggregate, cause);
        }

        /** @throws Main.UsageError when the pipeline is not declared, or not named among several */
        private PipelineConfig pipeline(IdemConfig config) {
            if (pipeline == null) {
                if (config.pipelines().size() != 1) {
                    throw new Main.UsageError("Say whose dead letters with --pipeline NAME; configured: "
                            + config.pipelines().keySet());
                }
                return config.pipelines().values().iterator().next();
            }
            PipelineConfig p = config.pipelines().get(pipeline);
            if (p == null) {
                throw new Main.UsageError("No pipeline '" + pipeline + "' in the configuration; configured: "
                        + config.pipelines().keySet());
            }
            return p;
        }
    }
}
