package dev.idem.bench.scale;

import dev.idem.runtime.config.KeyDigest;
import dev.idem.spi.DedupStore;
import dev.idem.testkit.TestPluginConfig;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code jdbc} store in a place of the run's own: on PostgreSQL a schema {@code idem_scale_<random>} (the
 * store's URL gets {@code currentSchema}), on MariaDB a database of that name. The table is the store's default,
 * {@code idem_keys}, made by the store itself ({@code schema: create}), with its primary key and index.
 */
final class JdbcScaleStore implements ScaleStore {

    /** The store's default table name. */
    static final String TABLE = "idem_keys";

    private final String name;
    private final String adminUrl;
    private final String user;
    private final String place = "idem_scale_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8);

    private JdbcScaleStore(String name, String adminUrl, String user) {
        this.name = name;
        this.adminUrl = adminUrl;
        this.user = user;
    }

    static JdbcScaleStore postgresql() {
        return new JdbcScaleStore("postgresql", System.getenv().getOrDefault("IDEM_BENCH_POSTGRES_URL",
                "jdbc:postgresql://127.0.0.1:5432/test"), "postgres");
    }

    static JdbcScaleStore mariadb() {
        return new JdbcScaleStore("mariadb", System.getenv().getOrDefault("IDEM_BENCH_MARIADB_URL",
                "jdbc:mariadb://127.0.0.1:3306/test"), "root");
    }

