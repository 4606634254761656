package dev.idem.examples.orders;

import dev.idem.api.HandlerContext;
import dev.idem.api.HandlerLifecycle;
import dev.idem.api.HandlerSettings;
import dev.idem.api.Message;
import dev.idem.api.NonRetryableException;
import dev.idem.api.TypedHandler;
import dev.idem.api.guard.Transition;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Records order payments in a ledger file, guarded by the order's state: the first {@code paid} event
 * of an order is {@code applied}; any later one (another message, or this message run again) is
 * {@code ignored-already-paid}. For a pipeline in plain (non-transactional) mode, with any store.
 *
 * <p><b>Settings.</b> The runtime creates the handler with its no-arg constructor, then calls
 * {@link #init(HandlerSettings)} with the pipeline's {@code handler-settings}, which open the ledger:
 * <ul>
 *   <li>{@value #LEDGER_FILE}: the ledger file; default {@code data/order-payments.log} under the installation
 *       ({@code IDEM_HOME} or {@code -Didem.home}, which {@code bin/idem} sets), else under the working directory;</li>
 *   <li>{@value #LEDGER_FSYNC}: {@code true} forces each line to the disk (surviving a power loss, at the cost of
 *       one {@code fsync} per message); default {@code false}.</li>
 * </ul>
 * Each line is handed to the operating system before {@link #handle} returns, so it survives the process
 * being killed, with or without fsync.
 *
 * <p><b>The ledger.</b> Every run appends exactly one line,
 * {@code messageId<TAB>orderId<TAB>event<TAB>amount<TAB>outcome}, where {@code messageId} is the
 * idempotency key the runtime claimed (tabs, line breaks and backslashes in it are escaped as
 * {@code \t}, {@code \n}, {@code \r}, {@code \\}).
 *
 * <p><b>Why the guard.</b> In plain mode a consumer that dies after writing the line and before the
 * runtime completes the key runs the message again once the lease ends (docs/design.md, "The honest window").
 * The paid orders are rebuilt from the ledger when it is opened, so that second run finds
 * the order paid and changes nothing: the ledger then shows two runs for the message, one payment.
 * The rule is the same {@link dev.idem.api.guard.StateMachine} the transactional handler applies to its
 * table ({@code OrderStates}), asked about the state kept here with {@code decide}.
 *
 * <p><b>Threads.</b> Thread-safe: the check of the order's state and the append happen under one lock,
 * so concurrent runs never interleave their lines nor both apply one order. One instance must own
 * its ledger file: bind this class to one pipeline per process (or give each pipeline its own
 * {@value #LEDGER_FILE}), and do not share the file between processes.
 *
 * <p><b>Payloads.</b> A {@link TypedHandler} of {@link OrderEvent}: the runtime decodes each payload into the record
 * before the run and dead-letters one that is not such JSON ({@code invalid-payload}), without running the handler.
 *
 * <p><b>Failures.</b> An event whose values do not fit ({@link OrderEvent#validate}) throws
 * {@link NonRetryableException} (dead-lettered at once);
 * an I/O failure throws {@link IOException} (retried); an interrupt while waiting for the lock throws
 * {@link InterruptedException}, leaving no line. A ledger that cannot be opened fails {@code init}, and with
 * it the start, naming the file and the setting.
 */
public final class OrderPaymentHandler implements TypedHandler<OrderEvent>, HandlerLifecycle, AutoCloseable {

    /** Handler setting: the ledger file. */
    public static final String LEDGER_FILE = "ledger.file";
    /** Handler setting: {@code true} forces every line to the disk before the run returns. */
    public static final String LEDGER_FSYNC = "ledger.fsync";
    /** The ledger when {@value #LEDGER_FILE} is not set, relative to the installation or the working directory. */
    public static final Path DEFAULT_LEDGER = Path.of("data", "order-payments.log");

    private final ReentrantLock lock = new ReentrantLock();
    /*
     * Set once, by the constructor or by init. Not volatile: the runtime calls init before the pipeline's threads
     * start, which makes what init wrote visible to every handle (HandlerLifecycle's contract).
     */
    private Ledger ledger;
    /** Guarded by {@link #lock}. */
    private Set<String> paidOrders;

    /** For the runtime, which then calls {@link #init(HandlerSettings)}; nothing is opened until then. */
    public OrderPaymentHandler() {
    }

    /**
     * Opens the given ledger and rebuilds the paid orders from it, without {@code init}; for binding in code
     * ({@code Idem.builder().handler("orders", new OrderPaymentHandler(path, false))}) and tests.
     *
     * @param ledger the ledger file; created with its directories if absent
     * @param fsync  whether each line is forced to the disk before a run returns
     * @throws UncheckedIOException naming the file when it cannot be created or read
     */
    public OrderPaymentHandler(Path ledger, boolean fsync) {
        open(Objects.requireNonNull(ledger, "ledger"), fsync, "Pass a writable file");
    }

    /**
     * Opens the ledger the settings name (see the class comment) and rebuilds the paid orders from it.
     *
     * @throws UncheckedIOException naming the file and the setting when it cannot be created or read
     * @throws IllegalArgumentException naming the setting when {@value #LEDGER_FSYNC} is neither true nor false
     * @throws IllegalStateException when the ledger is open already
     */
    @Override
    public void init(HandlerSettings settings) {
        if (ledger != null) {
            throw new IllegalStateException("This " + getClass().getSimpleName() + " has its ledger " + ledger.file()
                    + " open already; init is called once, on a handler made with the no-arg constructor");
        }
        boolean fsync = settings.getBoolean(LEDGER_FSYNC, false);
        open(ledgerPath(settings, System.getenv(), System.getProperties()), fsync,
                "Set " + settings.path(LEDGER_FILE) + " to a writable file");
    }

    /**
     * The ledger the settings name: {@value #LEDGER_FILE}, else the default under {@code IDEM_HOME} (or
     * {@code -Didem.home}), else under the working directory.
     */
    static Path ledgerPath(HandlerSettings settings, Map<String, String> env, Properties properties) {
        Optional<String> file = settings.get(LEDGER_FILE).map(String::trim).filter(f -> !f.isEmpty());
        if (file.isPresent()) {
            return Path.of(file.get());
        }
        String home = env.get("IDEM_HOME");
        if (home == null || home.isBlank()) {
            home = properties.getProperty("idem.home");
        }
        return home == null || home.isBlank() ? DEFAULT_LEDGER : Path.of(home.trim()).resolve(DEFAULT_LEDGER);
    }

    private void open(Path file, boolean fsync, String fix) {
        Ledger opened = Ledger.open(file, fsync, fix);
        try {
            this.paidOrders = opened.paidOrders();
        } catch (RuntimeException e) {
            try {
                opened.close();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        this.ledger = opened;
    }

    @Override
    public void handle(OrderEvent payload, Message message, HandlerContext context)
            throws IOException, InterruptedException {
        Ledger ledger = this.ledger;
        if (ledger == null) {
            throw new IllegalStateException(getClass().getSimpleName() + " has no ledger: init was not called. The"
                    + " runtime calls it for handler: in the configuration; code that creates the handler itself"
                    + " calls init, or uses the constructor that takes the ledger file");
        }
        OrderEvent event = payload.validate();
        String messageId = MessageIds.of(message);
        Outcome outcome;
        // Interruptible: a run the runtime times out while it waits here leaves no line.
        lock.lockInterruptibly();
        try {
            // An order the ledger has no payment for counts as created; ILLEGAL cannot happen with these two states.
            Transition transition = OrderStates.ORDERS.decide(event.orderId(),
                    paidOrders.contains(event.orderId()) ? OrderStates.PAID : OrderStates.CREATED, event.event())
                    .orReject();
            outcome = transition.applied() ? Outcome.APPLIED : Outcome.IGNORED_ALREADY_PAID;
            ledger.append(messageId, event, outcome);
            // Only once the line is written: a failed write leaves the order unpaid, and the retry applies it.
            if (outcome == Outcome.APPLIED) {
                paidOrders.add(event.orderId());
            }
        } finally {
            lock.unlock();
        }
        context.logger().log(outcome == Outcome.APPLIED ? Level.DEBUG : Level.INFO,
                "Order {0}: payment of {1} from message {2} {3}", event.orderId(), event.amount(), messageId,
                outcome.label());
    }

    /** The ledger file this handler appends to, or {@code null} before {@code init}. */
    public Path ledger() {
        return ledger == null ? null : ledger.file();
    }

    /**
     * Closes the ledger file, if one was opened. The runtime calls this once on stop, after the last run, and also
     * when the start fails (so possibly without a successful {@code init}); code that creates handlers itself, such
     * as tests, should call it too.
     */
    @Override
    public void close() throws IOException {
        if (ledger != null) {
            ledger.close();
        }
    }
}
