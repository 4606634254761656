package dev.idem.cli;

import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.OutboundMessage;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code idem publish}: sends messages to the configured broker through its adapter, each confirmed by
 * the broker before it counts. Every message carries a {@code message-id} header (the default ID
 * extraction reads it) and the same broker message ID where the broker lets the sender set one.
 */
@Command(name = "publish", mixinStandardHelpOptions = true,
        description = {"Sends messages to the configured broker, each confirmed before it counts.",
                "Templates (--id, --key, --payload, file lines) may use {n}, the message's number; --key,"
                        + " --payload and file lines also {id}, the message's ID."})
final class PublishCommand implements Callable<Integer> {

    static final int MAX_THREADS = 256;

    static final String DEFAULT_PAYLOAD = "{\"orderId\":\"order-{n}\",\"event\":\"paid\",\"amount\":\"10.00\"}";

    @Mixin
    IdemCommand.Common common;

    @Spec
    CommandSpec spec;

    @Option(names = "--to", paramLabel = "DESTINATION",
            description = "The topic or queue (default: the source of the only pipeline).")
    String destination;

    @Option(names = "--id", paramLabel = "ID", defaultValue = "msg-",
            description = "The message ID, a template: {n} in it is the message's number (order-{n}-eu); without {n},"
                    + " the number is appended, as to a prefix, unless one message is sent under an ID that does not"
                    + " end with '-' (default: ${DEFAULT-VALUE}).")
    String id;

    @Option(names = "--key", paramLabel = "KEY", description = "The message key (Kafka key, AMQP routing key).")
    String key;

    @Option(names = "--header", paramLabel = "NAME=VALUE", description = "A header; repeatable.")
    Map<String, String> headers = new LinkedHashMap<>();

    @Option(names = "--count", paramLabel = "N", defaultValue = "1", description = "How many messages (default: 1).")
    int count;

    @Option(names = "--duplicates", paramLabel = "PCT", defaultValue = "0",
            description = "Percent of the messages that repeat another one's ID and payload (default: 0).")
    int duplicates;

    @Option(names = "--payload", paramLabel = "TEXT", description = "The payload template (default: an order-paid event).")
    String payload;

    @Option(names = "--file", paramLabel = "FILE",
            description = "Payload templates, one per line, used in turn: a UTF-8 text file of at most " + MAX_FILE_MIB
                    + " MiB.")
    Path file;