    private boolean postgres() {
        return name.equals("postgresql");
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String sizeSource() {
        return postgres()
                ? "pg_total_relation_size('" + place + "." + TABLE + "'): table + indexes + TOAST, as written"
                        + " (autovacuum as the server is configured)"
                : "data_length + index_length of " + place + "." + TABLE + " (information_schema, after ANALYZE"
                        + " TABLE), as written";
    }

    @Override
    public String compaction() {
        return postgres() ? "after VACUUM (FULL, ANALYZE)" : "after OPTIMIZE TABLE";
    }

    @Override
    public DedupStore open() {
        return open(Map.of());
    }

    /** {@link #open()} with more of the store's settings ({@code store.jdbc.<name>}), such as its purge's. */
    DedupStore open(Map<String, Object> settings) {
        try {
            drop();
            execute("CREATE " + (postgres() ? "SCHEMA " : "DATABASE ") + place);
        } catch (SQLException e) {
            throw new IllegalStateException("Could not create " + place + " at " + adminUrl, e);
        }
        return another(settings);
    }

    @Override
    public DedupStore another() {
        return another(Map.of());
    }

    @Override
    public String storeSection() {
        return "{ type: jdbc, jdbc: { url: \"" + storeUrl() + "\", username: " + user + " } }";
    }

    private DedupStore another(Map<String, Object> settings) {
        return ScaleStore.create("jdbc", config -> {
            TestPluginConfig configured = config.with("url", storeUrl()).with("username", user);
            for (Map.Entry<String, Object> setting : settings.entrySet()) {
                configured = configured.with(setting.getKey(), setting.getValue());
            }
            return configured;
        });
    }

    /** Keys written through the SPI first, as the template the bulk fill copies the format of. */
    private static final int TEMPLATE_KEYS = 10_000;
    /** Rows per statement of the bulk fill: one transaction each, and a line of progress. */
    private static final long BULK_STATEMENT = 1_000_000;

    /**
     * On PostgreSQL: {@value #TEMPLATE_KEYS} keys through the SPI when the table has none of the fill's namespace
     * ({@value Workload#NAMESPACE}) yet, then the rest generated
     * by the server ({@code INSERT ... SELECT} over {@code generate_series}), each row as the SPI writes a completed
     * key: the template's namespace, state, attempts and lease, a fresh version 4 UUID as text for the ID, the
     * SHA-256 of a fresh text in unpadded URL-safe Base64 for the fingerprint, a random token, and an expiry a
     * microsecond after the latest one (as a stream's completions come one after another: equal expiries would
     * let the expiry index deduplicate them into far less than a real table's). The rows are checked
     * against the template's shape afterwards. Unlike the SPI (a claim, then its completion), it leaves no dead row
     * versions: the heap is as after a {@code VACUUM FULL}, the indexes as inserts in random key order leave them.
     * Elsewhere, the SPI fill.
     */
    @Override
    public long bulkFill(DedupStore store, long keys) throws Exception {
        if (!postgres() || keys == 0) {
            return ScaleStore.fill(store, keys);
        }
        if (Workload.KEY_DIGEST != KeyDigest.NONE) {
            throw new IllegalArgumentException("The bulk fill writes UUID IDs as text: run it without "
                    + "-Didem.bench.key-digest");
        }
        long start = System.nanoTime();
        long left = keys;
        if (filledRows() == 0) {
            long template = Math.min(keys, TEMPLATE_KEYS);
            ScaleStore.fill(store, template);
            left -= template;
        }
        String table = place + "." + TABLE;
        String insert = """
                INSERT INTO %1$s (namespace, id, state, token, attempts, fingerprint, lease_until, expires_at, starts)
                SELECT t.namespace, convert_to(gen_random_uuid()::text, 'UTF8'), t.state,
                       (random() * 9.2e18)::bigint, t.attempts,
                       convert_to(rtrim(translate(encode(sha256(convert_to(gen_random_uuid()::text || g, 'UTF8')),
                           'base64'), '+/', '-_'), '='), 'UTF8'),
                       t.lease_until, t.expires_at + g * interval '1 microsecond', t.starts
                FROM (SELECT namespace, state, attempts, lease_until, expires_at, starts FROM %1$s
                      WHERE namespace = convert_to('%2$s', 'UTF8') ORDER BY expires_at DESC LIMIT 1) t,
                     generate_series(1, ?) g
                """.formatted(table, Workload.NAMESPACE);
        try (Connection c = connect(); PreparedStatement statement = c.prepareStatement(insert)) {
            while (left > 0) {
                long take = Math.min(left, BULK_STATEMENT);
                statement.setLong(1, take);
                statement.executeUpdate();
                left -= take;
                System.out.printf("%s: bulk fill, %,d keys to go (%.0f s)%n", name, left,
                        (System.nanoTime() - start) / 1e9);
            }
            checkShape(c, table);
        }
        return System.nanoTime() - start;
    }

    /**
     * Every row of the fill's namespace has one shape, the SPI's: one state and attempts, 36-byte IDs, 43-byte
     * fingerprints (the pipelines' runs write namespaces of their own).
     */
    private static void checkShape(Connection c, String table) throws SQLException {
        try (Statement query = c.createStatement(); ResultSet shape = query.executeQuery("""
                SELECT count(DISTINCT namespace), count(DISTINCT state), count(DISTINCT attempts),
                       min(octet_length(id)), max(octet_length(id)),
                       min(octet_length(fingerprint)), max(octet_length(fingerprint)),
                       count(lease_until), count(DISTINCT starts)
                FROM %s WHERE namespace = convert_to('%s', 'UTF8')""".formatted(table, Workload.NAMESPACE))) {
            shape.next();
            String found = String.format("namespaces %d, states %d, attempts %d, ID bytes %d-%d, fingerprint bytes"
                    + " %d-%d, leases %d, starts %d", shape.getLong(1), shape.getLong(2), shape.getLong(3),
                    shape.getLong(4), shape.getLong(5), shape.getLong(6), shape.getLong(7), shape.getLong(8),
                    shape.getLong(9));
            String expected = "namespaces 1, states 1, attempts 1, ID bytes 36-36, fingerprint bytes 43-43, leases 0,"
                    + " starts 1";
            if (!found.equals(expected)) {
                throw new IllegalStateException("The bulk-filled rows differ from the SPI's: " + found
                        + "; expected " + expected);
            }
        }
    }

    @Override
    public String bulkFillNote() {
        return postgres() ? "generated by the server in the SPI's format: no dead row versions, indexes as written"
                : "through the SPI";
    }

    /** The rows of the fills' namespace. */
    private long filledRows() throws SQLException {
        try (Connection c = connect(); Statement query = c.createStatement(); ResultSet rows = query.executeQuery(
                "SELECT count(*) FROM " + place + "." + TABLE + " WHERE namespace = convert_to('" + Workload.NAMESPACE
                        + "', 'UTF8')")) {
            rows.next();
            return rows.getLong(1);
        }
    }

    /** The table's rows: all of them, and those whose {@code expires_at} has passed (which the purge deletes). */
    long[] rows() throws SQLException {
        String expired = postgres() ? "count(*) FILTER (WHERE expires_at < now())" : "COALESCE(SUM(expires_at < NOW(6)), 0)";
        try (Connection c = connect(); Statement query = c.createStatement();
                ResultSet rows = query.executeQuery("SELECT count(*), " + expired + " FROM " + place + "." + TABLE)) {
            rows.next();
            return new long[] {rows.getLong(1), rows.getLong(2)};
        }
    }

    /** A plain {@code VACUUM} of the table (PostgreSQL), as autovacuum runs it; nothing on MariaDB. */
    void vacuum() throws SQLException {
        if (postgres()) {
            execute("VACUUM " + place + "." + TABLE);
        }
    }

    /** The admin URL with the run's schema ({@code currentSchema}) or database (the URL's path) in it. */
    private String storeUrl() {
        if (postgres()) {
            return adminUrl + (adminUrl.contains("?") ? "&" : "?") + "currentSchema=" + place;
        }
        Matcher m = Pattern.compile("^(jdbc:[a-z]+://[^/?]+)(/[^?]*)?(\\?.*)?$").matcher(adminUrl);
        if (!m.matches()) {
            throw new IllegalArgumentException("Cannot put a database into " + adminUrl);
        }
        return m.group(1) + "/" + place + (m.group(3) == null ? "" : m.group(3));
    }

    @Override
    public long size() throws SQLException {
        try (Connection c = connect()) {
            if (postgres()) {
                try (PreparedStatement size = c.prepareStatement("SELECT pg_total_relation_size(?::regclass)")) {
                    size.setString(1, place + "." + TABLE);
                    return single(size);
                }
            }
            try (Statement analyze = c.createStatement()) {
                analyze.execute("ANALYZE TABLE " + place + "." + TABLE);
            }
            try (PreparedStatement size = c.prepareStatement("SELECT data_length + index_length FROM "
                    + "information_schema.tables WHERE table_schema = ? AND table_name = ?")) {
                size.setString(1, place);
                size.setString(2, TABLE);
                return single(size);
            }
        }
    }

    @Override
    public long compactedSize() throws SQLException {
        execute(postgres() ? "VACUUM (FULL, ANALYZE) " + place + "." + TABLE : "OPTIMIZE TABLE " + place + "." + TABLE);
        return size();
    }

    /** What autovacuum (or InnoDB's statistics) would have done after a million writes: statistics, visibility. */
    @Override
    public void settle() throws SQLException {
        execute(postgres() ? "VACUUM (ANALYZE) " + place + "." + TABLE : "ANALYZE TABLE " + place + "." + TABLE);
    }

    @Override
    public void drop() throws SQLException {
        execute(postgres() ? "DROP SCHEMA IF EXISTS " + place + " CASCADE" : "DROP DATABASE IF EXISTS " + place);
    }

    @Override
    public void close() {
    }

    private Connection connect() throws SQLException {
        return DriverManager.getConnection(adminUrl, user, "");
    }

    private void execute(String sql) throws SQLException {
        try (Connection c = connect(); Statement statement = c.createStatement()) {
            statement.execute(sql);
        }
    }

    private static long single(PreparedStatement query) throws SQLException {
        try (ResultSet rows = query.executeQuery()) {
            if (!rows.next()) {
                throw new SQLException("No row for " + query);
            }
            return rows.getLong(1);
        }
    }
}
