package dev.idem.bench.camel;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.camel.CamelContext;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.redis.processor.idempotent.SpringRedisIdempotentRepository;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.processor.idempotent.jdbc.JdbcMessageIdRepository;
import org.apache.camel.spi.IdempotentRepository;
import org.apache.camel.support.service.ServiceHelper;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * The Apache Camel side of {@code dev.idem.bench.kafka.KafkaStoreBenchmark}, in its own JVM (Camel 4.17 brings
 * kafka-clients 3.9 and Spring 6; Idem's class path holds kafka-clients 4.x). The benchmark starts it and
 * drives it over standard input and output, one line each way per run, so that one warm JVM serves every
 * round, as Idem's side is one warm JVM too.
 *
 * <p>Arguments: {@code <bootstrap-servers> <consumers> redis <redis-uri>} or
 * {@code <bootstrap-servers> <consumers> postgresql <jdbc-url> <user>}. Each input line
 * {@code run <topic> <group> <records> <repository-name>} starts a new {@link CamelContext} with one route:
 * a {@code kafka:} endpoint on the topic with a new consumer group ({@code autoOffsetReset=earliest},
 * {@code consumersCount} as given, byte-array values, camel-kafka's defaults otherwise: Kafka's auto-commit,
 * 500 records a poll), then Camel's {@code idempotentConsumer} on the {@code message-id} header (bytes in
 * Kafka, as a String) with its defaults (eager, duplicates skipped), around a no-op processor. The
 * repository is {@link SpringRedisIdempotentRepository} (camel-spring-redis: one Redis set named after the
 * repository, a {@link StringRedisTemplate} on a pooled Jedis connection factory) or
 * {@link JdbcMessageIdRepository} (camel-sql: table {@code CAMEL_MESSAGEPROCESSED}, processor name = the
 * repository name, on a HikariCP pool). A step after the idempotent consumer counts every record, duplicate
 * or not. Once {@code records} have passed it the runner answers {@code done <nanos> <processed>
 * <duplicates>}: the nanoseconds from the first record entering the route to the last one leaving it, as
 * Idem's side is timed from the first handler call to the last message settled. It then stops the context
 * and clears the repository's set or rows (not timed). {@code quit} or the end of input exits, dropping
 * {@code CAMEL_MESSAGEPROCESSED} if this runner created it.
 */
public final class CamelRunner {

    private static final String TABLE = "CAMEL_MESSAGEPROCESSED";

    private final String bootstrap;
    private final int consumers;
    private final Store store;

