package dev.idem.adapter.activemq;

import jakarta.jms.JMSException;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.transport.failover.FailoverTransport;
import org.apache.activemq.util.URISupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens and starts connections within a time bound. A {@code failover:} transport waits for its first connection
 * without end unless told otherwise, and {@code connection.start()} waits with it; so the connect runs on a
 * thread of its own, and the connection is closed (which wakes the waiting transport) once the bound passes.
 * Once connected, reconnection is the transport's business and is not bounded: a running consumer survives a
 * broker restart. Stateless.
 */
final class BoundedConnect {

    private static final Logger log = LoggerFactory.getLogger(BoundedConnect.class);

    /** The failover transport's option bounding a message send while it reconnects. */
    static final String FAILOVER_SEND_TIMEOUT = "timeout";

    /** What to do with a created connection before it is started (a client id must be set first). */
    @FunctionalInterface
    interface Setup {
        void apply(ActiveMQConnection connection) throws JMSException;
    }

    private BoundedConnect() {
    }

    /**
     * Creates a connection, applies {@code setup}, and starts it.
     *
     * @param sendTimeout with a {@code failover:} URL that sets no {@code timeout} option: how long a message send
     *        waits for a lost connection to come back before it fails (the transport's {@code timeout})
     * @throws TimeoutException if the connection was not started within {@code timeout}; it is closed
     * @throws JMSException if creating or starting failed; the connection is closed
     */
    static ActiveMQConnection open(ActiveMQConnectionFactory factory, String url, Duration timeout,
            Duration sendTimeout, Setup setup) throws JMSException, TimeoutException, InterruptedException {
        boolean boundSends = isFailover(url) && !hasOption(url, FAILOVER_SEND_TIMEOUT);
        AtomicReference<ActiveMQConnection> created = new AtomicReference<>();
        AtomicBoolean abandoned = new AtomicBoolean();
        FutureTask<ActiveMQConnection> task = new FutureTask<>(() -> {
            ActiveMQConnection c = (ActiveMQConnection) factory.createConnection();
            created.set(c);
            try {
                if (boundSends) {
                    FailoverTransport failover = c.getTransport().narrow(FailoverTransport.class);
                    if (failover != null) {
                        failover.setTimeout(sendTimeout.toMillis());
                    }
                }
                if (setup != null) {
                    setup.apply(c);
                }
                c.start();
            } catch (JMSException | RuntimeException e) {
                closeQuietly(c);
                throw e;
            }
            if (abandoned.get()) {
                closeQuietly(c);
                throw new JMSException("Abandoned after the connect timeout");
            }
            return c;
        });
        Thread thread = new Thread(task, "idem-activemq-connect");
        thread.setDaemon(true);
        thread.start();
        try {
            return task.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException | InterruptedException e) {
            abandoned.set(true);
            // Closing disposes the transport, which ends the failover transport's wait in start().
            ActiveMQConnection c = created.get();
            if (c != null) {
                closeQuietly(c);
            }
            task.cancel(true);
            throw e;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof JMSException j) {
                throw j;
            }
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(cause);
        }
    }

    static boolean isFailover(String url) {
        return url.regionMatches(true, 0, "failover:", 0, "failover:".length());
    }

    /** Whether the composite URL's own options (after its closing parenthesis) name {@code option}. */
    static boolean hasOption(String url, String option) {
        try {
            return URISupport.parseComposite(new URI(url)).getParameters().containsKey(option);
        } catch (URISyntaxException | RuntimeException e) {
            // Unparseable here means the factory rejected it already; treat it as unset.
            return false;
        }
    }

    static void closeQuietly(ActiveMQConnection c) {
        try {
            c.close();
        } catch (JMSException | RuntimeException e) {
            log.debug("Closing an ActiveMQ connection failed: {}", e.toString());
        }
    }
}
