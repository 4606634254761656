package dev.idem.examples.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.api.HandlerSettings;
import dev.idem.api.NonRetryableException;
import dev.idem.handlertest.TestMessage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OrderPaymentHandlerTest {

    @TempDir
    Path dir;

    private Path ledgerFile;
    private final List<OrderPaymentHandler> opened = new ArrayList<>();

    @BeforeEach
    void setUp() {
        ledgerFile = dir.resolve("ledger").resolve("order-payments.log");
    }

    @AfterEach
    void closeHandlers() throws IOException {
        for (OrderPaymentHandler handler : opened) {
            handler.close();
        }
    }

    private OrderPaymentHandler open() {
        OrderPaymentHandler handler = new OrderPaymentHandler(ledgerFile, false);
        opened.add(handler);
        return handler;
    }

    /** The ledger's lines; malformed UTF-8 (a torn line) reads as U+FFFD. */
    private List<String> lines() throws IOException {
        return new String(Files.readAllBytes(ledgerFile), StandardCharsets.UTF_8).lines().toList();
    }

    @Test
    void eachRunAppendsOneLineWithTheFiveFields() throws Exception {
        OrderPaymentHandler handler = open();

        handler.handle(Orders.paid("m-1", "o-17", "12.50"), Orders.context());

        assertThat(lines()).containsExactly("m-1\to-17\tpaid\t12.50\tapplied");
        assertThat(handler.ledger()).isEqualTo(ledgerFile);
    }

    @Test
    void aSecondPaymentOfAPaidOrderIsRecordedAndIgnored() throws Exception {
        OrderPaymentHandler handler = open();

        handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context());
        handler.handle(Orders.paid("m-2", "o-1", "5"), Orders.context());
        handler.handle(Orders.paid("m-3", "o-2", "7.10"), Orders.context());

        assertThat(lines()).containsExactly(
                "m-1\to-1\tpaid\t5\tapplied",
                "m-2\to-1\tpaid\t5\tignored-already-paid",
                "m-3\to-2\tpaid\t7.10\tapplied");
    }

    /** The honest window: the same message run again after a crash changes nothing, yet the run is visible. */
    @Test
    void aRerunOfOneMessageAfterARestartIsIgnoredByTheGuard() throws Exception {
        OrderPaymentHandler before = open();
        before.handle(Orders.paid("m-1", "o-1", "5"), Orders.context());
        before.close();

        OrderPaymentHandler after = open();
        after.handle(Orders.paid("m-1", "o-1", "5"), Orders.context());
        after.handle(Orders.paid("m-2", "o-2", "6"), Orders.context());

        assertThat(lines()).containsExactly(
                "m-1\to-1\tpaid\t5\tapplied",
                "m-1\to-1\tpaid\t5\tignored-already-paid",
                "m-2\to-2\tpaid\t6\tapplied");
    }

    @Test
    void aLineTornByACrashIsSkippedAndTheNextLineStartsOnItsOwn() throws Exception {
        Files.createDirectories(ledgerFile.getParent());
        // The crash cut the line inside the two bytes of "é".
        byte[] torn = "m-1\to-1\tpaid\t5\tapplied\nm-2\to-2\tpa\u00e9".getBytes(StandardCharsets.UTF_8);
        Files.write(ledgerFile, Arrays.copyOf(torn, torn.length - 1));

        OrderPaymentHandler handler = open();
        handler.handle(Orders.paid("m-2", "o-2", "6"), Orders.context());
        handler.handle(Orders.paid("m-3", "o-1", "5"), Orders.context());

        assertThat(lines()).containsExactly(
                "m-1\to-1\tpaid\t5\tapplied",
                "m-2\to-2\tpa\ufffd",
                "m-2\to-2\tpaid\t6\tapplied",
                "m-3\to-1\tpaid\t5\tignored-already-paid");
    }

    @Test
    void concurrentRunsWriteWholeLinesAndApplyEachOrderOnce() throws Exception {
        int threads = 16;
        int perThread = 250;
        int orders = 100;
        OrderPaymentHandler handler = open();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> runs = new ArrayList<>();
        try {
            for (int t = 0; t < threads; t++) {
                int thread = t;
                runs.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < perThread; i++) {
                        int n = thread * perThread + i;
                        handler.handle(Orders.paid("m-" + n, "o-" + (n % orders), "1.00"), Orders.context());
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> run : runs) {
                run.get();
            }
        } finally {
            pool.shutdownNow();
        }

        List<String[]> lines = lines().stream().map(l -> l.split("\t", -1)).toList();
        assertThat(lines).hasSize(threads * perThread).allSatisfy(fields -> {
            assertThat(fields).hasSize(5);
            assertThat(fields[0]).matches("m-[0-9]+");
            assertThat(fields[4]).isIn("applied", "ignored-already-paid");
        });
        Map<String, Long> runsPerMessage = lines.stream()
                .collect(Collectors.groupingBy(fields -> fields[0], Collectors.counting()));
        assertThat(runsPerMessage).hasSize(threads * perThread).allSatisfy((id, count) -> assertThat(count).isOne());
        Map<String, Long> appliedPerOrder = lines.stream().filter(fields -> fields[4].equals("applied"))
                .collect(Collectors.groupingBy(fields -> fields[1], Collectors.counting()));
        assertThat(appliedPerOrder).hasSize(orders).allSatisfy((order, count) -> assertThat(count).isOne());
    }

    @Test
    void aMalformedPayloadIsNonRetryableAndWritesNothing() throws Exception {
        OrderPaymentHandler handler = open();

        assertThatThrownBy(() -> handler.handle(TestMessage.of("m-1", "{\"orderId\":\"o-1\"}"), Orders.context()))
                .isInstanceOf(NonRetryableException.class)
                .hasMessageContaining("missing member \"event\"");

        assertThat(lines()).isEmpty();
    }

    @Test
    void anInterruptedRunWritesNothingAndTheHandlerKeepsWorking() throws Exception {
        OrderPaymentHandler handler = open();

        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(() -> handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context()))
                    .isInstanceOf(InterruptedException.class);
        } finally {
            Thread.interrupted();
        }
        handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context());

        assertThat(lines()).containsExactly("m-1\to-1\tpaid\t5\tapplied");
    }

    @Test
    void tabsLineBreaksAndBackslashesInAMessageIdAreEscaped() throws Exception {
        OrderPaymentHandler handler = open();

        handler.handle(Orders.paid("a\tb\nc\\d\re", "o-1", "5"), Orders.context());

        assertThat(lines()).containsExactly("a\\tb\\nc\\\\d\\re\to-1\tpaid\t5\tapplied");
    }

    @Test
    void withFsyncEveryLineIsStillWrittenOnce() throws Exception {
        try (OrderPaymentHandler handler = new OrderPaymentHandler(ledgerFile, true)) {
            handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context());
            handler.handle(Orders.paid("m-2", "o-1", "5"), Orders.context());
        }

        assertThat(lines()).hasSize(2);
    }

    @Test
    void aLedgerThatCannotBeOpenedNamesTheFile() throws Exception {
        Path directory = Files.createDirectories(dir.resolve("a-directory"));

        assertThatThrownBy(() -> new OrderPaymentHandler(directory, false))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining(directory.toAbsolutePath().toString())
                .hasMessageEndingWith("Pass a writable file");
    }

    @Test
    void initOpensTheLedgerItsSettingsName() throws Exception {
        OrderPaymentHandler handler = new OrderPaymentHandler();
        opened.add(handler);

        handler.init(HandlerSettings.of("orders", Map.of("ledger.file", ledgerFile.toString(), "ledger.fsync", "true")));
        handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context());

        assertThat(handler.ledger()).isEqualTo(ledgerFile);
        assertThat(lines()).containsExactly("m-1\to-1\tpaid\t5\tapplied");
    }

    @Test
    void aLedgerThatCannotBeOpenedFailsInitNamingTheFileAndTheSetting() throws Exception {
        Path directory = Files.createDirectories(dir.resolve("a-directory"));
        OrderPaymentHandler handler = new OrderPaymentHandler();

        assertThatThrownBy(() -> handler.init(HandlerSettings.of("orders", Map.of("ledger.file", directory.toString()))))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining(directory.toAbsolutePath().toString())
                .hasMessageEndingWith("Set pipelines.orders.handler-settings.ledger.file to a writable file");
        handler.close(); // The runtime closes a handler whose init failed: nothing to close, and no failure.
    }

    @Test
    void theLedgerIsTheSettingElseUnderTheInstallationElseUnderTheWorkingDirectory() {
        Properties properties = new Properties();
        Map<String, String> env = new HashMap<>();
        Map<String, String> values = new HashMap<>();
        Supplier<Path> resolve = () -> OrderPaymentHandler.ledgerPath(HandlerSettings.of("orders", values), env,
                properties);

        assertThat(resolve.get()).isEqualTo(Path.of("data/order-payments.log"));
        properties.setProperty("idem.home", "/opt/idem-property");
        assertThat(resolve.get()).isEqualTo(Path.of("/opt/idem-property/data/order-payments.log"));
        env.put("IDEM_HOME", "/opt/idem");
        assertThat(resolve.get()).as("under the installation bin/idem runs from")
                .isEqualTo(Path.of("/opt/idem/data/order-payments.log"));
        values.put("ledger.file", " ");
        assertThat(resolve.get()).as("blank counts as unset").isEqualTo(Path.of("/opt/idem/data/order-payments.log"));
        values.put("ledger.file", "/var/lib/idem/orders.log");
        assertThat(resolve.get()).isEqualTo(Path.of("/var/lib/idem/orders.log"));
    }

    @Test
    void aFsyncSettingOtherThanTrueOrFalseFailsInitNamingTheSetting() {
        OrderPaymentHandler handler = new OrderPaymentHandler();

        assertThatThrownBy(() -> handler.init(HandlerSettings.of("orders",
                Map.of("ledger.file", ledgerFile.toString(), "ledger.fsync", "yes"))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Invalid value 'yes' for handler setting pipelines.orders.handler-settings.ledger.fsync:"
                        + " must be true or false");
        assertThat(ledgerFile).as("nothing opened").doesNotExist();
    }

    @Test
    void aHandlerWithoutInitRefusesToRunAndSaysWhy() {
        OrderPaymentHandler handler = new OrderPaymentHandler();

        assertThatThrownBy(() -> handler.handle(Orders.paid("m-1", "o-1", "5"), Orders.context()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("OrderPaymentHandler has no ledger: init was not called.");
    }

    @Test
    void initIsCalledOnce() {
        OrderPaymentHandler handler = open();

        assertThatThrownBy(() -> handler.init(HandlerSettings.of("orders", Map.of())))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("open already");
    }

    @Test
    void anEmptyLedgerIsCreatedWithItsDirectories() throws Exception {
        open();

        assertThat(ledgerFile).exists().isEmptyFile();
    }
}
