package dev.idem.handlertest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.idem.api.MessageHandler;
import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.ReplyAddress;
import dev.idem.spi.StoreContext;
import dev.idem.store.caffeine.CaffeineDedupStoreProvider;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import dev.idem.testkit.memory.InMemoryBroker;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;
import java.util.function.Supplier;

/**
 * The crash test of a handler: proves, or disproves, that it runs effectively once. It runs the handler through the
 * real pipeline in this process, on the in-memory broker and the Caffeine store (or the project's own store), feeds it
 * a stream of messages, and kills it at every point a crash can hit, once for each message: before the handler, after
 * each of its effects, after each of its durable steps, and after it returned but before the key completed (inside the
 * transaction before it commits, in transactional mode). A kill does what {@code kill -9} does to a consumer process:
 * the run is abandoned where it is, nothing more reaches the store or the broker, the store keeps the claim, and once
 * the claim's lease ran out the message comes again, to a new runtime over the same store, which runs it to its end.
 * Then it compares, per message, how often each effect ran with a pass in which every message came once and nothing
 * crashed.
 *
 * <pre>{@code
 * @Test
 * void chargesEachOrderOnce() {
 *     EffectRecorder effects = new EffectRecorder();
 *     FakePayments payments = new FakePayments(effects);      // records "charge" per charge it applies
 *     CrashReport report = CrashTest.of(new OrderHandler(payments))
 *             .effects(effects)
 *             .messages(20, i -> TestMessage.of("order-" + i, "{\"amount\":" + i + "}"))
 *             .duplicate(0.2)
 *             .redeliverEach()
 *             .run();
 *     report.assertEffectivelyOnce();                          // or assertThat(report.verdict()).isEqualTo(...)
 * }
 * }</pre>
 *
 * <p><b>Passes.</b> A reference pass (each message once, in order, no crash) tells what each message does: its effects
 * and its durable steps, which name the crash points. Then the stream (with its repeats, duplicates and shuffling) runs
 * without a crash, and once more for each crash point: {@code before the handler}, {@code after effect n} for each
 * effect a message's run has, {@code after step n} for each durable step, and {@code after the handler, before the
 * key completed} ({@code inside the transaction, before it committed}). Each pass starts from an empty store (a new
 * namespace, on a store of the project's own) and a new broker.
 *
 * <p><b>Effects.</b> What the test counts is what the project's fakes report: an {@link EffectRecorder} the fake calls
 * each time the effect happens, and, for effects that live where the test can only look afterwards (rows in the
 * handler's own database, which roll back with its transaction), an {@link Observer} asked after each pass.
 *
 * <p><b>The pipeline.</b> One pipeline, {@value #PIPELINE}, consuming {@value #PIPELINE}, with the handler bound in
 * code; settings of the project's own ({@link #pipeline(String)}) go under it, over these defaults: one message at a
 * time ({@code concurrency: 1}, {@code max-in-flight: 1}) so that each kill hits one message, quick retries
 * ({@code retry.initial-backoff: 10ms}); the kit's store keeps its time on a manual clock that a kill moves past the
 * lease, so a pass takes milliseconds. A store of the project's own keeps real time: a kill then waits for the lease
 * ({@code lease: 1s} by default there).
 *
 * <p>Not thread-safe; one test, one instance. {@link #run()} may be called again.
 */
public final class CrashTest {

    /** The pipeline the handler runs in, and the queue it consumes. */
    public static final String PIPELINE = "crash-test";

    /** What a project's own store is called in the test's configuration. */
    private static final String STORE_ID = "crash-test-store";

    /** Durable effects a test can only look at afterwards, such as rows in the handler's own database. */
    @FunctionalInterface
    public interface Observer {
        /**
         * The effects the message with this ID had, by name, counted after a pass ended; an effect it did not have may
         * be left out.
         */
        Map<String, Integer> effectsOf(String messageId) throws Exception;
    }

    private final Supplier<? extends MessageHandler> handlers;
    private String pipelineYaml = "";
    private Supplier<? extends DedupStore> stores;
    private List<TestMessage> messages = List.of();
    private boolean redeliverEach;
    private double duplicateShare;
    private int shuffleWindow = 1;
    private long seed = 42;
    private EffectRecorder recorder;
    private Observer observer;
    private Runnable beforeEachPass = () -> { };
    private Duration passTimeout = Duration.ofSeconds(60);

    private CrashTest(Supplier<? extends MessageHandler> handlers) {
        this.handlers = handlers;
    }

