package dev.idem.adapter.rabbitmq;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.PossibleAuthenticationFailureException;
import dev.idem.spi.BrokerException;
import java.io.IOException;
import java.util.concurrent.TimeoutException;

/**
 * One named connection, opened on demand and opened again on demand after it was lost: the adapter's own
 * recovery in place of the client's. Thread-safe.
 */
final class Connector implements AutoCloseable {

    private final ConnectionFactory factory;
    private final String name;
    private final String endpoint;
    private Connection connection;
    private boolean closed;

    Connector(ConnectionFactory factory, String name, String endpoint) {
        this.factory = factory;
        this.name = name;
        this.endpoint = endpoint;
    }

    /**
     * The open connection, opening a new one if there is none or it was lost.
     *
     * @throws BrokerException if RabbitMQ cannot be reached (retriable) or refuses the login (not retriable)
     */
    synchronized Connection get() {
        if (closed) {
            throw new BrokerException("The RabbitMQ adapter is closed", false);
        }
        if (connection == null || !connection.isOpen()) {
            connection = open();
        }
        return connection;
    }

    private Connection open() {
        try {
            return factory.newConnection(name);
        } catch (PossibleAuthenticationFailureException e) {
            throw new BrokerException("RabbitMQ at " + endpoint + " refused the login of user '"
                    + factory.getUsername() + "': " + e.getMessage() + ". Check username and password, and that "
                    + "the user may access the virtual host", false, e);
        } catch (IOException | TimeoutException e) {
            throw new BrokerException("Cannot connect to RabbitMQ at " + endpoint + ": " + e, true, e);
        }
    }

    String endpoint() {
        return endpoint;
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (connection != null && connection.isOpen()) {
            try {
                connection.close(factory.getShutdownTimeout());
            } catch (IOException | RuntimeException e) {
                connection.abort();
            }
        }
        connection = null;
    }
}
