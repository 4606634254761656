package dev.idem.cli;

import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.config.PluginSection;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.Backlog;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerException;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Moves the dead letters of one pipeline back to its source, through any {@link BrokerAdapter}: it reads the
 * dead-letter destination as a reader of its own ({@value #READER_PREFIX}{@code <pipeline>}, a consumer group on
 * Kafka), and for each dead letter publishes a copy to the source (returning once the broker confirmed it) and only
 * then acknowledges the dead letter. The copy has the original key, payload and headers, without the headers the
 * dead-lettering added ({@link DeadLetterReason}'s) and those brokers set on dead-lettered or redelivered messages.
 *
 * <p>Dead letters it does not move stay where they are: never acknowledged, they go back to the broker when the
 * subscription closes. The exception is a dead letter of another pipeline sharing the destination on a broker where
 * acknowledging only moves this reader past it ({@link Backlog#retained()}, Kafka): it is acknowledged, since
 * otherwise this reader's position could never pass it, and the other pipeline's reader still sees it.
 *
 * <p>It ends on its own: after {@code --limit} moves; once it has read as many dead letters as the adapter said the
 * destination held at the start ({@link BrokerAdapter#backlog}), so messages dead-lettered meanwhile wait for the next
 * run; or when nothing came for the idle time. A dead letter whose message this run already moved (the handler still
 * fails and dead-lettered the copy again) is left in place, so a run never loops; a message is known by its key,
 * headers and payload, as the broker's message ID need not be unique (AMQP's is the publisher's).
 *
 * <p>With {@code --aggregate} (a pipeline with the sequence guard), the dead letters of that aggregate (found by the
 * pipeline's {@code sequence.aggregate} extractors, on the message as the pipeline received it) are only gathered while
 * reading; once the read ended they move lowest {@code sequence.number} first, so that the guard sees them in order,
 * and a failure stops the moves, so that none moves before an earlier one. The others stay where they are.
 *
 * <p>Single-threaded: the adapter's threads only queue deliveries; this one settles them in order.
 */
final class DlqReplay {

    /** The reader's name: the consumer group on Kafka ({@code group-id-prefix} in front). */
    static final String READER_PREFIX = "idem-dlq-replay-";

    /**
     * The most dead letters handed over and not settled at once. Dead letters left in place (a dry run lists them
     * all) stay unsettled until the end, so this bounds how many one run can pass over; an adapter may hold fewer
     * (ActiveMQ: its prefetch).
     */
    static final int WINDOW = 1000;

    static final Duration DEFAULT_IDLE = Duration.ofSeconds(2);

    /**
     * How long the first dead letter may take once the adapter said some are waiting: a Kafka consumer joins its
     * group and fetches first, which takes seconds.
     */
    static final Duration FIRST_DELIVERY_WAIT = Duration.ofSeconds(30);

    /** How long a shutdown (Ctrl-C) waits for the run to settle what it moved and close. */
    private static final long SHUTDOWN_WAIT_MILLIS = 10_000;

    private static final long POLL_SLICE_MILLIS = 200;

    /** From how many listed dead letters a dry run that did not drain says it may have seen only part. */
    private static final int DRY_RUN_NOTE = 100;

    /** What the dead-lettering added: the reason and the origin. */
    static final Set<String> DEAD_LETTER_HEADERS = Set.of(DeadLetterReason.HEADER_CAUSE,
            DeadLetterReason.HEADER_DETAIL, DeadLetterReason.HEADER_ATTEMPTS, DeadLetterReason.HEADER_PIPELINE,
            DeadLetterReason.ORIGIN_SOURCE, DeadLetterReason.ORIGIN_PARTITION, DeadLetterReason.ORIGIN_OFFSET,
            DeadLetterReason.ORIGIN_MESSAGE_ID);

    /**
     * What brokers set on messages they dead-letter or redeliver (RabbitMQ's DLX and quorum queues, ActiveMQ's
     * poison acks). A publisher must not set them: the runtime would read a copied {@code x-delivery-count} as the
     * copy's delivery count, and RabbitMQ owns {@code x-death}.
     */
    static final Set<String> BROKER_HEADERS = Set.of("x-death", "x-first-death-exchange", "x-first-death-queue",
            "x-first-death-reason", "x-last-death-exchange", "x-last-death-queue", "x-last-death-reason",
            "x-delivery-count", "dlqDeliveryFailureCause");

    /** The header the default ID extraction reads and {@code idem publish} sets. */
    static final String MESSAGE_ID_HEADER = "message-id";

    /**
     * @param pipeline the pipeline whose dead letters move
     * @param source where they move to: the pipeline's source
     * @param deadLetters where they are: the pipeline's dead-letter destination or the adapter's default
     */
    record Target(String pipeline, String source, String deadLetters) {
    }

    /**
     * @param limit the most dead letters to move (list, in a dry run), or {@code null} for all
     * @param ids move only dead letters with one of these idempotency keys or message IDs; empty for all
     * @param dryRun list what would move and move nothing
     * @param idle stop when nothing came for this long
     * @param aggregate move only the dead letters of this aggregate of the sequence guard, in sequence order; or
     *        {@code null}
     * @param cause move only dead letters with this cause ({@code sequence-gap}, ...); or {@code null}
     * @param selected move only the dead letters it accepts, given each as the destination holds it (the console's
     *        selection: some messages, or a group of one cause); or {@code null} for all
     */
    record Options(Integer limit, Set<String> ids, boolean dryRun, Duration idle, String aggregate, String cause,
            Predicate<InboundMessage> selected) {
        Options {
            ids = Set.copyOf(ids);
        }

        Options(Integer limit, Set<String> ids, boolean dryRun, Duration idle, String aggregate, String cause) {
            this(limit, ids, dryRun, idle, aggregate, cause, null);
        }

        Options(Integer limit, Set<String> ids, boolean dryRun, Duration idle) {
            this(limit, ids, dryRun, idle, null, null, null);
        }
    }

    /**
     * The pipeline's sequence guard, as the runtime reads it: each function is an extractor chain ({@code
     * sequence.aggregate}, {@code sequence.number}) applied to a message as the pipeline received it, the first value
     * found winning; {@code null} when none is found. Either may throw for a message it cannot read.
     */
    record Sequence(Function<InboundMessage, String> aggregate, Function<InboundMessage, String> number) {
    }

    /** A dead letter of the aggregate, gathered while reading, moved once the read ended. */
    private record Gathered(Delivery delivery, long number) {
    }

    /**
     * What a run did.
     *
     * @param moved dead letters moved (in a dry run: that would move)
     * @param skipped dead letters left in place: of another pipeline, not matching {@code --id}, {@code --cause} or
     *        {@code --aggregate} (or without a sequence number), moved already, or not moved after a failure or past
     *        {@code --limit} (with {@code --aggregate})
     * @param failed dead letters that could not be moved (they stay)
     * @param incomplete whether the run stopped before it read what the destination held: a failure the broker may
     *        recover from, or none of the dead letters the adapter counted came
     */
    record Report(int moved, int skipped, int failed, boolean incomplete) {
        boolean ok() {
            return failed == 0 && !incomplete;
        }
    }

    private final BrokerAdapter broker;
    private final Target target;
    private final Options options;
    private final Function<InboundMessage, String> keys;
    /** The pipeline's sequence guard; {@code null} without one. */
    private final Sequence sequence;
    private final PrintWriter out;

    private int moved;
    private int failed;
    private int otherPipeline;
    private int notMatching;
    private int otherCause;
    private int notSelected;
    private int otherAggregate;
    private int withoutNumber;
    /** Dead letters of the aggregate not moved: behind a failure, or past {@code --limit}. */
    private int notMoved;
    private int again;
    /** With {@code --aggregate}: its dead letters, in the order read. */
    private final List<Gathered> gathered = new ArrayList<>();
    private boolean retained;
    private String stopped;
    private boolean incomplete;
    /** Whether the run read everything the adapter counted at the start. */
    private boolean drained;
    /** Fingerprints of the messages moved, to recognise one dead-lettered again during the run. */
    private final Set<String> movedMessages = new HashSet<>();
    private volatile boolean shutdown;

    /**
     * @param keys the pipeline's idempotency key of a message as it was before it was dead-lettered, or {@code null}
     */
    DlqReplay(BrokerAdapter broker, Target target, Options options, Function<InboundMessage, String> keys,
            PrintWriter out) {
        this(broker, target, options, keys, null, out);
    }

    /**
     * @param keys the pipeline's idempotency key of a message as it was before it was dead-lettered, or {@code null}
     * @param sequence the pipeline's sequence guard, needed for {@link Options#aggregate()}; or {@code null}
     */
    DlqReplay(BrokerAdapter broker, Target target, Options options, Function<InboundMessage, String> keys,
            Sequence sequence, PrintWriter out) {
        if (options.aggregate() != null && sequence == null) {
            throw new IllegalArgumentException("--aggregate needs the pipeline's sequence guard");
        }
        this.broker = broker;
        this.target = target;
        this.options = options;
        this.keys = keys;
        this.sequence = sequence;
        this.out = out;
    }

    /**
     * Moves the dead letters of pipeline {@code p} back to its source through {@code broker}, as {@code idem dlq replay}
     * does: the one way the CLI and the console replay. The pipeline's idempotency key and sequence guard are built
     * through {@code registry} as the runtime builds them.
     *
     * @param broker an adapter of the configured broker; not closed here
     * @throws Main.UsageError when the pipeline dead-letters to its own source, or {@code --aggregate} is given for a
     *         pipeline without a sequence guard
     * @throws Main.CommandFailed when neither the pipeline nor the broker names a dead-letter destination
     * @throws BrokerException if the destination cannot be read
     */
    static Report replay(PluginRegistry registry, IdemConfig config, PipelineConfig p, BrokerAdapter broker,
            Options options, PrintWriter out) {
        check(p, options);
        Function<InboundMessage, String> keys = keys(registry, p.idExtractors());
        Sequence sequence = p.sequence() == null ? null
                : new Sequence(keys(registry, p.sequence().aggregate()), keys(registry, p.sequence().number()));
        String deadLetters = deadLetters(config, p, broker);
        if (deadLetters.equals(p.source())) {
            throw new Main.UsageError("The broker '" + config.broker().type() + "' dead-letters the"
                    + " messages of pipeline '" + p.name() + "' to its own source '" + p.source()
                    + "': there is nothing to move back");
        }
        return new DlqReplay(broker, new Target(p.name(), p.source(), deadLetters), options, keys, sequence, out)
                .run();
    }

    /**
     * What the configuration alone tells against a replay, checked before any broker is contacted.
     *
     * @throws Main.UsageError when the pipeline dead-letters to its own source, or {@code --aggregate} is given for a
     *         pipeline without a sequence guard
     */
    static void check(PipelineConfig p, Options options) {
        if (p.source().equals(p.deadLetter())) {
            throw new Main.UsageError("Pipeline '" + p.name() + "' dead-letters to its own source '"
                    + p.source() + "': there is nothing to move back");
        }
        if (options.aggregate() != null && p.sequence() == null) {
            throw new Main.UsageError("--aggregate picks the dead letters of one aggregate of the sequence guard,"
                    + " and pipeline '" + p.name() + "' has none (pipelines." + p.name() + ".sequence)");
        }
    }

    /**
     * Where pipeline {@code p}'s dead letters are: its {@code dead-letter}, or the broker's default.
     *
     * @throws Main.CommandFailed when neither names one
     */
    static String deadLetters(IdemConfig config, PipelineConfig p, BrokerAdapter broker) {
        String deadLetters = p.deadLetter() != null ? p.deadLetter() : broker.defaultDeadLetterDestination(p.source());
        if (deadLetters == null) {
            throw new Main.CommandFailed("Pipeline '" + p.name() + "' names no dead-letter destination and the"
                    + " broker '" + config.broker().type() + "' has none by default: set pipelines." + p.name()
                    + ".dead-letter");
        }
        return deadLetters;
    }

    /**
     * The first value an extractor chain finds in a message, as the runtime reads it: the idempotency key ({@code
     * id}), or the sequence guard's aggregate or number; built through the plugin registry as the runtime builds them.
     */
    static Function<InboundMessage, String> keys(PluginRegistry registry, List<PluginSection> chain) {
        List<IdExtractor> extractors = new ArrayList<>();
        for (PluginSection section : chain) {
            extractors.add(registry.createIdExtractor(section.type(), section.config()));
        }
        return message -> {
            for (IdExtractor extractor : extractors) {
                String key = extractor.extract(message);
                if (key != null && !key.isEmpty()) {
                    return key;
                }
            }
            return null;
        };
    }

    /** @throws BrokerException if the destination cannot be read */
    Report run() {
        SubscriptionRequest request = new SubscriptionRequest(READER_PREFIX + target.pipeline(), target.deadLetters(),
                WINDOW, null);
        Optional<Backlog> backlog = broker.backlog(request);
        long expected = backlog.map(Backlog::messages).orElse(-1L);
        retained = backlog.map(Backlog::retained).orElse(false);
        String verb = options.dryRun() ? "Dry run: listing" : "Moving";
        if (expected == 0) {
            out.printf("No dead letters of pipeline '%s' in '%s'.%n", target.pipeline(), target.deadLetters());
            out.flush();
            return new Report(0, 0, 0, false);
        }
        out.printf("%s the dead letters of pipeline '%s' from '%s' to '%s' (%s).%n", verb, target.pipeline(),
                target.deadLetters(), target.source(), expected > 0 ? expected + " waiting"
                        : "reading until none comes for " + ConfigKey.formatDuration(options.idle()));
        out.flush();

        BlockingQueue<Delivery> received = new LinkedBlockingQueue<>();
        CountDownLatch closed = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            shutdown = true;
            try {
                closed.await(SHUTDOWN_WAIT_MILLIS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "idem-dlq-replay-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        Subscription subscription = null;
        try {
            subscription = broker.subscribeDeadLetters(request, received::addAll);
            read(received, expected);
            moveGathered();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopped = "interrupted";
            incomplete = true;
        } finally {
            try {
                if (subscription != null) {
                    // Unsettled dead letters go back to the broker; what was acknowledged is committed (Kafka).
                    subscription.stop();
                    subscription.close();
                }
            } finally {
                closed.countDown();
                try {
                    Runtime.getRuntime().removeShutdownHook(hook);
                } catch (IllegalStateException e) {
                    // The JVM is shutting down: the hook is running and waits for the latch above.
                }
            }
        }
        int skipped = otherPipeline + notMatching + otherCause + notSelected + otherAggregate + withoutNumber
                + notMoved + again;
        summary(skipped);
        return new Report(moved, skipped, failed, incomplete);
    }

    private void read(BlockingQueue<Delivery> received, long expected) throws InterruptedException {
        long seen = 0;
        long waitNanos = (expected > 0 ? max(options.idle(), FIRST_DELIVERY_WAIT) : options.idle()).toNanos();
        while (true) {
            Delivery d = poll(received, waitNanos);
            if (d == null) {
                if (shutdown) {
                    stopped = "stopped by a signal";
                    incomplete = true;
                } else if (seen == 0 && expected > 0) {
                    stopped = "none of the " + expected + " dead letters counted in '" + target.deadLetters()
                            + "' came within " + ConfigKey.formatDuration(max(options.idle(), FIRST_DELIVERY_WAIT))
                            + " (another consumer may hold them)";
                    incomplete = true;
                } else {
                    stopped = "no more dead letters came within " + ConfigKey.formatDuration(options.idle());
                }
                return;
            }
            waitNanos = options.idle().toNanos();
            seen++;
            if (!settle(d)) {
                return;
            }
            if (options.limit() != null && moved >= options.limit()) {
                stopped = "--limit " + options.limit() + " reached";
                return;
            }
            if (expected > 0 && seen >= expected) {
                drained = true;
                stopped = "read " + (expected == 1 ? "the dead letter '" : "all " + expected + " dead letters '")
                        + target.deadLetters() + "' held at the start";
                return;
            }
        }
    }

    /** The next delivery within {@code nanos}, or {@code null}; {@code null} at once after a shutdown signal. */
    private Delivery poll(BlockingQueue<Delivery> received, long nanos) throws InterruptedException {
        long deadline = System.nanoTime() + nanos;
        while (!shutdown) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            Delivery d = received.poll(Math.min(left, TimeUnit.MILLISECONDS.toNanos(POLL_SLICE_MILLIS)),
                    TimeUnit.NANOSECONDS);
            if (d != null) {
                return d;
            }
        }
        return null;
    }

    /**
     * Moves, lists or leaves one dead letter; with {@code --aggregate}, gathers one of the aggregate instead.
     *
     * @return false to stop: publishing failed in a way the broker may recover from, so the next would fail too
     */
    private boolean settle(Delivery d) {
        InboundMessage m = d.message();
        Map<String, String> original = originalHeaders(m.headers());
        InboundMessage before = asBeforeDeadLettering(m, original);
        String key = key(before);
        String label = label(key, m, original);
        String from = m.headers().get(DeadLetterReason.HEADER_PIPELINE);
        if (from != null && !from.equals(target.pipeline())) {
            otherPipeline++;
            if (retained && !options.dryRun()) {
                // Only this reader moves past it; the other pipeline's reader still has it.
                try {
                    d.ack();
                } catch (BrokerException e) {
                    // This reader reads it again next time, and skips it again.
                }
            }
            return true;
        }
        if (!options.ids().isEmpty() && !matches(key, m, original)) {
            notMatching++;
            return true;
        }
        if (options.cause() != null && !options.cause().equals(m.headers().get(DeadLetterReason.HEADER_CAUSE))) {
            otherCause++;
            return true;
        }
        if (options.selected() != null && !options.selected().test(m)) {
            notSelected++;
            return true;
        }
        if (options.aggregate() != null) {
            gather(d, before, label);
            return true;
        }
        return move(d, label, null);
    }

    /** Keeps a dead letter of the aggregate, with its sequence number, for {@link #moveGathered}; leaves the others. */
    private void gather(Delivery d, InboundMessage before, String label) {
        if (!options.aggregate().equals(extract(sequence.aggregate(), before))) {
            otherAggregate++;
            return;
        }
        String text = extract(sequence.number(), before);
        long number = text == null ? -1 : sequenceNumber(text);
        if (number < 1) {
            withoutNumber++;
            line("left", label, "no sequence number the pipeline's sequence.number extractors can read"
                    + (text == null ? "" : " ('" + (text.length() > 40 ? text.substring(0, 40) + "..." : text) + "')")
                    + "; left in place");
            return;
        }
        gathered.add(new Gathered(d, number));
    }

    /**
     * With {@code --aggregate}, once the read ended: moves (lists, in a dry run) the aggregate's dead letters lowest
     * sequence number first (those of one number in the order read), up to {@code --limit}. The first failure stops
     * the moves, so that no dead letter moves before an earlier one; what is not moved stays.
     */
    private void moveGathered() {
        if (gathered.isEmpty() || shutdown) {
            notMoved += gathered.size();
            return;
        }
        gathered.sort(Comparator.comparingLong(Gathered::number));
        int count = options.limit() == null ? gathered.size() : Math.min(options.limit(), gathered.size());
        long first = gathered.get(0).number();
        long last = gathered.get(count - 1).number();
        out.printf("%s %d dead %s of aggregate '%s' in sequence order (%s)%s.%n",
                options.dryRun() ? "Would move" : "Moving", count, count == 1 ? "letter" : "letters",
                StoreCommand.escape(options.aggregate()), first == last ? "number " + first
                        : "numbers " + first + " to " + last,
                count < gathered.size() ? "; --limit " + options.limit() + " leaves " + (gathered.size() - count)
                        + " in place" : "");
        out.flush();
        int i = 0;
        boolean cut = false;
        while (i < count && !cut) {
            if (shutdown) {
                stopped = "stopped by a signal";
                incomplete = true;
                cut = true;
                break;
            }
            Gathered g = gathered.get(i++);
            int failedBefore = failed;
            boolean go = move(g.delivery(), label(g.delivery()), g.number());
            if (!go || failed > failedBefore) {
                cut = true;
                if (go) {
                    stopped = "stopped at the first failure, so that no later dead letter of the aggregate moves"
                            + " before it";
                }
            }
        }
        if (!cut && count < gathered.size()) {
            stopped = "--limit " + options.limit() + " reached";
        }
        notMoved += gathered.size() - i;
    }

    private String label(Delivery d) {
        InboundMessage m = d.message();
        Map<String, String> original = originalHeaders(m.headers());
        return label(key(asBeforeDeadLettering(m, original)), m, original);
    }

    /**
     * Moves (lists, in a dry run) one dead letter, or leaves it when this run moved the same message already.
     *
     * @param number its sequence number, printed before its reason; or {@code null}
     * @return false to stop: publishing failed in a way the broker may recover from, so the next would fail too
     */
    private boolean move(Delivery d, String label, Long number) {
        InboundMessage m = d.message();
        Map<String, String> original = originalHeaders(m.headers());
        String why = number == null ? reason(m.headers()) : "number " + number + ", " + reason(m.headers());
        String fingerprint = fingerprint(m.orderingKey(), original, m.payload());
        if (movedMessages.contains(fingerprint)) {
            again++;
            line("left", label, "the same message as one this run moved: dead-lettered again, or a duplicate;"
                    + " left in place");
            return true;
        }
        if (options.dryRun()) {
            moved++;
            movedMessages.add(fingerprint);
            line("would move", label, why);
            return true;
        }
        // The broker's own ordering key is the message's key (Kafka record key, JMS group); an AMQP routing key
        // names the route into the dead-letter queue, and a key published with the message is among its headers.
        OutboundMessage copy = new OutboundMessage(null, m.orderingKey(), original, m.payload());
        try {
            broker.publish(target.source(), copy);
        } catch (BrokerException e) {
            failed++;
            line("failed", label, "not moved, the dead letter stays: " + oneLine(e.getMessage()));
            if (e.retriable()) {
                stopped = "stopped at the first failure the broker may recover from; run it again later";
                incomplete = true;
                return false;
            }
            return true;
        }
        try {
            d.ack();
        } catch (BrokerException e) {
            failed++;
            line("failed", label, "copied to '" + target.source() + "', but the dead letter could not be removed ("
                    + oneLine(e.getMessage()) + "); a later run copies it again, which the pipeline recognises as a"
                    + " duplicate once it processed the first copy");
            return true;
        }
        moved++;
        movedMessages.add(fingerprint);
        line("moved", label, why);
        return true;
    }

    /** The headers the message had before it was dead-lettered. */
    static Map<String, String> originalHeaders(Map<String, String> headers) {
        Map<String, String> original = new LinkedHashMap<>();
        for (Map.Entry<String, String> h : headers.entrySet()) {
            if (!DEAD_LETTER_HEADERS.contains(h.getKey()) && !BROKER_HEADERS.contains(h.getKey())) {
                original.put(h.getKey(), h.getValue());
            }
        }
        return original;
    }

    /** The message as its pipeline received it: its source, its headers, its broker ID (where the origin says). */
    private InboundMessage asBeforeDeadLettering(InboundMessage m, Map<String, String> original) {
        return new InboundMessage(target.source(), null, m.orderingKey(), original, m.payload(),
                m.headers().get(DeadLetterReason.ORIGIN_MESSAGE_ID), false, 0, m.orderingKey());
    }

    /** The first value {@code chain} finds in {@code message}, or {@code null} (also when it cannot read it). */
    private static String extract(Function<InboundMessage, String> chain, InboundMessage message) {
        try {
            String value = chain.apply(message);
            return value == null || value.isEmpty() ? null : value;
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * A sequence number as the runtime's guard reads it: plain decimal digits (blanks around them ignored) from 1 to
     * {@link Long#MAX_VALUE}; -1 otherwise.
     */
    static long sequenceNumber(String text) {
        String t = text.strip();
        if (t.isEmpty() || t.length() > 19 || !t.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return -1;
        }
        try {
            long n = Long.parseLong(t);
            return n < 1 ? -1 : n;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private String key(InboundMessage before) {
        try {
            String key = keys.apply(before);
            return key == null || key.isEmpty() ? null : key;
        } catch (RuntimeException e) {
            return null;
        }
    }

    private boolean matches(String key, InboundMessage m, Map<String, String> original) {
        Set<String> ids = options.ids();
        return key != null && ids.contains(key)
                || contains(ids, original.get(MESSAGE_ID_HEADER))
                || contains(ids, m.headers().get(DeadLetterReason.ORIGIN_MESSAGE_ID))
                || contains(ids, m.brokerMessageId());
    }

    private static boolean contains(Set<String> ids, String id) {
        return id != null && ids.contains(id);
    }

    private static String label(String key, InboundMessage m, Map<String, String> original) {
        if (key != null) {
            return key;
        }
        if (original.get(MESSAGE_ID_HEADER) != null) {
            return original.get(MESSAGE_ID_HEADER);
        }
        return m.brokerMessageId() != null ? m.brokerMessageId() : "(no ID)";
    }

    /** Why it was dead-lettered, from its headers: {@code handler-failed, 3 attempts: boom}. */
    private static String reason(Map<String, String> headers) {
        String cause = headers.get(DeadLetterReason.HEADER_CAUSE);
        if (cause == null) {
            return "no " + DeadLetterReason.HEADER_CAUSE + " header: not dead-lettered by idem";
        }
        StringBuilder s = new StringBuilder(cause);
        String attempts = headers.get(DeadLetterReason.HEADER_ATTEMPTS);
        if (attempts != null) {
            s.append(", ").append(attempts).append(attempts.equals("1") ? " attempt" : " attempts");
        }
        String detail = headers.get(DeadLetterReason.HEADER_DETAIL);
        if (detail != null && !detail.isBlank()) {
            String d = oneLine(detail);
            s.append(": ").append(d.length() > 120 ? d.substring(0, 119) + "…" : d);
        }
        return s.toString();
    }

    private static String oneLine(String text) {
        return text == null ? "" : text.strip().replaceAll("\\s*\\R\\s*", " ");
    }

    /** Identifies a message by what a copy keeps: key, headers, payload. */
    static String fingerprint(String key, Map<String, String> headers, byte[] payload) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            update(sha, key == null ? "\u0000" : key);
            for (Map.Entry<String, String> h : new TreeMap<>(headers).entrySet()) {
                update(sha, h.getKey());
                update(sha, h.getValue());
            }
            sha.update(payload);
            return HexFormat.of().formatHex(sha.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("Every JDK has SHA-256", e);
        }
    }

    private static void update(MessageDigest sha, String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        sha.update((byte) (bytes.length >>> 24));
        sha.update((byte) (bytes.length >>> 16));
        sha.update((byte) (bytes.length >>> 8));
        sha.update((byte) bytes.length);
        sha.update(bytes);
    }

    /**
     * One dead letter's line. Its ID and the reason come from the message, so they are escaped as {@code store list}
     * escapes IDs: a control character cannot repaint the terminal, nor a line break forge another line.
     */
    private void line(String what, String label, String detail) {
        out.printf("  %-10s %s  (%s)%n", what, StoreCommand.escape(label), StoreCommand.escape(detail));
        out.flush();
    }

    private void summary(int skipped) {
        StringBuilder s = new StringBuilder();
        if (options.dryRun()) {
            s.append("Dry run: ").append(moved).append(moved == 1 ? " dead letter" : " dead letters")
                    .append(" would move from '").append(target.deadLetters()).append("' to '")
                    .append(target.source()).append("'; nothing was moved");
        } else {
            s.append("Moved ").append(moved).append(moved == 1 ? " dead letter" : " dead letters").append(" from '")
                    .append(target.deadLetters()).append("' to '").append(target.source()).append("'");
        }
        s.append(", ").append(skipped).append(" skipped");
        if (skipped > 0) {
            StringBuilder why = new StringBuilder();
            part(why, otherPipeline, "of other pipelines");
            part(why, notMatching, "not matching --id");
            part(why, otherCause, "not matching --cause");
            part(why, notSelected, "not selected");
            part(why, otherAggregate, "of other aggregates");
            part(why, withoutNumber, "without a sequence number");
            part(why, notMoved, "of the aggregate not moved");
            part(why, again, "moved already in this run");
            s.append(" (").append(why).append(")");
        }
        s.append(", ").append(failed).append(" failed");
        if (stopped != null) {
            s.append("; ").append(stopped);
        }
        out.println(s.append('.'));
        if (options.dryRun() && !drained && moved + skipped >= DRY_RUN_NOTE) {
            out.println("A dry run lists only what the broker hands over while nothing is acknowledged (at most "
                    + WINDOW + ", fewer on ActiveMQ); more may be waiting.");
        } else if (options.aggregate() != null && !drained && moved + skipped >= DRY_RUN_NOTE) {
            out.println("--aggregate reads only what the broker hands over while nothing is acknowledged (at most "
                    + WINDOW + ", fewer on ActiveMQ); more dead letters of the aggregate may be waiting behind them.");
        }
        out.flush();
    }

    private static void part(StringBuilder why, int count, String what) {
        if (count > 0) {
            if (why.length() > 0) {
                why.append(", ");
            }
            why.append(count).append(' ').append(what);
        }
    }

    private static Duration max(Duration a, Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
    }
}