    /** A crash test of this handler, used by every pass. */
    public static CrashTest of(MessageHandler handler) {
        Objects.requireNonNull(handler, "handler");
        return new CrashTest(() -> handler);
    }

    /** A crash test that makes a new handler for each pass (with fresh fakes behind it, say). */
    public static CrashTest of(Supplier<? extends MessageHandler> handlers) {
        return new CrashTest(Objects.requireNonNull(handlers, "handlers"));
    }

    /**
     * Settings for the pipeline, as YAML under {@code pipelines.crash-test} ({@code transactional: true},
     * {@code id: [...]}, {@code retry: ...}); they win over the test's defaults, except {@code source},
     * {@code dead-letter} and {@code namespace}, which the test sets.
     */
    public CrashTest pipeline(String yaml) {
        this.pipelineYaml = Objects.requireNonNull(yaml, "yaml");
        return this;
    }

    /**
     * The project's own store, made afresh for each pass and closed after it (the JDBC store on an H2 file for
     * transactional mode, say). Its clock is real: a kill waits for the claim's lease, so set a short {@code lease}.
     * By default the Caffeine store, on a clock the test moves.
     */
    public CrashTest store(Supplier<? extends DedupStore> stores) {
        this.stores = Objects.requireNonNull(stores, "stores");
        return this;
    }

    /** The messages, each sent once in the reference pass; in this order. */
    public CrashTest messages(List<TestMessage> messages) {
        Set<String> ids = new HashSet<>();
        for (TestMessage m : messages) {
            if (!ids.add(m.id())) {
                throw new IllegalArgumentException("Message ID '" + m.id() + "' is listed twice; repeats are what"
                        + " redeliverEach() and duplicate(share) make");
            }
        }
        this.messages = List.copyOf(messages);
        return this;
    }

