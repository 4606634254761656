package dev.idem.store.redis;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.StoreException;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import java.io.IOException;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Turns what Lettuce throws into {@link StoreException}s that name the operation, the endpoint (never
 * the password) and what to do.
 *
 * <p>Retriable: whatever can pass without a person (the connection is down or refused, a command timed
 * out, the server is loading, busy, read-only after a failover, out of memory, or the cluster is
 * resharding; fewer replicas than {@code wait.replicas} acknowledged a write). Not retriable: what needs a person: credentials or ACL rules, keys under the prefix that
 * another application wrote, a server that refuses scripts, a reply this store does not understand.
 *
 * <p>Immutable and thread-safe.
 */
final class Failures {

    /** Error codes (the first word of a Redis error) that only a person can fix. */
    private static final Set<String> NEEDS_A_PERSON = Set.of("WRONGTYPE", "IDEMRECORD", "NOAUTH", "WRONGPASS",
            "NOPERM", "ERR", "NOSCRIPT");

    private final String endpoint;
    private final String configPath;
    private final Duration timeout;

    /**
     * @param endpoint the server's URI without password, for messages
     * @param configPath where the store's configuration lives, e.g. {@code store.redis}
     */
    Failures(String endpoint, String configPath, Duration timeout) {
        this.endpoint = endpoint;
        this.configPath = configPath;
        this.timeout = timeout;
    }

    String endpoint() {
        return endpoint;
    }

    StoreException of(String operation, Throwable failure) {
        Throwable cause = unwrap(failure);
        if (cause instanceof ReplicaWait.NotReplicated notReplicated) {
            return notReplicated(operation, notReplicated);
        }
        if (cause instanceof RedisCommandTimeoutException) {
            return timedOut(operation);
        }
        if (cause instanceof RedisCommandExecutionException refused) {
            return refused(operation, refused);
        }
        // A connection fails this way when the server refuses its AUTH or HELLO: a person must act.
        for (Throwable c = cause.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            if (c instanceof RedisCommandExecutionException refused) {
                return refused(operation, refused);
            }
        }
        if (cause instanceof RedisConnectionException || cause instanceof RedisException
                || cause instanceof IOException) {
            return new StoreException("Cannot reach Redis at " + endpoint + " for " + operation + " ("
                    + describe(cause) + "). Retrying is safe; check that Redis runs there and that "
                    + configPath + ".uri names it.", true, cause);
        }
        return new StoreException("Redis at " + endpoint + " failed " + operation + " unexpectedly: "
                + describe(cause), false, cause);
    }

    StoreException timedOut(String operation) {
        return new StoreException("Redis at " + endpoint + " did not answer " + operation + " within "
                + ConfigKey.formatDuration(timeout) + " (" + configPath + ".command-timeout). Whether it took "
                + "effect is unknown; retrying is safe.", true);
    }

    /** A write the primary took whose replication {@link ReplicaWait} could not confirm: retriable. */
    StoreException notReplicated(String operation, ReplicaWait.NotReplicated failure) {
        String why = failure.reconnected
                ? "but the connection was established again before its replicas confirmed it (a failover?), so whether"
                        + " it reached them is unknown"
                : "but only " + failure.acknowledged + " of the " + failure.required + " replicas " + configPath
                        + ".wait.replicas asks for acknowledged it within " + ConfigKey.formatDuration(failure.timeout)
                        + " (" + configPath + ".wait.timeout)";
        return new StoreException("Redis at " + endpoint + " took " + operation + " " + why + ": a failover could lose"
                + " it, so it does not count. Retrying is safe; check that the replicas run and keep up (INFO"
                + " replication).", true, failure);
    }

    StoreException interrupted(String operation) {
        return new StoreException("Interrupted while waiting for Redis at " + endpoint + " to answer " + operation
                + "; whether it took effect is unknown.", true);
    }

    StoreException unexpectedReply(String operation, Object reply) {
        return new StoreException("Redis at " + endpoint + " answered " + operation + " with " + reply
                + ", which this store does not understand. Is " + configPath + ".uri a Redis 5.0 or later server?",
                false);
    }

    /** {@code operation} cannot go on, for a reason of the store's own: {@code why}. */
    StoreException failed(String operation, String why, boolean retriable) {
        return new StoreException("Redis at " + endpoint + " failed " + operation + ": " + why, retriable);
    }

    /** A key under the prefix holds a value that no script of this store wrote. */
    StoreException notARecord(String operation) {
        return new StoreException("Redis at " + endpoint + " refused " + operation + ": a key under the prefix holds "
                + "a value that is not an Idem record. Another application writes keys under " + configPath
                + ".key-prefix: give Idem a prefix of its own.", false);
    }

    /**
     * A Redis error answered for one key inside a script that went on with the other keys ({@code message} is
     * the error's text, starting with its code), judged as the same error failing a whole call would be.
     */
    StoreException refused(String operation, String message) {
        return refused(operation, new RedisCommandExecutionException(message));
    }

    private StoreException refused(String operation, RedisCommandExecutionException refused) {
        String message = String.valueOf(refused.getMessage());
        int space = message.indexOf(' ');
        String code = (space < 0 ? message : message.substring(0, space)).toUpperCase(Locale.ROOT);
        // A WAIT sent to a primary demoted since (a failover) answers ERR too, and passes like a READONLY.
        boolean retriable = !NEEDS_A_PERSON.contains(code) || message.contains("max number of clients")
                || message.contains("WAIT cannot be used with replica");
        String hint;
        switch (code) {
            case "WRONGTYPE", "IDEMRECORD" -> hint = "Another application writes keys under " + configPath
                    + ".key-prefix: give Idem a prefix of its own.";
            case "NOAUTH", "WRONGPASS" -> hint = "Check " + configPath + ".username and " + configPath + ".password.";
            case "NOPERM" -> hint = "Grant the Redis user the commands EVALSHA, EVAL, SCRIPT, GET, SET, DEL, PTTL, TIME, PING"
                    + " (and SCAN for store statistics, listing and purging, WAIT with " + configPath
                    + ".wait.replicas, HGET, HSET, HDEL, HLEN, HEXISTS, HGETALL, HKEYS and PEXPIRE for durable steps and"
                    + " " + configPath + ".pack-completed)"
                    + " on keys under " + configPath + ".key-prefix.";
            default -> hint = retriable ? "Retrying is safe." : "";
        }
        return new StoreException("Redis at " + endpoint + " refused " + operation + ": " + message
                + (hint.isEmpty() ? "" : " " + hint), retriable, refused);
    }

    private static Throwable unwrap(Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof ExecutionException || cause instanceof CompletionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }

    private static String describe(Throwable cause) {
        StringBuilder s = new StringBuilder(String.valueOf(cause.getMessage()));
        Throwable root = cause.getCause();
        while (root != null && root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        if (root != null && root.getMessage() != null && !s.toString().contains(root.getMessage())) {
            s.append(": ").append(root.getMessage());
        }
        return s.toString();
    }
}
