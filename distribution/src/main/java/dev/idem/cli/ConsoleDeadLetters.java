package dev.idem.cli;

import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrowsedMessage;
import dev.idem.spi.DeadLetterBrowser;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.InboundMessage;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * The console's dead-letter view and its replay. The view reads a pipeline's dead-letter destination through the
 * adapter's {@link DeadLetterBrowser}, which takes nothing from it, as {@code idem dlq replay}'s reader would see it,
 * and groups what it read by cause (with the exception class for a handler's failure). A replay goes through
 * {@link DlqReplay#replay}, the code of {@code idem dlq replay}, with a selection: some messages (named by their
 * {@link #id}) or one group.
 *
 * <p>What reaches the browser: headers (the values of those whose names look like secrets masked), the reason, the
 * attempts, and the first {@value #PREVIEW_BYTES} bytes of the payload, escaped ({@link #escapePayload}); the whole
 * payload only with {@code runtime.console.show-payloads}. The broker adapter is opened at the first use, from the
 * configuration as {@code idem dlq replay} opens it, and closed with the console. One replay runs at a time.
 * Thread-safe.
 */
final class ConsoleDeadLetters implements AutoCloseable {

    /** How many dead letters one view reads from the head of the destination. */
    static final int PAGE = 200;
    /** How much of a payload the view shows without {@code show-payloads}. */
    static final int PREVIEW_BYTES = 256;
    /** What a masked header value reads. */
    static final String MASKED = "***";

    private static final Pattern SECRET_NAME = Pattern.compile(
            ".*(authorization|password|passwd|secret|token|cookie|credential|api[-_]?key|signature).*");
    private static final Pattern CLASS_NAME = Pattern.compile("[\\p{L}_$][\\p{L}\\p{N}_$]*(\\.[\\p{L}_$][\\p{L}\\p{N}_$]*)*");
    /** The causes whose detail starts with the failure's class ({@code Throwable.toString()}). */
    private static final Set<String> FAILURES = Set.of("handler-failed", "non-retryable");

    private final PluginRegistry registry;
    private final IdemConfig config;
    private final Supplier<BrokerAdapter> opener;
    private final boolean showPayloads;
    private final ReentrantLock replaying = new ReentrantLock();
    /** Opened at the first use; guarded by {@code this}. */
    private BrokerAdapter broker;
    private boolean closed;

    /**
     * @param opener opens an adapter of the configured broker, owned (and closed) by this object
     * @param showPayloads whether a view may hold whole payloads ({@code runtime.console.show-payloads})
     */
    ConsoleDeadLetters(PluginRegistry registry, IdemConfig config, Supplier<BrokerAdapter> opener,
            boolean showPayloads) {
        this.registry = registry;
        this.config = config;
        this.opener = opener;
        this.showPayloads = showPayloads;
    }

    /**
     * {@code GET /console/api/dead-letters?pipeline=P[&full=true]}: the first {@value #PAGE} dead letters of the
     * pipeline, grouped by cause, largest group first.
     *
     * @param full whether to send whole payloads; refused unless {@code show-payloads} is on
     */
    Map<String, Object> list(String pipeline, boolean full) {
        if (full && !showPayloads) {
            throw new ConsoleApi.Refused(403, "Whole payloads are not sent to the browser: they may hold personal"
                    + " data. Set runtime.console.show-payloads: true to allow it");
        }
        PipelineConfig p = pipeline(pipeline);
        BrokerAdapter adapter = broker();
        if (!(adapter instanceof DeadLetterBrowser browser)) {
            throw new ConsoleApi.Refused(501, "The broker '" + config.broker().type() + "' cannot show a destination"
                    + " without consuming it (its adapter is no DeadLetterBrowser); 'idem dlq replay --dry-run'"
                    + " lists the dead letters");
        }
        String destination = DlqReplay.deadLetters(config, p, adapter);
        List<BrowsedMessage> page = browser.browse(destination, DlqReplay.READER_PREFIX + p.name(), PAGE);
        Function<InboundMessage, String> keys = DlqReplay.keys(registry, p.idExtractors());
        Map<String, Map<String, Object>> groups = new LinkedHashMap<>();
        int otherPipelines = 0;
        for (BrowsedMessage b : page) {
            InboundMessage m = b.message();
            String from = m.headers().get(DeadLetterReason.HEADER_PIPELINE);
            if (from != null && !from.equals(p.name())) {
                otherPipelines++;
                continue;
            }
            String cause = cause(m);
            String exception = exception(m);
            Map<String, Object> group = groups.computeIfAbsent(cause + "\u0000" + exception, k -> {
                Map<String, Object> g = new LinkedHashMap<>();
                g.put("cause", cause);
                g.put("exception", exception);
                g.put("count", 0);
                g.put("messages", new ArrayList<>());
                return g;
            });
            group.put("count", (Integer) group.get("count") + 1);
            @SuppressWarnings("unchecked")
            List<Object> messages = (List<Object>) group.get("messages");
            messages.add(describe(b, p, keys, full));
        }
        List<Map<String, Object>> sorted = new ArrayList<>(groups.values());
        sorted.sort((a, b) -> Integer.compare((Integer) b.get("count"), (Integer) a.get("count")));
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("pipeline", p.name());
        answer.put("destination", destination);
        answer.put("read", page.size());
        answer.put("page", PAGE);
        answer.put("more", page.size() >= PAGE);
        answer.put("otherPipelines", otherPipelines);
        answer.put("showPayloads", showPayloads);
        answer.put("groups", sorted);
        return answer;
    }

    /**
     * {@code POST /console/api/dead-letters/replay}: moves the selected dead letters back to the pipeline's source
     * through {@link DlqReplay#replay}, as {@code idem dlq replay} moves them.
     *
     * @param ids the {@link #id}s of the dead letters to move; or {@code null} to move a group
     * @param cause with {@code ids} {@code null}: the group's cause
     * @param exception with {@code cause}: the group's exception class, or {@code null} for a group without one
     * @return what the replay did, with its lines as {@code idem dlq replay} prints them
     */
    Map<String, Object> replay(String pipeline, Collection<String> ids, String cause, String exception) {
        PipelineConfig p = pipeline(pipeline);
        Predicate<InboundMessage> selected;
        if (ids != null) {
            if (ids.isEmpty()) {
                throw new ConsoleApi.Refused(400, "Select at least one dead letter: \"ids\": [ID, ...]");
            }
            Set<String> wanted = Set.copyOf(ids);
            selected = m -> wanted.contains(id(m));
        } else if (cause != null && !cause.isEmpty()) {
            selected = m -> cause.equals(cause(m)) && Objects.equals(exception, exception(m));
        } else {
            throw new ConsoleApi.Refused(400, "Say what to replay: \"ids\": [ID, ...], or a group: \"cause\": CAUSE"
                    + " (with \"exception\": CLASS for a handler's failure)");
        }
        if (!replaying.tryLock()) {
            throw new ConsoleApi.Refused(409, "A replay is running; try again once it is done");
        }
        try {
            StringWriter text = new StringWriter();
            DlqReplay.Options options = new DlqReplay.Options(null, Set.of(), false, DlqReplay.DEFAULT_IDLE, null,
                    null, selected);
            DlqReplay.Report report;
            try (PrintWriter out = new PrintWriter(text)) {
                report = DlqReplay.replay(registry, config, p, broker(), options, out);
            } catch (Main.UsageError | Main.CommandFailed e) {
                throw new ConsoleApi.Refused(409, e.getMessage());
            }
            Map<String, Object> answer = new LinkedHashMap<>();
            answer.put("pipeline", p.name());
            answer.put("ok", report.ok());
            answer.put("moved", report.moved());
            answer.put("skipped", report.skipped());
            answer.put("failed", report.failed());
            answer.put("incomplete", report.incomplete());
            answer.put("lines", text.toString().lines().toList());
            return answer;
        } finally {
            replaying.unlock();
        }
    }

    /**
     * How the console names a dead letter for a replay: a digest of what a replayed copy keeps (key, headers
     * without the dead-letter ones, payload), which a browse and the replay's consumer compute alike on every broker,
     * where a broker's position is not handed to a consumer.
     */
    static String id(InboundMessage m) {
        return DlqReplay.fingerprint(m.orderingKey(), DlqReplay.originalHeaders(m.headers()), m.payload());
    }

    /** The dead letter's cause header, or {@code unknown} for a message idem did not dead-letter. */
    static String cause(InboundMessage m) {
        String cause = m.headers().get(DeadLetterReason.HEADER_CAUSE);
        return cause == null || cause.isBlank() ? "unknown" : cause;
    }

    /** The failure's class a handler's failure names first in its detail, or {@code null}. */
    static String exception(InboundMessage m) {
        if (!FAILURES.contains(cause(m))) {
            return null;
        }
        String detail = m.headers().get(DeadLetterReason.HEADER_DETAIL);
        if (detail == null) {
            return null;
        }
        int colon = detail.indexOf(':');
        String first = (colon < 0 ? detail : detail.substring(0, colon)).strip();
        return first.length() <= 200 && CLASS_NAME.matcher(first).matches() ? first : null;
    }

    private Map<String, Object> describe(BrowsedMessage b, PipelineConfig p, Function<InboundMessage, String> keys,
            boolean full) {
        InboundMessage m = b.message();
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("id", id(m));
        d.put("position", StoreCommand.escape(b.position()));
        String key = key(keys, p, m);
        d.put("key", key == null ? null : StoreCommand.escape(key));
        String messageId = m.headers().get(DlqReplay.MESSAGE_ID_HEADER);
        d.put("messageId", messageId == null ? null : StoreCommand.escape(messageId));
        d.put("attempts", attempts(m));
        String detail = m.headers().get(DeadLetterReason.HEADER_DETAIL);
        d.put("detail", detail == null ? "" : StoreCommand.escape(detail));
        d.put("headers", headers(m.headers()));
        d.put("payloadBytes", m.payload().length);
        int shown = full ? m.payload().length : Math.min(PREVIEW_BYTES, m.payload().length);
        d.put("payload", escapePayload(m.payload(), shown));
        d.put("truncated", shown < m.payload().length);
        return d;
    }

    private static String key(Function<InboundMessage, String> keys, PipelineConfig p, InboundMessage m) {
        InboundMessage before = new InboundMessage(p.source(), null, m.orderingKey(),
                DlqReplay.originalHeaders(m.headers()), m.payload(),
                m.headers().get(DeadLetterReason.ORIGIN_MESSAGE_ID), false, 0, m.orderingKey());
        try {
            String key = keys.apply(before);
            return key == null || key.isEmpty() ? null : key;
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static Integer attempts(InboundMessage m) {
        String attempts = m.headers().get(DeadLetterReason.HEADER_ATTEMPTS);
        try {
            return attempts == null ? null : Integer.valueOf(attempts.strip());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** The headers, escaped, sorted by name; a value whose name looks like a secret's is {@value #MASKED}. */
    static Map<String, String> headers(Map<String, String> headers) {
        Map<String, String> out = new TreeMap<>();
        for (Map.Entry<String, String> h : headers.entrySet()) {
            boolean secret = SECRET_NAME.matcher(h.getKey().toLowerCase(Locale.ROOT)).matches();
            out.put(StoreCommand.escape(h.getKey()), secret ? MASKED : StoreCommand.escape(h.getValue()));
        }
        return out;
    }

    /**
     * The first {@code length} bytes of a payload as text: UTF-8 as it is, but control characters and backslashes
     * escaped as {@link StoreCommand#escape} does, and each byte that is not UTF-8 (also a character cut at the end)
     * as {@code \xNN}.
     */
    static String escapePayload(byte[] payload, int length) {
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(payload, 0, Math.min(length, payload.length));
        CharBuffer chars = CharBuffer.allocate(Math.max(16, in.remaining()));
        StringBuilder out = new StringBuilder();
        while (true) {
            CoderResult r = decoder.decode(in, chars, true);
            chars.flip();
            out.append(StoreCommand.escape(chars.toString()));
            chars.clear();
            if (r.isError()) {
                for (int i = 0; i < r.length(); i++) {
                    out.append(String.format("\\x%02x", in.get() & 0xff));
                }
            } else if (r.isUnderflow()) {
                return out.toString();
            }
        }
    }

    private PipelineConfig pipeline(String pipeline) {
        if (pipeline == null || pipeline.isEmpty()) {
            throw new ConsoleApi.Refused(400, "Say which pipeline: pipeline=NAME; configured: "
                    + config.pipelines().keySet());
        }
        PipelineConfig p = config.pipelines().get(pipeline);
        if (p == null) {
            throw new ConsoleApi.Refused(404, "No pipeline '" + pipeline + "'; configured: "
                    + config.pipelines().keySet());
        }
        return p;
    }

    private synchronized BrokerAdapter broker() {
        if (closed) {
            throw new ConsoleApi.Refused(503, "The console is closing");
        }
        if (broker == null) {
            broker = opener.get();
        }
        return broker;
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (broker != null) {
            broker.close();
            broker = null;
        }
    }
}