    private CamelRunner(String bootstrap, int consumers, Store store) {
        this.bootstrap = bootstrap;
        this.consumers = consumers;
        this.store = store;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("Usage: CamelRunner <bootstrap-servers> <consumers> redis <redis-uri>"
                    + " | <bootstrap-servers> <consumers> postgresql <jdbc-url> <user>");
            System.exit(2);
        }
        Store store = switch (args[2]) {
            case "redis" -> new RedisStore(URI.create(args[3]));
            case "postgresql" -> new PostgresStore(args[3], args.length > 4 ? args[4] : "postgres");
            default -> throw new IllegalArgumentException("store must be redis or postgresql, not " + args[2]);
        };
        try (store) {
            CamelRunner runner = new CamelRunner(args[0], Integer.parseInt(args[1]), store);
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line = in.readLine(); line != null && !line.equals("quit"); line = in.readLine()) {
                String[] words = line.trim().split(" ");
                if (words.length != 5 || !words[0].equals("run")) {
                    System.err.println("Expected 'run <topic> <group> <records> <repository-name>' or 'quit', got: "
                            + line);
                    System.exit(2);
                }
                long[] result = runner.run(words[1], words[2], Integer.parseInt(words[3]), words[4]);
                System.out.println("done " + result[0] + " " + result[1] + " " + result[2]);
                System.out.flush();
            }
        }
    }

    /** Returns the nanoseconds from the first record to the last one through, the processed and the duplicates. */
    private long[] run(String topic, String group, int records, String repositoryName) throws Exception {
        AtomicLong first = new AtomicLong();
        AtomicLong last = new AtomicLong();
        AtomicLong processed = new AtomicLong();
        AtomicLong through = new AtomicLong();
        IdempotentRepository repository = store.repository(repositoryName);
        CamelContext camel = new DefaultCamelContext();
        camel.getShutdownStrategy().setTimeout(30);
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("kafka:" + topic + "?brokers=" + bootstrap + "&groupId=" + group
                        + "&autoOffsetReset=earliest&consumersCount=" + consumers
                        + "&valueDeserializer=org.apache.kafka.common.serialization.ByteArrayDeserializer")
                        .routeId("camel-bench")
                        .process(exchange -> first.compareAndSet(0, System.nanoTime()))
                        .idempotentConsumer(header("message-id").convertToString(), repository)
                            .process(exchange -> processed.incrementAndGet())
                        .end()
                        .process(exchange -> {
                            if (through.incrementAndGet() == records) {
                                last.set(System.nanoTime());
                            }
                        });
            }
        });
        try {
            camel.start();
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
            while (last.get() == 0) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("Camel routed " + through.get() + " of " + records
                            + " records of " + topic + " in 10 minutes");
                }
                Thread.sleep(1);
            }
            return new long[] {last.get() - first.get(), processed.get(), through.get() - processed.get()};
        } finally {
            camel.stop();
            store.forget(repository, repositoryName);
        }
    }

    /** Where the repositories keep their IDs. */
    private interface Store extends AutoCloseable {

        /** A new repository of its own: no ID another run added is in it. */
        IdempotentRepository repository(String name);

        /**
         * Removes what the run's repository stored, and nothing else: the servers are shared. (Camel's
         * {@code SpringRedisIdempotentRepository.clear()} flushes the whole Redis database, so it is never called.)
         */
        void forget(IdempotentRepository repository, String name) throws Exception;

        @Override
        void close() throws Exception;
    }

    private static final class RedisStore implements Store {

        private final JedisConnectionFactory connections;
        private final StringRedisTemplate template;

        RedisStore(URI uri) {
            RedisStandaloneConfiguration server = new RedisStandaloneConfiguration(uri.getHost(),
                    uri.getPort() < 0 ? 6379 : uri.getPort());
            connections = new JedisConnectionFactory(server);
            connections.afterPropertiesSet();
            connections.start();
            template = new StringRedisTemplate(connections);
        }

        @Override
        public IdempotentRepository repository(String name) {
            return new SpringRedisIdempotentRepository(template, name);
        }

        @Override
        public void forget(IdempotentRepository repository, String name) {
            // The repository keeps its IDs in one Redis set named after it.
            template.delete(name);
        }

        @Override
        public void close() {
            connections.destroy();
        }
    }

    private static final class PostgresStore implements Store {

        private final HikariDataSource dataSource;
        private final boolean createdTable;

        PostgresStore(String url, String user) throws SQLException {
            HikariConfig config = new HikariConfig();
            config.setJdbcUrl(url);
            config.setUsername(user);
            config.setPoolName("camel-bench");
            dataSource = new HikariDataSource(config);
            try (Connection c = dataSource.getConnection(); Statement statement = c.createStatement()) {
                createdTable = !c.getMetaData().getTables(null, null, TABLE.toLowerCase(), null).next();
                statement.execute("CREATE TABLE IF NOT EXISTS " + TABLE + " (processorName VARCHAR(255),"
                        + " messageId VARCHAR(100), createdAt TIMESTAMP, PRIMARY KEY (processorName, messageId))");
            }
        }

        @Override
        public IdempotentRepository repository(String name) {
            JdbcMessageIdRepository repository = new JdbcMessageIdRepository(dataSource, name);
            repository.setCreateTableIfNotExists(false);
            return repository;
        }

        @Override
        public void forget(IdempotentRepository repository, String name) throws Exception {
            // JdbcMessageIdRepository.clear() deletes this processor name's rows only.
            ServiceHelper.startService(repository);
            repository.clear();
            ServiceHelper.stopAndShutdownService(repository);
        }

        @Override
        public void close() throws SQLException {
            try {
                if (createdTable) {
                    try (Connection c = dataSource.getConnection(); Statement statement = c.createStatement()) {
                        statement.execute("DROP TABLE IF EXISTS " + TABLE);
                    }
                }
            } finally {
                dataSource.close();
            }
        }
    }
}
