package dev.idem.bench.scale;

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
