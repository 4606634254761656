package dev.idem.store.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.Secret;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreException;
import dev.idem.spi.TransactionalDedupStore;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceLoader;
import org.jdbi.v3.core.Jdbi;

/**
 * The {@code jdbc} dedup store: keys in one table of a SQL database (PostgreSQL, MariaDB or MySQL,
 * or an embedded H2 file), shared by every process that points at it.
 *
 * <p>The dialect follows the URL: {@code jdbc:postgresql:}, {@code jdbc:mariadb:} or {@code jdbc:mysql:}
 * (through the MariaDB driver, which ships with the plugin as do the PostgreSQL and H2 drivers), or
 * {@code jdbc:h2:} (file mode, e.g. {@code jdbc:h2:file:./data/idem}, is the distribution's zero-setup
 * default; the file is opened through H2's interrupt-safe {@code async:} file system, see
 * {@link H2Dialect#driverUrl}). Leases and retention run on the database's clock. A batch of claims is one statement on
 * PostgreSQL and MariaDB, and two (an upsert and a read) on H2 and MySQL. Expired rows are deleted every
 * {@code purge.interval} in batches of {@code purge.batch-size}.
 *
 * <p>The store also offers transactional mode ({@link TransactionalDedupStore}): the key
 * is written in the handler's own transaction, which the handler reaches from its context as a
 * {@code java.sql.Connection} or a Jdbi {@code Handle}. The pool runs transactions at READ COMMITTED.
 *
 * <p>With transactional mode comes the outbox ({@link OutboxStore}): the messages a handler emits
 * are written to a second table, named after the first with {@code _outbox} added, in the handler's
 * transaction, and relays in every process publish and delete them, each taking rows no other holds
 * ({@code FOR UPDATE SKIP LOCKED}). {@code schema} covers it as it covers the keys table. Each running relay
 * holds a pooled connection while it publishes.
 *
 * <p>The store is also a {@link SequencedDedupStore}: the sequence guard's watermarks, one row per
 * aggregate, live in a third table named after the first with {@code _seq} added, on the database's clock like the
 * keys, purged with them once their retention passed. A completion raises its watermark in the key's transaction,
 * and in transactional mode the watermark is checked and raised in the handler's own transaction. {@code schema}
 * covers it as it covers the keys table, so {@code validate} needs it even where no pipeline guards sequences.
 *
 * <p>The store is also a {@link StepStore}: handlers' durable steps, one row per step, live in a fourth
 * table named after the first with {@code _steps} added, each forgotten its claim's retention after it was recorded
 * (no later than its key) and purged with the keys. {@code schema} covers it too, so {@code validate} needs it even
 * where no handler records steps.
 *
 * <p>The store is also a {@link dev.idem.spi.ReplyStore}: the reply a request's handler sent, stored with its key's
 * completion in the same transaction, lives in a fifth table named after the first with {@code _replies} added, one
 * row per key completed with a reply, forgotten with its completion and purged with the keys. {@code schema} covers
 * it too: {@code create} adds it to a database made by an earlier version, and {@code validate} needs it even where
 * no pipeline replies.
 *
 * <p>The store is also an {@link InspectableDedupStore}: its {@code stats} is one exact
 * {@code COUNT(*)} over the table's live rows, never truncated, whose cost grows with the table.
 *
 * <p>No call waits forever on a database that stops answering: connecting and logging in take at most
 * {@code pool.connection-timeout} (the driver's connect and login timeouts), and each answer at most
 * {@code socket-timeout} (its socket timeout), unless {@code properties} or the URL set those driver settings;
 * then the call fails with a retriable {@link StoreException} naming the URL. An embedded H2 file has no socket.
 *
 * <p>Stateless and thread-safe, as every provider is; {@link #create} connects, prepares the table
 * and starts the purge. Found through {@link ServiceLoader}.
 */
public final class JdbcDedupStoreProvider implements DedupStoreProvider {

    /** The id users write in {@code store.type}. */
    public static final String ID = "jdbc";

    /** {@code store.jdbc.url}: where the database is; picks the dialect. */
    public static final ConfigKey<String> URL = ConfigKey.string("url")
            .required()
            .validate(Dialect::supports, Dialect.SUPPORTED_URLS)
            .validate(H2Dialect::acceptsFileSystem, H2Dialect.ACCEPTED_H2_URLS)
            .doc("The JDBC URL of the database, which also picks the SQL dialect: jdbc:postgresql://host:5432/db, "
                    + "jdbc:mariadb://host:3306/db (jdbc:mysql:// for MySQL), or jdbc:h2:file:./data/idem for an "
                    + "embedded file, which the store opens through H2's async: file system so that an interrupted "
                    + "handler cannot close the database. Put no password here; use password.");

    /** {@code store.jdbc.username}. */
    public static final ConfigKey<String> USERNAME = ConfigKey.string("username")
            .doc("The database user; leave out when the URL names it or the database needs none.");

