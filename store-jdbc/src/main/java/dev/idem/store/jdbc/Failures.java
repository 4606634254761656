package dev.idem.store.jdbc;

import dev.idem.spi.Secret;
import dev.idem.spi.StoreException;
import java.io.IOException;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;

/**
 * Turns database failures into {@link StoreException}s that say where (the URL without its password,
 * the table), what (the operation) and whether trying again may help: a lost or refused connection,
 * an exhausted pool, a timeout, a deadlock or a serialization failure is retriable; a missing table or
 * a rejected statement is not.
 */
final class Failures {


    private final Dialect dialect;
    private final String where;

    Failures(Dialect dialect, String url) {
        this.dialect = dialect;
        this.where = "JDBC dedup store at " + redact(url) + " (table " + dialect.table + ")";
    }

    /** Where the store is, for messages: the URL without credentials, and the table. */
    String where() {
        return where;
    }

    /** A failure of {@code operation}, classified by the first {@link SQLException} in its causes. */
    StoreException of(String operation, Throwable failure) {
        if (failure instanceof StoreException e) {
            return e;
        }
        SQLException sql = sqlCause(failure);
        boolean retriable = isRetriable(failure);
        StringBuilder message = new StringBuilder(where).append(": ").append(operation).append(" failed");
        if (sql != null) {
            message.append(": ").append(sql.getMessage()).append(" [SQLState ").append(sql.getSQLState())
                    .append(", error ").append(sql.getErrorCode()).append(']');
        } else {
            Throwable root = failure.getCause() != null ? failure.getCause() : failure;
            message.append(": ").append(root);
        }
        message.append(retriable ? " (retriable: the database is unreachable, busy or lost a race)"
                : " (not retriable: check the database, the table and store.jdbc's settings)");
        return new StoreException(message.toString(), retriable, failure);
    }

    /** A store failure that is not a database exception. */
    StoreException of(String operation, String problem, boolean retriable) {
        return new StoreException(where + ": " + operation + " failed: " + problem, retriable);
    }

    /** Whether the failure was a lost race that the same statement, run again, resolves. */
    boolean isConflict(Throwable failure) {
        SQLException sql = sqlCause(failure);
        return sql != null && dialect.isConflict(sql);
    }

    boolean isRetriable(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof SQLTransientException || t instanceof SQLRecoverableException || t instanceof IOException) {
                return true;
            }
            if (t instanceof SQLException sql) {
                for (SQLException e = sql; e != null; e = e.getNextException()) {
                    if (retriableState(e.getSQLState()) || dialect.isRetriableVendorCode(e.getErrorCode())) {
                        return true;
                    }
                }
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }

    /**
     * SQLState classes that mean "not now": 08 connection, 40 transaction rollback (deadlock,
     * serialization), 53 insufficient resources, 57P0x server shutting down or starting, 57014 a
     * cancelled (timed out) statement, 55P03 a lock not available in time, HYT0x timeouts.
     */
    private static boolean retriableState(String state) {
        if (state == null) {
            return false;
        }
        return state.startsWith("08") || state.startsWith("40") || state.startsWith("53")
                || state.startsWith("57P0") || state.equals("57014") || state.equals("55P03")
                || state.startsWith("HYT0");
    }

    static SQLException sqlCause(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                return sql;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }

    /** The URL without passwords, whether given as a parameter or as {@code user:password@}. */
    static String redact(String url) {
        return Secret.maskCredentials(url);
    }
}