    /** {@code count} messages, the i-th (from 0) made by {@code message}. */
    public CrashTest messages(int count, IntFunction<TestMessage> message) {
        List<TestMessage> made = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            made.add(message.apply(i));
        }
        return messages(made);
    }

    /** Every message comes again after the stream, as after a consumer group's rebalance. */
    public CrashTest redeliverEach() {
        this.redeliverEach = true;
        return this;
    }

    /** This share of the messages (0 to 1) is sent twice in a row, as by a producer that retried. */
    public CrashTest duplicate(double share) {
        if (share < 0 || share > 1) {
            throw new IllegalArgumentException("The share of duplicates must be from 0 to 1, not " + share);
        }
        this.duplicateShare = share;
        return this;
    }

    /** The stream is shuffled within windows of this many deliveries, as partitions interleave. */
    public CrashTest shuffleWithin(int window) {
        if (window < 1) {
            throw new IllegalArgumentException("A shuffle window holds at least 1 delivery, not " + window);
        }
        this.shuffleWindow = window;
        return this;
    }

    /** The seed of the duplicates and the shuffling; 42 by default, so a report can be reproduced. */
    public CrashTest seed(long seed) {
        this.seed = seed;
        return this;
    }

    /** Where the handler's fakes record their effects; reset before each pass. */
    public CrashTest effects(EffectRecorder recorder) {
        this.recorder = Objects.requireNonNull(recorder, "recorder");
        return this;
    }

    /** Asked after each pass for each message's durable effects. */
    public CrashTest observe(Observer observer) {
        this.observer = Objects.requireNonNull(observer, "observer");
        return this;
    }

    /** Runs before each pass, to reset what the project's fakes or database hold. */
    public CrashTest beforeEachPass(Runnable reset) {
        this.beforeEachPass = Objects.requireNonNull(reset, "reset");
        return this;
    }

    /** How long one pass may take before the report calls its messages unsettled; 60 s by default. */
    public CrashTest passTimeout(Duration timeout) {
        this.passTimeout = Objects.requireNonNull(timeout, "timeout");
        return this;
    }

    /**
     * Runs every pass and reports.
     *
     * @throws IllegalStateException if no message or no way to see effects was given
     * @throws ConfigException if the pipeline's settings are invalid (transactional mode on the Caffeine
     *         store, say)
     */
    public CrashReport run() {
        if (messages.isEmpty()) {
            throw new IllegalStateException("No messages: give the crash test some with messages(...)");
        }
        if (recorder == null && observer == null) {
            throw new IllegalStateException("The crash test sees no effect: give it the EffectRecorder your fakes"
                    + " record to (effects(...)) or an observer of your handler's effects (observe(...))");
        }
        ObjectNode pipeline = pipelineSettings();
        boolean transactional = pipeline.path("transactional").asText("false").equals("true");
        List<TestMessage> stream = stream();
        List<CrashReport.Row> rows = new ArrayList<>();
        int passNumber = 0;

        Outcome reference = runPass(new Pass(new CrashPoint(CrashPoint.Kind.NONE, 0, null), transactional), messages,
                pipeline, ++passNumber);
        rows.add(reference.row("reference (each message once)", reference));
        Outcome plain = runPass(new Pass(new CrashPoint(CrashPoint.Kind.NONE, 0, null), transactional), stream,
                pipeline, ++passNumber);
        rows.add(plain.row("stream, no crash", reference));
        for (CrashPoint point : points(reference, transactional)) {
            Outcome crashed = runPass(new Pass(point, transactional), stream, pipeline, ++passNumber);
            rows.add(crashed.row(point.label(), reference));
        }
        String title = "Crash test of " + describe() + ": " + messages.size() + " messages, stream of "
                + stream.size() + " deliveries (" + streamDescription() + "), " + (transactional ? "transactional"
                        : "plain") + " mode";
        return new CrashReport(title, rows, reference.keys.size());
    }

    // ---------------------------------------------------------------- passes

    /** The crash points the reference pass showed: before the handler, each effect, each step, before completion. */
    private static List<CrashPoint> points(Outcome reference, boolean transactional) {
        List<CrashPoint> points = new ArrayList<>();
        points.add(new CrashPoint(CrashPoint.Kind.BEFORE_HANDLER, 0, null));
        for (int i = 1; i <= longest(reference.pass.effects); i++) {
            points.add(new CrashPoint(CrashPoint.Kind.AFTER_EFFECT, i, nameAt(reference.pass.effects, i)));
        }
        for (int i = 1; i <= longest(reference.pass.steps); i++) {
            points.add(new CrashPoint(CrashPoint.Kind.AFTER_STEP, i, nameAt(reference.pass.steps, i)));
        }
        points.add(new CrashPoint(transactional ? CrashPoint.Kind.BEFORE_COMMIT : CrashPoint.Kind.BEFORE_COMPLETION, 0,
                null));
        return points;
    }

    private static int longest(Map<String, List<String>> runs) {
        return runs.values().stream().mapToInt(List::size).max().orElse(0);
    }

    /** The name of every run's n-th effect or step, when all that have one agree; else {@code null}. */
    private static String nameAt(Map<String, List<String>> runs, int n) {
        Set<String> names = new LinkedHashSet<>();
        for (List<String> run : runs.values()) {
            if (run.size() >= n) {
                names.add(run.get(n - 1));
            }
        }
        return names.size() == 1 ? names.iterator().next() : null;
    }

    private Outcome runPass(Pass pass, List<TestMessage> deliveries, ObjectNode pipeline, int number) {
        beforeEachPass.run();
        if (recorder != null) {
            recorder.reset();
        }
        MessageHandler handler = Objects.requireNonNull(handlers.get(), "the handler supplier gave null");
        ManualTicker ticker = new ManualTicker();
        boolean ownStore = stores == null;
        DedupStore store = ownStore ? caffeine(ticker) : Objects.requireNonNull(stores.get(), "the store supplier"
                + " gave null");
        InMemoryBroker broker = new InMemoryBroker(System::nanoTime, 1);
        String yaml = configuration(pipeline, number, ownStore);
        Duration lease = Duration.ofMillis(1).plus(leaseOf(yaml));
        try {
            for (TestMessage m : deliveries) {
                OutboundMessage outbound = new OutboundMessage(m.id(), m.key(), m.headers(), m.payload());
                if (m.replyTo().isPresent()) {
                    broker.publishRequest(PIPELINE, outbound, ReplyAddress.of(m.replyTo().get(), m.id()));
                } else {
                    broker.publish(PIPELINE, outbound);
                }
            }
            long deadline = System.nanoTime() + passTimeout.toNanos();
            while (true) {
                Incarnation incarnation = new Incarnation(pass, broker.connect(), store, handler, yaml, STORE_ID,
                        PIPELINE);
                boolean settled = false;
                try {
                    while (!incarnation.dead() && System.nanoTime() - deadline < 0) {
                        if (settled(broker, incarnation)) {
                            settled = true;
                            break;
                        }
                        LockSupport.parkNanos(Duration.ofMillis(5).toNanos());
                    }
                } finally {
                    incarnation.close();
                }
                if (settled || System.nanoTime() - deadline >= 0) {
                    break;
                }
                // Killed: its claims stay in the store until their leases run out. The kit's store keeps time on the
                // ticker, moved here; a project's own keeps real time, and the next runtime waits for the leases.
                if (ownStore) {
                    ticker.advance(lease);
                }
            }
            Set<String> dead = new HashSet<>();
            for (InboundMessage m : broker.drain(PIPELINE + ".DLQ")) {
                dead.add(m.headers().getOrDefault("message-id", m.brokerMessageId()));
            }
            int unsettled = broker.depth(PIPELINE) + broker.unsettled(PIPELINE);
            return new Outcome(pass, effects(), dead, unsettled, ids(deliveries));
        } finally {
            broker.close();
            store.close();
        }
    }

    /** Whether every delivery was settled: nothing waits in the queue, nothing is held. */
    private static boolean settled(InMemoryBroker broker, Incarnation incarnation) {
        return broker.depth(PIPELINE) == 0 && broker.unsettled(PIPELINE) == 0 && incarnation.inFlight() == 0;
    }

    private static DedupStore caffeine(ManualTicker ticker) {
        CaffeineDedupStoreProvider provider = new CaffeineDedupStoreProvider();
        return provider.create(TestPluginConfig.defaults("store.caffeine", provider.configSpec()),
                new StoreContext(ticker));
    }

    /** Each message's effects in the pass that just ended: what the recorder counted, and what the observer sees. */
    private Map<String, Map<String, Integer>> effects() {
        Map<String, Map<String, Integer>> effects = new TreeMap<>();
        if (recorder != null) {
            effects.putAll(recorder.counts());
        }
        if (observer != null) {
            for (TestMessage m : messages) {
                try {
                    Map<String, Integer> seen = observer.effectsOf(m.id());
                    if (seen != null) {
                        Map<String, Integer> of = new TreeMap<>(effects.getOrDefault(m.id(), Map.of()));
                        of.putAll(seen);
                        effects.put(m.id(), of);
                    }
                } catch (Exception e) {
                    throw new IllegalStateException("The crash test's observer failed for message '" + m.id() + "'", e);
                }
            }
        }
        return effects;
    }

    private static Set<String> ids(List<TestMessage> deliveries) {
        Set<String> ids = new LinkedHashSet<>();
        for (TestMessage m : deliveries) {
            ids.add(m.id());
        }
        return ids;
    }

    /** What one pass left: each message's effects, its dead letters, what never settled. */
    private static final class Outcome {
        final Pass pass;
        final Map<String, Map<String, Integer>> effects;
        final Set<String> deadLettered;
        final int unsettled;
        final Set<String> keys;

        Outcome(Pass pass, Map<String, Map<String, Integer>> effects, Set<String> deadLettered, int unsettled,
                Set<String> keys) {
            this.pass = pass;
            this.effects = effects;
            this.deadLettered = deadLettered;
            this.unsettled = unsettled;
            this.keys = new LinkedHashSet<>(keys);
            this.keys.addAll(effects.keySet());
        }

        /** This pass as a report row, compared with {@code reference}. */
        CrashReport.Row row(String label, Outcome reference) {
            Set<String> names = new LinkedHashSet<>();
            for (Map<String, Integer> of : reference.effects.values()) {
                names.addAll(of.keySet());
            }
            for (Map<String, Integer> of : effects.values()) {
                names.addAll(of.keySet());
            }
            Map<String, CrashReport.Tally> tallies = new TreeMap<>();
            Map<String, String> worst = new TreeMap<>();
            Set<String> all = new LinkedHashSet<>(reference.keys);
            all.addAll(keys);
            for (String effect : names) {
                int same = 0;
                int more = 0;
                int fewer = 0;
                for (String key : all) {
                    int expected = reference.effects.getOrDefault(key, Map.of()).getOrDefault(effect, 0);
                    int got = effects.getOrDefault(key, Map.of()).getOrDefault(effect, 0);
                    if (got == expected) {
                        same++;
                    } else if (got > expected) {
                        more++;
                        worst.putIfAbsent(effect, "message '" + key + "' " + got + " times, " + expected
                                + " without crashes");
                    } else {
                        fewer++;
                    }
                }
                tallies.put(effect, new CrashReport.Tally(same, more, fewer));
            }
            Set<String> differ = new HashSet<>(deadLettered);
            differ.addAll(reference.deadLettered);
            Set<String> both = new HashSet<>(deadLettered);
            both.retainAll(reference.deadLettered);
            differ.removeAll(both);
            return new CrashReport.Row(pass.point, label, pass.crashes(), tallies, differ.size(), unsettled, worst);
        }
    }

    // ---------------------------------------------------------------- the stream

    /** The deliveries of every pass but the reference: duplicates, repeats and shuffling, from the seed. */
    List<TestMessage> stream() {
        Random random = new Random(seed);
        List<TestMessage> stream = new ArrayList<>();
        for (TestMessage m : messages) {
            stream.add(m);
            if (duplicateShare > 0 && random.nextDouble() < duplicateShare) {
                stream.add(m);
            }
        }
        if (redeliverEach) {
            stream.addAll(messages);
        }
        for (int from = 0; shuffleWindow > 1 && from < stream.size(); from += shuffleWindow) {
            Collections.shuffle(stream.subList(from, Math.min(stream.size(), from + shuffleWindow)), random);
        }
        return stream;
    }

    private String streamDescription() {
        List<String> parts = new ArrayList<>();
        if (duplicateShare > 0) {
            parts.add(Math.round(duplicateShare * 100) + " % duplicated");
        }
        if (redeliverEach) {
            parts.add("each redelivered");
        }
        if (shuffleWindow > 1) {
            parts.add("shuffled within " + shuffleWindow);
        }
        parts.add("seed " + seed);
        return String.join(", ", parts);
    }

    private String describe() {
        MessageHandler sample = handlers.get();
        if (sample == null || sample.getClass().isSynthetic() || sample.getClass().getName().contains("$$Lambda")) {
            return "a handler lambda";
        }
        return sample.getClass().getSimpleName().isEmpty() ? sample.getClass().getName()
                : sample.getClass().getSimpleName();
    }

    // ---------------------------------------------------------------- configuration

    private static final YAMLMapper YAML = new YAMLMapper();

    /** The project's pipeline settings over the test's defaults. */
    private ObjectNode pipelineSettings() {
        ObjectNode settings = YAML.createObjectNode();
        settings.put("concurrency", "1");
        settings.put("max-in-flight", "1");
        settings.putObject("retry").put("initial-backoff", "10ms").put("max-backoff", "100ms");
        try {
            JsonNode own = pipelineYaml.isBlank() ? null : YAML.readTree(pipelineYaml);
            if (own != null && !own.isMissingNode() && !own.isNull()) {
                if (!own.isObject()) {
                    throw new IllegalArgumentException("The pipeline settings must be a YAML map, not: " + pipelineYaml);
                }
                merge(settings, (ObjectNode) own);
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("The pipeline settings are not YAML: " + e.getMessage(), e);
        }
        return settings;
    }

    private static void merge(ObjectNode into, ObjectNode from) {
        from.fields().forEachRemaining(field -> {
            JsonNode mine = into.get(field.getKey());
            if (mine instanceof ObjectNode mineObject && field.getValue() instanceof ObjectNode theirs) {
                merge(mineObject, theirs);
            } else {
                into.set(field.getKey(), field.getValue());
            }
        });
    }

    /** The whole configuration of one pass: its own namespace, so that a project's store sees fresh keys. */
    private String configuration(ObjectNode pipeline, int pass, boolean ownStore) {
        ObjectNode settings = pipeline.deepCopy();
        if (!ownStore && !settings.has("lease")) {
            settings.put("lease", "1s");
        }
        settings.put("source", PIPELINE);
        settings.put("dead-letter", PIPELINE + ".DLQ");
        settings.put("namespace", PIPELINE + "-" + pass + "-" + Long.toString(System.nanoTime() & 0xFFFFFF, 36));
        ObjectNode root = YAML.createObjectNode();
        root.putObject("broker").put("type", "memory");
        root.putObject("store").put("type", STORE_ID);
        root.putObject("runtime").put("shutdown-timeout", "5s");
        root.putObject("pipelines").set(PIPELINE, settings);
        try {
            return YAML.writeValueAsString(root);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Duration leaseOf(String yaml) {
        try {
            JsonNode lease = YAML.readTree(yaml).path("pipelines").path(PIPELINE).path("lease");
            return lease.isMissingNode() ? Duration.ofSeconds(30) : ConfigKey.parseDuration(lease.asText());
        } catch (IOException | RuntimeException e) {
            return Duration.ofSeconds(30);
        }
    }
}