    /** {@code store.jdbc.password}: a secret. */
    public static final ConfigKey<Secret> PASSWORD = ConfigKey.secret("password")
            .doc("The database user's password; write ${ENV_VAR} to take it from the environment.");

    /** {@code store.jdbc.table}: the table's name. */
    public static final ConfigKey<String> TABLE = ConfigKey.string("table")
            .defaultValue("idem_keys")
            .validate(t -> t.matches("[A-Za-z_][A-Za-z0-9_]{0,47}"),
                    "be a plain SQL identifier: a letter or '_', then up to 47 letters, digits or '_'")
            .doc("The table holding the keys, in the connection's default schema or database (choose another "
                    + "through the URL). Several pipelines share it: keys are namespaced by pipeline.");

    /** {@code store.jdbc.schema}: what to do about the table at start. */
    public static final ConfigKey<String> SCHEMA = ConfigKey.oneOf("schema", Schema.CREATE, Schema.VALIDATE, Schema.NONE)
            .defaultValue(Schema.CREATE)
            .doc("At start: create the table and its index if absent, add a column a table made by an earlier "
                    + "version lacks, then check them (create); only check that the table has every column and the "
                    + "primary key, naming the statement that adds a missing one (validate), for databases whose "
                    + "schema is managed elsewhere; or trust it (none).");

    /** {@code store.jdbc.pool.maximum-size}. */
    public static final ConfigKey<Integer> POOL_MAXIMUM_SIZE = ConfigKey.integer("pool.maximum-size")
            .defaultValue(10)
            .atLeast(1)
            .doc("How many connections the store keeps open at most. Each in-flight batch claim or fenced call "
                    + "holds one for a statement; in transactional mode each running handler holds one for its "
                    + "whole run, so size it at least to the pipelines' concurrency.");

    /** {@code store.jdbc.pool.connection-timeout}. */
    public static final ConfigKey<Duration> POOL_CONNECTION_TIMEOUT = ConfigKey.duration("pool.connection-timeout")
            .defaultValue(Duration.ofSeconds(5))
            .atLeast(Duration.ofMillis(250))
            .doc("How long a call waits for a connection (from the pool, or a new one from the database) before "
                    + "failing with a retriable store error. It also bounds connecting to the database and logging in "
                    + "(the driver's connectTimeout, and loginTimeout on PostgreSQL), so a server that accepts the "
                    + "connection and never answers fails the start within it, unless properties set those.");

    /** {@code store.jdbc.socket-timeout}. */
    public static final ConfigKey<Duration> SOCKET_TIMEOUT = ConfigKey.duration("socket-timeout")
            .defaultValue(Duration.ofSeconds(60))
            .validate(d -> d.isZero() || d.compareTo(Duration.ofSeconds(1)) >= 0, "be 0 (none) or at least 1s")
            .doc("How long one call waits for the database to answer before the connection is dropped and the call "
                    + "fails with a retriable store error (the driver's socketTimeout, unless properties set it); 0 "
                    + "waits forever. In transactional mode a handler's own statements run on the store's connection: "
                    + "keep it above the longest of them.");

    /** {@code store.jdbc.purge.interval}. */
    public static final ConfigKey<Duration> PURGE_INTERVAL = ConfigKey.duration("purge.interval")
            .defaultValue(Duration.ofMinutes(1))
            .validate(d -> d.isZero() || d.compareTo(Duration.ofMillis(100)) >= 0, "be 0 (never) or at least 100ms")
            .doc("How often expired keys are deleted. An expired key counts as absent at once; purging only "
                    + "keeps the table small. 0 turns purging off, e.g. when another process purges the table.");

    /** {@code store.jdbc.purge.batch-size}. */
    public static final ConfigKey<Integer> PURGE_BATCH_SIZE = ConfigKey.integer("purge.batch-size")
            .defaultValue(1000)
            .atLeast(1)
            .atMost(100_000)
            .doc("How many expired keys one delete statement removes at most; a purge repeats it until fewer "
                    + "are left. Smaller batches hold fewer locks for a shorter time.");

    /** {@code store.jdbc.properties}: driver settings passed through. */
    public static final ConfigKey<Map<String, String>> PROPERTIES = ConfigKey.map("properties")
            .doc("JDBC driver properties, passed to the driver as they are, e.g. sslmode: verify-full for "
                    + "PostgreSQL or sslMode: verify-full for MariaDB.");

    private static final ConfigSpec SPEC = ConfigSpec.builder()
            .define(URL)
            .define(USERNAME)
            .define(PASSWORD)
            .define(TABLE)
            .define(SCHEMA)
            .define(POOL_MAXIMUM_SIZE)
            .define(POOL_CONNECTION_TIMEOUT)
            .define(SOCKET_TIMEOUT)
            .define(PURGE_INTERVAL)
            .define(PURGE_BATCH_SIZE)
            .define(PROPERTIES)
            .build();