    @Option(names = "--threads", paramLabel = "N", defaultValue = "1",
            description = "Publishing threads, from 1 to " + MAX_THREADS + "; order is kept only with 1 (default: 1).")
    int threads;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "42", description = "Seed for placing the duplicates.")
    long seed;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (threads < 1 || threads > MAX_THREADS) {
            throw new Main.UsageError("--threads must be from 1 to " + MAX_THREADS + ": " + threads);
        }
        List<String> templates = templates();
        MessagePlan plan = MessagePlan.checked(() -> MessagePlan.plan(count, duplicates, id, templates, key, seed));
        Setup setup = common.open();
        PluginRegistry registry = setup.plugins();
        IdemConfig config = setup.config(registry);
        String to = destination != null ? destination : onlySource(config);
        try (BrokerAdapter broker = registry.createBroker(config.broker().type(), config.broker().config())) {
            long started = System.nanoTime();
            publish(broker, to, plan, new Progress(spec.commandLine().getErr(), plan.size()));
            double seconds = (System.nanoTime() - started) / 1e9;
            out.printf("Published %,d message(s) to '%s' (%,d unique IDs, %,d repeats) in %.1fs (%,.0f msg/s)%n",
                    plan.size(), to, plan.unique(), plan.repeats(), seconds, plan.size() / Math.max(seconds, 1e-9));
            out.flush();
        }
        return Main.OK;
    }

    static String onlySource(IdemConfig config) {
        List<String> sources = config.pipelines().values().stream().map(PipelineConfig::source).distinct().toList();
        if (sources.size() != 1) {
            throw new Main.UsageError("Say where to publish with --to DESTINATION; the configured pipelines consume "
                    + sources);
        }
        return sources.get(0);
    }

    private List<String> templates() {
        if (file != null && payload != null) {
            throw new Main.UsageError("Give --payload or --file, not both");
        }
        if (file != null) {
            List<String> lines = readLines(file).stream().filter(l -> !l.isBlank()).toList();
            if (lines.isEmpty()) {
                throw new Main.UsageError("--file " + file + " holds no non-blank line to send");
            }
            return lines;
        }
        return List.of(payload != null ? payload : DEFAULT_PAYLOAD);
    }

    /**
     * The most bytes {@code --file} may hold. The file is read into memory whole, each line a payload; a larger one
     * (or a device such as {@code /dev/zero}, which never ends) would exhaust the heap before anything is sent.
     * 16 MiB holds thousands of payloads, and even one payload of that size is past what Kafka takes in a message by
     * default (1 MiB).
     */
    static final int MAX_FILE_MIB = 16;
    static final int MAX_FILE_BYTES = MAX_FILE_MIB * 1024 * 1024;

    /** The lines of a UTF-8 file; whatever keeps it from being read is a usage error that says what it is. */
    static List<String> readLines(Path file) {
        if (Files.isDirectory(file)) {
            throw new Main.UsageError("--file " + file + " is a folder; name a UTF-8 text file of payload templates,"
                    + " one per line");
        }
        if (Files.exists(file) && !Files.isRegularFile(file)) {
            throw new Main.UsageError("--file " + file + " is not a regular file (a pipe, a socket or a device);"
                    + " name a UTF-8 text file of payload templates, one per line");
        }
        byte[] bytes;
        try (InputStream in = Files.newInputStream(file)) {
            // Read no more than the limit: a file that grows, or one that says it is empty (/proc), is bounded too.
            bytes = in.readNBytes(MAX_FILE_BYTES + 1);
        } catch (NoSuchFileException e) {
            throw new Main.UsageError("--file " + file + " does not exist");
        } catch (AccessDeniedException e) {
            throw new Main.UsageError("--file " + file + " cannot be read: permission denied");
        } catch (IOException e) {
            throw new Main.UsageError("--file " + file + " cannot be read: " + e.getMessage());
        }
        if (bytes.length > MAX_FILE_BYTES) {
            throw new Main.UsageError("--file " + file + " is larger than " + MAX_FILE_MIB + " MiB, the most publish"
                    + " reads: the file is held in memory whole, one payload per line. Split it into smaller files");
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString()
                    .lines().toList();
        } catch (CharacterCodingException e) {
            throw new Main.UsageError("--file " + file + " is not UTF-8 text; save it as UTF-8 (payload templates,"
                    + " one per line)");
        }
    }

    private void publish(BrokerAdapter broker, String to, MessagePlan plan, Progress progress)
            throws InterruptedException, ExecutionException {
        Iterator<MessagePlan.Planned> next = plan.iterator();
        Callable<Void> worker = () -> {
            while (true) {
                MessagePlan.Planned m;
                synchronized (next) {
                    if (!next.hasNext()) {
                        return null;
                    }
                    m = next.next();
                }
                broker.publish(to, new OutboundMessage(m.id(), m.key(), MessagePlan.headers(headers, m), m.payload()));
                progress.sent();
            }
        };
        if (threads == 1) {
            try {
                worker.call();
            } catch (RuntimeException | InterruptedException | ExecutionException e) {
                throw e;
            } catch (Exception e) {
                throw new ExecutionException(e);
            } finally {
                progress.done();
            }
            return;
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Void>> running = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                running.add(pool.submit(worker));
            }
            for (Future<Void> f : running) {
                f.get();
            }
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            throw e;
        } finally {
            pool.shutdownNow();
            progress.done();
        }
    }

    /** A progress bar on a terminal for 1,000 messages or more; silent otherwise. */
    static final class Progress {
        private final PrintWriter err;
        private final int total;
        private final boolean shown;
        private final AtomicInteger sent = new AtomicInteger();
        private final long started = System.nanoTime();
        private volatile int lastPercent = -1;

        Progress(PrintWriter err, int total) {
            this.err = err;
            this.total = total;
            this.shown = total >= 1000 && System.console() != null;
        }

        void sent() {
            int n = sent.incrementAndGet();
            if (!shown) {
                return;
            }
            int percent = (int) (100L * n / total);
            if (percent != lastPercent) {
                lastPercent = percent;
                double rate = n / Math.max((System.nanoTime() - started) / 1e9, 1e-9);
                synchronized (err) {
                    err.printf("\r[%-40s] %3d%% %,d/%,d %,.0f msg/s", "#".repeat(percent * 40 / 100), percent, n, total,
                            rate);
                    err.flush();
                }
            }
        }

        void done() {
            if (shown) {
                err.println();
                err.flush();
            }
        }
    }
}
