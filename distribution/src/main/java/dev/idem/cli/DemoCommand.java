package dev.idem.cli;

import dev.idem.runtime.IdemRuntime;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.OutboundMessage;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code idem demo}: starts the configured runtime (the shipped configuration: embedded ActiveMQ, the
 * JDBC store on an embedded database file, the example order handler), publishes orders of which some
 * are sent twice, and prints what the handler processed and what was skipped as a duplicate. The IDs
 * are the same on every run, so a second run shows the store remembering them across a restart.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = {"Publishes orders, some of them twice, to the configured runtime and shows that each",
                "order is processed once. Runs on the shipped configuration with no outside service."})
final class DemoCommand implements Callable<Integer> {

    /** Outcomes that settle a message for good, as the {@code outcome} tag names them. */
    private static final List<String> FINAL = List.of("processed", "duplicate", "dead-lettered", "unprotected");

    @Mixin
    IdemCommand.Common common;

    @Spec
    CommandSpec spec;

    @Option(names = "--count", paramLabel = "N", defaultValue = "12", description = "Messages to send (default: 12).")
    int count;

    @Option(names = "--duplicates", paramLabel = "PCT", defaultValue = "20",
            description = "Percent of them that repeat an earlier order's ID (default: 20).")
    int duplicates;

    @Option(names = "--fresh", description = "Use IDs never sent before, instead of the same IDs on every run.")
    boolean fresh;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "60",
            description = "How long to wait for every message to be settled, from 1 to " + MAX_TIMEOUT_SECONDS
                    + " (default: 60).")
    int timeoutSeconds;

    static final int MAX_TIMEOUT_SECONDS = 86_400;

    private record Seen(String outcome, String id, String payload) {
    }

    @Override
    public Integer call() throws InterruptedException {
        PrintWriter out = spec.commandLine().getOut();
        if (timeoutSeconds < 1 || timeoutSeconds > MAX_TIMEOUT_SECONDS) {
            throw new Main.UsageError("--timeout must be from 1 to " + MAX_TIMEOUT_SECONDS + " seconds: " + timeoutSeconds);
        }
        String prefix = fresh ? "demo-" + Long.toString(System.currentTimeMillis(), 36) + "-order-" : "demo-order-";
        MessagePlan plan = MessagePlan.checked(() -> MessagePlan.plan(count, duplicates, prefix,
                List.of(PublishCommand.DEFAULT_PAYLOAD), null, 7));
        Setup setup = common.open();
        PluginRegistry registry = setup.plugins();
        IdemConfig config = setup.config(registry);
        if (config.pipelines().size() != 1) {
            throw new Main.CommandFailed("The demo runs one pipeline; " + setup.home.show(setup.configFile)
                    + " declares " + config.pipelines().keySet());
        }
        PipelineConfig pipeline = config.pipelines().values().iterator().next();

        BlockingQueue<Seen> seen = new LinkedBlockingQueue<>();
        out.printf("Idem demo: broker '%s', store '%s', pipeline '%s' consuming '%s' with handler %s%n",
                config.broker().type(), config.store().type(), pipeline.name(), pipeline.source(), pipeline.handler());
        out.flush();
        try (BrokerAdapter broker = registry.createBroker(config.broker().type(), config.broker().config());
                IdemRuntime runtime = setup.builder().broker(config.broker().type(), broker)
                        .outcomeListener((p, outcome, message, key) -> {
                            if (FINAL.contains(outcome)) {
                                seen.add(new Seen(outcome, message.headers().getOrDefault("message-id", key),
                                        new String(message.payload(), StandardCharsets.UTF_8)));
                            }
                        })
                        .start()) {
            for (MessagePlan.Planned m : plan) {
                broker.publish(pipeline.source(), new OutboundMessage(m.id(), m.key(),
                        MessagePlan.headers(Map.of(), m), m.payload()));
            }
            out.printf("Published %d messages: %d orders, %d of them sent twice.%n%n", plan.size(), plan.unique(),
                    plan.repeats());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
            int printed = 0;
            Map<String, Integer> outcomes = new TreeMap<>();
            while (printed < plan.size()) {
                Seen s = seen.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (s == null) {
                    break;
                }
                printed++;
                outcomes.merge(s.outcome(), 1, Integer::sum);
                out.printf("  %-13s %-24s %s%n", s.outcome(), s.id(),
                        s.outcome().equals("duplicate") ? "skipped: already processed, handler not run" : s.payload());
                out.flush();
            }
            runtime.stop(Duration.ofSeconds(10));
            return summary(out, plan.size(), printed, outcomes, plan.unique());
        }
    }

    private int summary(PrintWriter out, int published, int settled, Map<String, Integer> outcomes, int orders) {
        out.println();
        int processed = outcomes.getOrDefault("processed", 0);
        int skipped = outcomes.getOrDefault("duplicate", 0);
        out.printf("%d processed, %d skipped as duplicates, %d dead-lettered.%n", processed, skipped,
                outcomes.getOrDefault("dead-lettered", 0));
        if (settled < published) {
            out.printf("Only %d of %d messages were settled within %ds; see logs/idem.log.%n", settled, published,
                    timeoutSeconds);
            out.flush();
            return Main.FAILED;
        }
        if (processed == orders) {
            out.println("Each order was processed once and each repeat skipped. Run `idem demo` again: the same IDs are");
            out.println("skipped as duplicates, because the store keeps them in data/ across restarts.");
        } else if (processed == 0) {
            out.println("Every message was skipped: these IDs were processed by an earlier run, and the store kept them");
            out.println("across the restart. `idem demo --fresh` sends new IDs.");
        }
        out.flush();
        return Main.OK;
    }
}
