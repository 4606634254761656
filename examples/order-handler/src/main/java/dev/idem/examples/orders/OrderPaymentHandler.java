package dev.idem.examples.orders;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.api.NonRetryableException;
import dev.idem.api.guard.Transition;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Records order payments in a ledger file, guarded by the order's state: the first {@code paid} event
 * of an order is {@code applied}; any later one (another message, or this message run again) is
 * {@code ignored-already-paid}. For a pipeline in plain (non-transactional) mode, with any store.
 *
 * <p><b>The ledger.</b> Every run appends exactly one line,
 * {@code messageId<TAB>orderId<TAB>event<TAB>amount<TAB>outcome}, where {@code messageId} is the
 * idempotency key the runtime claimed (tabs, line breaks and backslashes in it are escaped as
 * {@code \t}, {@code \n}, {@code \r}, {@code \\}). The file is the first of:
 * <ol>
 *   <li>the environment variable {@value #LEDGER_ENV},</li>
 *   <li>the system property {@value #LEDGER_PROPERTY},</li>
 *   <li>{@code data/order-payments.log} under the installation when {@code IDEM_HOME} is set (as
 *       {@code bin/idem} sets it), else under the working directory.</li>
 * </ol>
 * Each line is handed to the operating system before {@link #handle} returns, so it survives the
 * process being killed; it is forced to the disk (surviving a power loss, at the cost of one
 * {@code fsync} per message) only when {@value #FSYNC_ENV} (or {@value #FSYNC_PROPERTY}) is {@code true}.
 *
 * <p><b>Why the guard.</b> In plain mode a consumer that dies after writing the line and before the
 * runtime completes the key runs the message again once the lease ends (DESIGN.md's honest window).
 * The paid orders are rebuilt from the ledger when the handler is created, so that second run finds
 * the order paid and changes nothing: the ledger then shows two runs for the message, one payment.
 * The rule is the same {@link dev.idem.api.guard.StateMachine} the transactional handler applies to its
 * table ({@code OrderStates}), asked about the state kept here with {@code decide}.
 *
 * <p><b>Threads.</b> Thread-safe: the check of the order's state and the append happen under one lock,
 * so concurrent runs never interleave their lines nor both apply one order. One instance must own
 * its ledger file: bind this class to one pipeline per process, and do not share the file between
 * processes.
 *
 * <p><b>Failures.</b> A malformed payload throws {@link NonRetryableException} (dead-lettered at once);
 * an I/O failure throws {@link IOException} (retried); an interrupt while waiting for the lock throws
 * {@link InterruptedException}, leaving no line.
 */
public final class OrderPaymentHandler implements MessageHandler, AutoCloseable {

    /** Environment variable naming the ledger file. */
    public static final String LEDGER_ENV = "IDEM_ORDER_LEDGER";
    /** System property naming the ledger file, read when {@value #LEDGER_ENV} is unset. */
    public static final String LEDGER_PROPERTY = "idem.order.ledger";
    /** Environment variable: {@code true} forces every line to the disk before the run returns. */
    public static final String FSYNC_ENV = "IDEM_ORDER_LEDGER_FSYNC";
    /** System property read when {@value #FSYNC_ENV} is unset. */
    public static final String FSYNC_PROPERTY = "idem.order.ledger-fsync";
    /** The ledger when neither setting is given, relative to the working directory. */
    public static final Path DEFAULT_LEDGER = Path.of("data", "order-payments.log");

    private final ReentrantLock lock = new ReentrantLock();
    private final Ledger ledger;
    /** Guarded by {@link #lock}. */
    private final Set<String> paidOrders;

    /**
     * Opens the ledger named by the environment or system properties (see the class comment) and
     * rebuilds the paid orders from it. The runtime calls this for {@code handler:} in {@code conf/idem.yaml}.
     *
     * @throws UncheckedIOException naming the file when it cannot be created or read
     * @throws IllegalArgumentException when {@value #FSYNC_ENV} is neither true nor false
     */
    public OrderPaymentHandler() {
        this(Settings.system());
    }

    /**
     * Opens the given ledger and rebuilds the paid orders from it; for binding in code
     * ({@code Idem.builder().handler("orders", new OrderPaymentHandler(path, false))}) and tests.
     *
     * @param ledger the ledger file; created with its directories if absent
     * @param fsync  whether each line is forced to the disk before a run returns
     * @throws UncheckedIOException naming the file when it cannot be created or read
     */
    public OrderPaymentHandler(Path ledger, boolean fsync) {
        Ledger opened = Ledger.open(Objects.requireNonNull(ledger, "ledger"), fsync);
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

    private OrderPaymentHandler(Settings settings) {
        this(ledgerPath(settings), settings.flag(FSYNC_ENV, FSYNC_PROPERTY));
    }

    /**
     * The ledger the settings name: {@value #LEDGER_ENV}, else {@value #LEDGER_PROPERTY}, else the default
     * under {@code IDEM_HOME} (or {@code -Didem.home}), else under the working directory.
     */
    static Path ledgerPath(Settings settings) {
        return settings.get(LEDGER_ENV, LEDGER_PROPERTY).map(Path::of)
                .orElseGet(() -> settings.get("IDEM_HOME", "idem.home").map(home -> Path.of(home).resolve(DEFAULT_LEDGER))
                        .orElse(DEFAULT_LEDGER));
    }

    @Override
    public void handle(Message message, HandlerContext context) throws IOException, InterruptedException {
        OrderEvent event = OrderEvent.parse(message.payloadAsString());
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

    /** The ledger file this handler appends to. */
    public Path ledger() {
        return ledger.file();
    }

    /**
     * Closes the ledger file. The runtime does not call this (a handler lives as long as its process);
     * code that creates handlers itself, such as tests, should.
     */
    @Override
    public void close() throws IOException {
        ledger.close();
    }
}
