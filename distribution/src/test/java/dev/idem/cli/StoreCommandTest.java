package dev.idem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.cli.legacystore.LegacyStoreProvider;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.KeyDigest;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code idem store list} and {@code idem store purge}, in process, on the shipped kind of store (JDBC on an H2
 * file of the test's own), filled through the same plugin the command opens; and how they fail: a name the
 * configuration does not declare, an option out of range, a store that cannot list or purge.
 */
class StoreCommandTest {

    /** A handler with nothing to do, for configurations that must name one. */
    public static final class NoopHandler implements MessageHandler {
        @Override
        public void handle(Message message, HandlerContext context) {
        }
    }

    private static final Duration RETENTION = Duration.ofDays(30);

    @TempDir
    Path home;

    private String previousHome;
    private String config;

    @BeforeEach
    void home() throws IOException {
        previousHome = System.getProperty("idem.home");
        System.setProperty("idem.home", home.toString());
        config = config("{type: jdbc, jdbc: {url: \"jdbc:h2:file:" + home.resolve("data/store") + "\"}}");
    }

    @AfterEach
    void restoreHome() {
        if (previousHome == null) {
            System.clearProperty("idem.home");
        } else {
            System.setProperty("idem.home", previousHome);
        }
    }

    // ---------------------------------------------------------------- list

    @Test
    void listPrintsEachKeyOfThePipelineOnALineAndTheCountOnStderr() {
        fill(store -> {
            complete(store, "orders", "order-1", "sha256:aa", RETENTION);
            claim(store, "orders", "order-2", null);
            complete(store, "orders", "line\nbreak\\", null, RETENTION);
            complete(store, "refunds", "order-9", null, RETENTION);
        });

        Result result = idem("store", "list", "--config", config, "--pipeline", "orders");

        assertThat(result.exitCode()).as(result.toString()).isZero();
        List<String> lines = result.out().lines().toList();
        assertThat(lines).hasSize(3);
        assertThat(lines).anySatisfy(line -> assertThat(line).startsWith("order-1\tcompleted\t1\t20").endsWith(
                "\tsha256:aa"));
        assertThat(lines).anySatisfy(line -> assertThat(line).startsWith("order-2\tclaimed\t1\t20").endsWith("\t-"));
        assertThat(lines).as("one line per key, escapes for control characters and backslashes")
                .anySatisfy(line -> assertThat(line).startsWith("line\\nbreak\\\\\tcompleted\t"));
        assertThat(result.err()).isEqualTo("Listed 3 keys of pipeline 'orders'.\n");
    }

    @Test
    void listFiltersByStateAndIdPrefixAndStopsAtTheLimit() {
        fill(store -> {
            for (int i = 0; i < 5; i++) {
                complete(store, "orders", "a-" + i, null, RETENTION);
            }
            claim(store, "orders", "a-claimed", null);
            complete(store, "orders", "b-0", null, RETENTION);
        });

        Result firstThree = idem("store", "list", "--config", config, "--pipeline", "orders", "--state", "completed",
                "--prefix", "a-", "--limit", "3");
        Result claimed = idem("store", "list", "--config", config, "--pipeline", "orders", "--state", "CLAIMED");
        Result none = idem("store", "list", "--config", config, "--pipeline", "orders", "--prefix", "a%");

        assertThat(firstThree.out().lines()).hasSize(3).allSatisfy(line -> assertThat(line).startsWith("a-")
                .contains("\tcompleted\t"));
        assertThat(firstThree.err()).isEqualTo("Listed the first 3 completed keys of pipeline 'orders' with IDs"
                + " starting 'a-'; there may be more: raise --limit, or narrow with --prefix or --state.\n");
        assertThat(claimed.out().lines()).singleElement().asString().startsWith("a-claimed\tclaimed\t");
        assertThat(none.out()).isEmpty();
        assertThat(none.err()).isEqualTo("Listed 0 keys of pipeline 'orders' with IDs starting 'a%'.\n");
    }

    @Test
    void listPagesThroughTheStoreUpToTheLimit() {
        fill(store -> {
            for (int i = 0; i < StoreCommand.LIST_BATCH + 5; i++) {
                complete(store, "orders", String.format("order-%05d", i), null, RETENTION);
            }
        });

        Result all = idem("store", "list", "--config", config, "--pipeline", "orders", "--limit", "5000");

        assertThat(all.out().lines()).hasSize(StoreCommand.LIST_BATCH + 5).doesNotHaveDuplicates();
        assertThat(all.err()).isEqualTo("Listed 1,005 keys of pipeline 'orders'.\n");
    }

    // ---------------------------------------------------------------- purge

    @Test
    void purgeDeletesTheCompletedKeysOlderThanTheAgeGivenAndPrintsTheCount() {
        // Retention 30d: a key completed with 20d of retention left was completed 10 days ago.
        fill(store -> {
            for (int i = 0; i < 3; i++) {
                complete(store, "orders", "old-" + i, null, Duration.ofDays(20));
            }
            complete(store, "orders", "new-0", null, RETENTION);
            claim(store, "orders", "claimed", null);
            complete(store, "refunds", "old-9", null, Duration.ofDays(20));
        });

        Result purge = idem("store", "purge", "--config", config, "--pipeline", "orders", "--older-than", "5d",
                "--batch", "2");

        assertThat(purge.exitCode()).as(purge.toString()).isZero();
        assertThat(purge.out()).isEqualTo("Purged 3 completed keys of pipeline 'orders', completed more than 5d ago.\n");
        assertThat(purge.err()).as("no progress line off a terminal for a purge this short").isEmpty();
        assertThat(idem("store", "list", "--config", config, "--pipeline", "orders").out().lines())
                .extracting(line -> line.substring(0, line.indexOf('\t')))
                .containsExactlyInAnyOrder("new-0", "claimed");
        assertThat(idem("store", "get", "--config", config, "--pipeline", "refunds", "old-9").out())
                .as("another pipeline's key").startsWith("refunds/old-9: completed");
        assertThat(idem("store", "purge", "--config", config, "--pipeline", "orders", "--older-than", "5d").out())
                .isEqualTo("Purged 0 completed keys of pipeline 'orders', completed more than 5d ago.\n");
    }

    // ---------------------------------------------------------------- get

    @Test
    void getShowsAClaimsAttemptsStartsAndLeaseEndAndACompletedKeysRetentionEnd() {
        fill(store -> {
            long token = claim(store, "orders", "order-1", "sha256:aa");
            store.recordStart(new StoreKey("orders", "order-1"), token);
            store.recordStart(new StoreKey("orders", "order-1"), token);
            complete(store, "orders", "order-2", null, RETENTION);
        });

        Result claimed = idem("store", "get", "--config", config, "--pipeline", "orders", "order-1");
        Result completed = idem("store", "get", "--config", config, "--pipeline", "orders", "order-2");

        assertThat(claimed.exitCode()).as(claimed.toString()).isZero();
        assertThat(claimed.out()).startsWith("orders/order-1: claimed, attempts 1, starts 2, fingerprint sha256:aa,"
                + " lease until 20");
        assertThat(completed.out()).startsWith("orders/order-2: completed, attempts 1, remembered until 20");
    }

    // ---------------------------------------------------------------- get and delete under store.key-digest

    @Test
    void getAndDeleteApplyTheKeyDigestToTheIdTyped() throws IOException {
        config = config("{type: jdbc, key-digest: sha256-128, jdbc: {url: \"jdbc:h2:file:" + home.resolve("data/store")
                + "\"}}");
        String id = "order-ü-1";
        String digest = KeyDigest.SHA256_128.apply(id);
        fill(store -> complete(store, "orders", digest, null, RETENTION));

        Result get = idem("store", "get", "--config", config, "--pipeline", "orders", id);
        Result delete = idem("store", "delete", "--config", config, "--pipeline", "orders", id);
        Result gone = idem("store", "get", "--config", config, "--pipeline", "orders", id);

        assertThat(get.exitCode()).as(get.toString()).isZero();
        assertThat(get.out()).startsWith("orders/order-ü-1 (stored as " + digest + "): completed, attempts 1");
        assertThat(delete.out()).isEqualTo("orders/order-ü-1 (stored as " + digest + "): deleted\n");
        assertThat(gone.out()).startsWith("orders/order-ü-1 (stored as " + digest + "): absent");
    }

    @Test
    void purgeOlderThanTheRetentionSaysThereIsNothingToPurge() {
        Result purge = idem("store", "purge", "--config", config, "--pipeline", "orders", "--older-than", "30d");

        assertThat(purge.exitCode()).as(purge.toString()).isZero();
        assertThat(purge.out()).isEqualTo("Nothing to purge: pipeline 'orders' keeps completed keys for 30d"
                + " (pipelines.orders.retention), so none is older than 30d; the store forgets them by itself.\n");
    }

    // ---------------------------------------------------------------- errors

    @Test
    void aPipelineTheConfigurationDoesNotDeclareOrLeavesUnnamedIsAUsageErrorListingThePipelines() {
        idem("store", "list", "--config", config, "--pipeline", "nosuch")
                .isOneLineUsageError("No pipeline 'nosuch' in the configuration; configured: [orders, refunds]");
        idem("store", "purge", "--config", config, "--pipeline", "nosuch", "--older-than", "1d")
                .isOneLineUsageError("No pipeline 'nosuch' in the configuration; configured: [orders, refunds]");
        idem("store", "list", "--config", config)
                .isOneLineUsageError("Say which pipeline's keys with --pipeline NAME; configured: [orders, refunds]");
    }

    @Test
    void optionsOutOfRangeAreUsageErrors() {
        idem("store", "list", "--config", config, "--pipeline", "orders", "--limit", "0")
                .isOneLineUsageError("--limit must be at least 1: 0");
        idem("store", "list", "--config", config, "--pipeline", "orders", "--state", "done")
                .isOneLineUsageError("--state must be claimed or completed: done");
        idem("store", "purge", "--config", config, "--pipeline", "orders")
                .isOneLineUsageError("Missing required option: '--older-than=DURATION'");
        for (String age : List.of("soon", "0", "-5d")) {
            idem("store", "purge", "--config", config, "--pipeline", "orders", "--older-than", age)
                    .isOneLineUsageError("--older-than must be a positive duration such as 30d, 12h or PT90M: " + age);
        }
        idem("store", "purge", "--config", config, "--pipeline", "orders", "--older-than", "1d", "--batch", "0")
                .isOneLineUsageError("--batch must be from 1 to 100000: 0");
    }

    @Test
    void aStoreThatCannotListOrPurgeIsNamedWithWhatItLacks() throws Exception {
        installLegacyStorePlugin();

        String legacy = config("{type: legacy}");
        Result list = idem("store", "list", "--config", legacy, "--pipeline", "orders");
        Result purge = idem("store", "purge", "--config", legacy, "--pipeline", "orders", "--older-than", "1d");
        Result opaque = idem("store", "list", "--config", config("{type: opaque}"), "--pipeline", "orders");

        assertThat(list.exitCode()).as(list.toString()).isEqualTo(Main.FAILED);
        assertThat(list.err()).isEqualTo("The dedup store 'legacy' cannot list its keys: "
                + LegacyStoreProvider.class.getName() + "$LegacyStore cannot list its keys (it does not override"
                + " InspectableDedupStore.list)\n");
        assertThat(purge.exitCode()).as(purge.toString()).isEqualTo(Main.FAILED);
        assertThat(purge.err()).startsWith("The dedup store 'legacy' cannot purge its keys: ");
        assertThat(opaque.exitCode()).as(opaque.toString()).isEqualTo(Main.FAILED);
        assertThat(opaque.err()).startsWith("The dedup store 'opaque' offers no operator view");
    }

    @Test
    void idsAreEscapedSoThatEachKeyIsOneUnambiguousLine() {
        assertThat(StoreCommand.escape("plain-\u00e9-\uD83D\uDE00")).isEqualTo("plain-\u00e9-\uD83D\uDE00");
        assertThat(StoreCommand.escape("a\\b\nc\r\td\0e\u001b\u007f")).isEqualTo(
                "a\\\\b\\nc\\r\\td\\u0000e\\u001b\\u007f");
        assertThat(StoreCommand.escape("lone \uD800")).isEqualTo("lone \\ud800");
    }

    // ---------------------------------------------------------------- progress

    @Test
    void progressOffATerminalIsAPlainLineEveryTenSeconds() {
        StringWriter err = new StringWriter();
        AtomicLong clock = new AtomicLong();
        PurgeProgress progress = new PurgeProgress(new PrintWriter(err), false, clock::get, "Purging pipeline 'orders'");

        clock.set(Duration.ofSeconds(9).toNanos());
        progress.update(1_000, 1);
        clock.set(Duration.ofSeconds(10).toNanos());
        progress.update(2_000, 2);
        clock.set(Duration.ofSeconds(15).toNanos());
        progress.update(3_000, 3);
        progress.done();

        assertThat(err.toString()).isEqualTo("Purging pipeline 'orders': 2,000 keys deleted in 2 batches (200/s)\n");
    }

    @Test
    void progressOnATerminalIsOneLineRedrawnInPlaceAndErasedAtTheEnd() {
        StringWriter err = new StringWriter();
        AtomicLong clock = new AtomicLong();
        PurgeProgress progress = new PurgeProgress(new PrintWriter(err), true, clock::get, "Purging pipeline 'orders'");

        clock.set(Duration.ofMillis(50).toNanos());
        progress.update(10, 1);
        clock.set(Duration.ofMillis(500).toNanos());
        progress.update(1_000, 1);
        clock.set(Duration.ofSeconds(1).toNanos());
        progress.update(1_000, 2);
        progress.done();

        String first = "| Purging pipeline 'orders': 1,000 keys deleted in 1 batch (2,000/s)";
        String second = "/ Purging pipeline 'orders': 1,000 keys deleted in 2 batches (1,000/s)";
        assertThat(err.toString()).isEqualTo("\r" + first + "\r" + second + "\r" + " ".repeat(second.length()) + "\r");
    }

    // ---------------------------------------------------------------- helpers

    record Result(int exitCode, String out, String err) {
        /** One line on stderr, no stack trace, exit 2. */
        void isOneLineUsageError(String expected) {
            assertThat(exitCode).as(this.toString()).isEqualTo(Main.INVALID);
            assertThat(err.strip().lines()).as(err).hasSize(1);
            assertThat(err).contains(expected).doesNotContain("at dev.idem").doesNotContain("Unexpected failure");
        }
    }

    private Result idem(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine();
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        int exit = cli.execute(args);
        return new Result(exit, out.toString(), err.toString());
    }

    /** A configuration with two pipelines keeping completed keys for 30 days, and the store given. */
    private String config(String store) throws IOException {
        String yaml = """
                broker: {type: activemq, activemq: {url: "tcp://127.0.0.1:1"}}
                store: %s
                runtime: {http: {port: 0}}
                pipelines:
                  orders: {source: orders, handler: %s, retention: 30d}
                  refunds: {source: refunds, handler: %s, retention: 30d}
                """.formatted(store, NoopHandler.class.getName(), NoopHandler.class.getName());
        Path file = Files.createTempFile(home, "idem", ".yaml");
        Files.writeString(file, yaml);
        return file.toString();
    }

    @FunctionalInterface
    private interface Filling {
        void into(DedupStore store);
    }

    /** Writes keys into the configured store, opened as the command opens it, and closes it. */
    private void fill(Filling filling) {
        Setup setup = Setup.open(Home.detect(), Path.of(config));
        PluginRegistry registry = setup.plugins();
        IdemConfig idem = setup.config(registry);
        try (DedupStore store = registry.createStore(idem.store().type(), idem.store().config(),
                new StoreContext(System::nanoTime))) {
            filling.into(store);
        }
    }

    private static long claim(DedupStore store, String namespace, String id, String fingerprint) {
        ClaimResult result = store.claim(List.of(new ClaimRequest(new StoreKey(namespace, id), fingerprint,
                Duration.ofMinutes(5), Duration.ofMinutes(5)))).get(0);
        assertThat(result).as("claim of %s", id).isInstanceOf(ClaimResult.Acquired.class);
        return ((ClaimResult.Acquired) result).token();
    }

    private static void complete(DedupStore store, String namespace, String id, String fingerprint,
            Duration retention) {
        long token = claim(store, namespace, id, fingerprint);
        assertThat(store.complete(new StoreKey(namespace, id), token, retention)).isTrue();
    }

    /**
     * Packs the legacy store's package into {@code plugins/legacy/}, with its service file, so it is found only
     * there, as a third party's store would be.
     */
    private void installLegacyStorePlugin() throws IOException, URISyntaxException {
        Path classes = Path.of(LegacyStoreProvider.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path pkg = classes.resolve(LegacyStoreProvider.class.getPackageName().replace('.', '/'));
        Path folder = Files.createDirectories(home.resolve("plugins/legacy"));
        try (OutputStream file = Files.newOutputStream(folder.resolve("legacy-store.jar"));
                JarOutputStream jar = new JarOutputStream(file);
                Stream<Path> files = Files.walk(pkg)) {
            for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
                jar.putNextEntry(new JarEntry(classes.relativize(f).toString().replace('\\', '/')));
                Files.copy(f, jar);
                jar.closeEntry();
            }
            jar.putNextEntry(new JarEntry("META-INF/services/dev.idem.spi.DedupStoreProvider"));
            jar.write((LegacyStoreProvider.class.getName() + "\n" + LegacyStoreProvider.Opaque.class.getName() + "\n")
                    .getBytes(StandardCharsets.UTF_8));
            jar.closeEntry();
        }
    }
}
