package dev.idem.spring.boot;

import dev.idem.api.BatchContext;
import dev.idem.api.HandlerContext;
import dev.idem.api.MessageHandler;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionSynchronizationUtils;

/**
 * Transactional mode with the application's {@link DataSource}: while a handler runs, the run's connection (the
 * store's transaction, {@code context.transaction(Connection.class)}) is Spring's transactional resource for that
 * data source. {@code DataSourceUtils.getConnection} (JdbcTemplate, Spring Data JDBC) hands it out, and
 * {@code @Transactional} code with the default propagation joins it; nothing commits until the runtime commits the
 * run with its key. A participant that marks the transaction rollback-only fails the run.
 *
 * <p>The connection comes from the store's own pool, so the store must reach the database the data source reaches
 * (the starter defaults {@code store.jdbc.url} from {@code spring.datasource.url}). Synchronizations registered during
 * the run get {@code beforeCommit} and {@code beforeCompletion} when the handler returns, then
 * {@code afterCompletion(STATUS_UNKNOWN)}: the commit happens after the handler, in the runtime, and is not reported
 * back, so {@code afterCommit} is never called. When the handler throws they get {@code beforeCompletion} and
 * {@code afterCompletion(STATUS_ROLLED_BACK)}.
 *
 * <p>Thread-safe: the binding is the run's thread's.
 */
final class TransactionBinding {

    private final DataSource dataSource;

    TransactionBinding(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * The handler behind a proxy with the same Idem interfaces ({@code TypedHandler}, {@code BatchHandler},
     * {@code PayloadCodec}), which binds the transaction around each {@code handle} call.
     */
    MessageHandler wrap(MessageHandler handler) {
        Set<Class<?>> interfaces = new LinkedHashSet<>();
        collect(handler.getClass(), interfaces);
        InvocationHandler calls = (proxy, method, args) -> {
            if (method.getName().equals("handle") && args != null) {
                return around(connectionOf(args), () -> invoke(handler, method, args));
            }
            return invoke(handler, method, args);
        };
        return (MessageHandler) Proxy.newProxyInstance(handler.getClass().getClassLoader(),
                interfaces.toArray(Class<?>[]::new), calls);
    }

    private static void collect(Class<?> type, Set<Class<?>> into) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            for (Class<?> i : c.getInterfaces()) {
                if (i.getName().startsWith("dev.idem.api.")) {
                    into.add(i);
                }
                collect(i, into);
            }
        }
    }

    /** The run's connection, from the context a {@code handle} method takes: a message's or a batch's. */
    private static Optional<Connection> connectionOf(Object[] args) {
        for (Object arg : args) {
            if (arg instanceof HandlerContext context) {
                return context.transaction(Connection.class);
            }
            if (arg instanceof BatchContext context) {
                return context.transaction(Connection.class);
            }
        }
        return Optional.empty();
    }

    private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    @FunctionalInterface
    interface Body {
        Object run() throws Throwable;
    }

    /** Runs {@code body} with the run's connection bound to the data source, when the run has one. */
    Object around(Optional<Connection> connection, Body body) throws Throwable {
        if (connection.isEmpty() || TransactionSynchronizationManager.hasResource(dataSource)) {
            return body.run();
        }
        ConnectionHolder holder = new ConnectionHolder(connection.get(), true);
        holder.setSynchronizedWithTransaction(true);
        TransactionSynchronizationManager.bindResource(dataSource, holder);
        TransactionSynchronizationManager.initSynchronization();
        TransactionSynchronizationManager.setActualTransactionActive(true);
        boolean succeeded = false;
        try {
            Object result = body.run();
            if (holder.isRollbackOnly()) {
                throw new IllegalStateException("The handler's transaction was marked rollback-only (by a"
                        + " @Transactional method that failed inside it): the run fails and rolls back with its key");
            }
            TransactionSynchronizationUtils.triggerBeforeCommit(false);
            succeeded = true;
            return result;
        } finally {
            List<TransactionSynchronization> registered = TransactionSynchronizationManager.getSynchronizations();
            try {
                TransactionSynchronizationUtils.triggerBeforeCompletion();
                // A failed run is rolled back (to its savepoint in a group); a successful one commits later, if at all.
                TransactionSynchronizationUtils.invokeAfterCompletion(registered, succeeded
                        ? TransactionSynchronization.STATUS_UNKNOWN : TransactionSynchronization.STATUS_ROLLED_BACK);
            } finally {
                TransactionSynchronizationManager.clear();
                TransactionSynchronizationManager.unbindResource(dataSource);
            }
        }
    }
}