    /** For {@link ServiceLoader}. */
    public JdbcDedupStoreProvider() {
    }

    @Override
    public String id() {
        return ID;
    }

    @Override
    public ConfigSpec configSpec() {
        return SPEC;
    }

    /**
     * Connects, prepares the table as {@code schema} says and starts purging.
     *
     * @throws StoreException when the database cannot be reached (retriable) or its table does not fit
     *         the store (not retriable); the message names the URL, without password, and what to do
     */
    @Override
    public DedupStore create(PluginConfig config, StoreContext context) {
        Objects.requireNonNull(config, "config");
        String url = config.get(URL);
        Dialect byUrl = Dialect.forUrl(url, config.get(TABLE));
        HikariDataSource dataSource = connect(config, byUrl, new Failures(byUrl, url));
        try {
            Jdbi jdbi = Jdbi.create(dataSource);
            Dialect dialect = forServer(jdbi, byUrl, url);
            Failures failures = new Failures(dialect, url);
            new Schema(jdbi, dialect, failures).prepare(config.get(SCHEMA));
            new SideTableSchema(jdbi, SideTableSchema.outbox(OutboxTable.of(dialect)), failures)
                    .prepare(config.get(SCHEMA));
            new SideTableSchema(jdbi, SideTableSchema.watermarks(WatermarkTable.of(dialect)), failures)
                    .prepare(config.get(SCHEMA));
            new SideTableSchema(jdbi, SideTableSchema.steps(StepTable.of(dialect)), failures)
                    .prepare(config.get(SCHEMA));
            new SideTableSchema(jdbi, SideTableSchema.replies(ReplyTable.of(dialect)), failures)
                    .prepare(config.get(SCHEMA));
            Purger purger = new Purger(jdbi, dialect, config.get(PURGE_BATCH_SIZE), failures);
            purger.start(config.get(PURGE_INTERVAL));
            return new JdbcDedupStore(dataSource, jdbi, dialect, failures, purger);
        } catch (RuntimeException e) {
            dataSource.close();
            throw e;
        }
    }

    private static Dialect forServer(Jdbi jdbi, Dialect dialect, String url) {
        try {
            return jdbi.withHandle(handle -> dialect.forServer(handle.getConnection().getMetaData()));
        } catch (SQLException | RuntimeException e) {
            throw new Failures(dialect, url).of("reading the server's version", e);
        }
    }

    /**
     * The driver timeouts that bound connecting, logging in and each answer, as driver properties, leaving out
     * those the user set in {@code properties} or in the URL's parameters. Without them a server that accepts the
     * connection and never answers would hang the start, or a call, forever: the pool's own timeout only bounds
     * waiting for a pooled connection, not the driver's reads.
     */
    static Map<String, String> driverTimeouts(String url, Duration connect, Duration socket,
            Map<String, String> userProperties) {
        Map<String, String> timeouts = new LinkedHashMap<>(Dialect.forUrl(url, "t").driverTimeouts(connect, socket));
        String query = url.indexOf('?') < 0 ? "" : url.substring(url.indexOf('?')).toLowerCase(Locale.ROOT);
        timeouts.keySet().removeIf(name -> userProperties.keySet().stream().anyMatch(name::equalsIgnoreCase)
                || query.matches(".*[?&;]" + name.toLowerCase(Locale.ROOT) + "=.*"));
        return timeouts;
    }

    private static HikariDataSource connect(PluginConfig config, Dialect dialect, Failures failures) {
        HikariConfig pool = new HikariConfig();
        pool.setPoolName("idem-store-jdbc-" + dialect.table);
        pool.setJdbcUrl(dialect.driverUrl(config.get(URL)));
        pool.setDriverClassName(dialect.driverClassName());
        if (config.get(USERNAME) != null) {
            pool.setUsername(config.get(USERNAME));
        }
        if (config.get(PASSWORD) != null) {
            pool.setPassword(config.get(PASSWORD).reveal());
        }
        pool.setMaximumPoolSize(config.get(POOL_MAXIMUM_SIZE));
        pool.setConnectionTimeout(config.get(POOL_CONNECTION_TIMEOUT).toMillis());
        pool.setAutoCommit(true);
        // MariaDB defaults to REPEATABLE READ, whose gap locks make concurrent upserts deadlock far more.
        pool.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
        driverTimeouts(config.get(URL), config.get(POOL_CONNECTION_TIMEOUT), config.get(SOCKET_TIMEOUT),
                config.get(PROPERTIES)).forEach(pool::addDataSourceProperty);
        config.get(PROPERTIES).forEach(pool::addDataSourceProperty);
        try {
            return new HikariDataSource(pool);
        } catch (RuntimeException e) {
            throw failures.of("connecting", e);
        }
    }
}
