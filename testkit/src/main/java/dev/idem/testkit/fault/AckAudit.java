package dev.idem.testkit.fault;

import dev.idem.spi.Backlog;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.Delivery;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Predicate;

/**
 * A {@link BrokerAdapter} in front of another that checks every ack as the runtime gives it: before a delivery it
 * handed over is acked, {@code mayAck} is asked about its message (typically: "is the message's key completed in the
 * store?", read through a connection of the test's own, not the one under faults), and an ack it refuses, or throws
 * on, is recorded as {@linkplain #earlyAcks() early}. The ack is passed on either way, so the run goes on as it would
 * without the audit. Retries and dead letters are counted and passed on.
 *
 * <pre>{@code
 * AckAudit audit = new AckAudit(broker, message -> completed(message.headers().get("message-id")));
 * IdemRuntime runtime = Idem.builder().configYaml(yaml).broker("memory", audit)...start();
 * ...
 * assertThat(audit.earlyAcks()).isEmpty();
 * }</pre>
 *
 * <p>Thread-safe: {@code mayAck} is called on the thread that acks (any of the runtime's), concurrently, and must be
 * thread-safe; it should be quick, since the ack waits for it. The audit does not own the adapter: {@link #close()}
 * closes it only if built with {@code closesDelegate}. Arguments must not be {@code null}.
 */
public final class AckAudit implements BrokerAdapter {

    private final BrokerAdapter delegate;
    private final Predicate<InboundMessage> mayAck;
    private final boolean closesDelegate;
    private final LongAdder acks = new LongAdder();
    private final LongAdder retries = new LongAdder();
    private final LongAdder deadLetters = new LongAdder();
    private final List<String> early = new CopyOnWriteArrayList<>();
    /** The wrapper handed to the listener for each delivery not settled yet, to pass revocations on. */
    private final Map<Delivery, Delivery> unsettled = Collections.synchronizedMap(new IdentityHashMap<>());

    /** An audit that leaves {@code delegate} open on {@link #close()}. */
    public AckAudit(BrokerAdapter delegate, Predicate<InboundMessage> mayAck) {
        this(delegate, mayAck, false);
    }

    /**
     * @param delegate the adapter whose deliveries are audited
     * @param mayAck whether a message may be acked now
     * @param closesDelegate whether {@link #close()} closes {@code delegate}
     */
    public AckAudit(BrokerAdapter delegate, Predicate<InboundMessage> mayAck, boolean closesDelegate) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.mayAck = Objects.requireNonNull(mayAck, "mayAck");
        this.closesDelegate = closesDelegate;
    }

    /** Acks given so far, early ones included. */
    public long acks() {
        return acks.sum();
    }

    /** {@code retryLater} calls so far. */
    public long retries() {
        return retries.sum();
    }

    /** {@code deadLetter} calls so far. */
    public long deadLetters() {
        return deadLetters.sum();
    }

    /**
     * The acks {@code mayAck} refused or threw on, one line each (the message's headers, and the failure if it
     * threw), in the order they came; a snapshot.
     */
    public List<String> earlyAcks() {
        return List.copyOf(early);
    }

    @Override
    public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
        return delegate.subscribe(request, audited(listener));
    }

    @Override
    public Subscription subscribeDeadLetters(SubscriptionRequest request, DeliveryListener listener) {
        return delegate.subscribeDeadLetters(request, audited(listener));
    }

    @Override
    public void publish(String destination, OutboundMessage message) {
        delegate.publish(destination, message);
    }

    @Override
    public void checkHealth() {
        delegate.checkHealth();
    }

    @Override
    public String defaultDeadLetterDestination(String source) {
        return delegate.defaultDeadLetterDestination(source);
    }

    @Override
    public Optional<Backlog> backlog(SubscriptionRequest request) {
        return delegate.backlog(request);
    }

    @Override
    public void close() {
        if (closesDelegate) {
            delegate.close();
        }
    }

    private DeliveryListener audited(DeliveryListener listener) {
        Objects.requireNonNull(listener, "listener");
        return new DeliveryListener() {
            @Override
            public void onDeliveries(List<Delivery> batch) {
                List<Delivery> wrapped = new ArrayList<>(batch.size());
                for (Delivery d : batch) {
                    AuditedDelivery audited = new AuditedDelivery(d);
                    unsettled.put(d, audited);
                    wrapped.add(audited);
                }
                listener.onDeliveries(wrapped);
            }

            @Override
            public void onRevoked(List<Delivery> revoked) {
                List<Delivery> wrapped = new ArrayList<>(revoked.size());
                for (Delivery d : revoked) {
                    Delivery audited = unsettled.get(d);
                    if (audited != null) {
                        wrapped.add(audited);
                    }
                }
                listener.onRevoked(wrapped);
            }
        };
    }

    private void check(InboundMessage message) {
        try {
            if (!mayAck.test(message)) {
                early.add(describe(message) + ": acked before it may be");
            }
        } catch (RuntimeException e) {
            early.add(describe(message) + ": the check failed (" + e + ")");
        }
    }

    private static String describe(InboundMessage message) {
        Map<String, String> headers = message.headers();
        return message.source() + " " + message.brokerMessageId() + " " + headers;
    }

    private final class AuditedDelivery implements Delivery {
        private final Delivery delivery;

        AuditedDelivery(Delivery delivery) {
            this.delivery = delivery;
        }

        @Override
        public InboundMessage message() {
            return delivery.message();
        }

        @Override
        public void ack() {
            unsettled.remove(delivery);
            check(delivery.message());
            acks.increment();
            delivery.ack();
        }

        @Override
        public void retryLater(Duration delay) {
            unsettled.remove(delivery);
            retries.increment();
            delivery.retryLater(delay);
        }

        @Override
        public void deadLetter(DeadLetterReason reason) {
            unsettled.remove(delivery);
            deadLetters.increment();
            delivery.deadLetter(reason);
        }
    }
}
