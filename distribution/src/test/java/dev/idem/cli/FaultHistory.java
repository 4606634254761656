package dev.idem.cli;

import dev.idem.cli.fault.FaultHandler;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.assertj.core.api.SoftAssertions;

/**
 * The history a fault IT checks, read back from what {@link FaultHandler} left: its runs (one file per process) and,
 * in transactional mode, its rows. The effects of a message are its rows in transactional mode and its runs in plain
 * mode; a published ID without an effect is lost.
 */
final class FaultHistory {

    /** One finished handler run. */
    record Run(String id, int attempt, long pid, long epochMillis) {
    }

    /**
     * The history against what was published.
     *
     * @param lost published IDs without an effect
     * @param duplicateEffects effects beyond the first of each ID
     * @param reruns runs beyond the first of each ID: the duplicate effects in plain mode; in transactional mode the
     *        runs whose rows rolled back (the process died before the commit)
     * @param unexpected IDs with an effect that were never published
     */
    record Tally(int unique, List<String> lost, long duplicateEffects, long runs, long reruns, List<String> unexpected) {
    }

    private final Path runsDir;
    private final String jdbcUrl;
    private final String table;
    private final String idColumn;

    private FaultHistory(Path runsDir, String jdbcUrl, String table, String idColumn) {
        this.runsDir = runsDir;
        this.jdbcUrl = jdbcUrl;
        this.table = table;
        this.idColumn = idColumn;
    }

    /** Plain mode: each run is an effect. */
    static FaultHistory plain(Path runsDir) {
        return new FaultHistory(runsDir, null, null, null);
    }

    /** Transactional mode: each row of {@code table} (read through {@code jdbcUrl}, credentials included) is an effect. */
    static FaultHistory transactional(Path runsDir, String jdbcUrl, String table) {
        return transactional(runsDir, jdbcUrl, table, "message_id");
    }

    /** Transactional mode: each row of {@code table} is an effect on the ID in its column {@code idColumn}. */
    static FaultHistory transactional(Path runsDir, String jdbcUrl, String table, String idColumn) {
        return new FaultHistory(runsDir, jdbcUrl, table, idColumn);
    }

    boolean transactional() {
        return table != null;
    }

    /** Creates the handler's table, {@code (message_id, pid)}. */
    void createTable() {
        execute("CREATE TABLE " + table + " (message_id VARCHAR(64) NOT NULL, pid BIGINT NOT NULL)");
    }

    /** Every finished run so far; a line still being written is left out. */
    List<Run> runs() {
        List<Run> runs = new ArrayList<>();
        if (!Files.isDirectory(runsDir)) {
            return runs;
        }
        try (Stream<Path> files = Files.list(runsDir)) {
            for (Path file : files.filter(f -> f.getFileName().toString().startsWith("runs-")).toList()) {
                String text = Files.readString(file, StandardCharsets.UTF_8);
                for (String line : text.substring(0, text.lastIndexOf('\n') + 1).split("\n")) {
                    String[] f = line.split("\t");
                    if (f.length == 4) {
                        runs.add(new Run(f[0], Integer.parseInt(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3])));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Reading the runs in " + runsDir, e);
        }
        return runs;
    }

    /** The time of the first run that ended at or after {@code epochMillis}. */
    OptionalLong firstRunAtOrAfter(long epochMillis) {
        return runs().stream().mapToLong(Run::epochMillis).filter(t -> t >= epochMillis).min();
    }

    /** Effects per message ID. */
    Map<String, Integer> effects() {
        Map<String, Integer> effects = new TreeMap<>();
        if (table == null) {
            runs().forEach(r -> effects.merge(r.id(), 1, Integer::sum));
            return effects;
        }
        try (Connection c = DriverManager.getConnection(jdbcUrl); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT " + idColumn + ", COUNT(*) FROM " + table + " GROUP BY " + idColumn)) {
            while (rs.next()) {
                effects.put(rs.getString(1), rs.getInt(2));
            }
        } catch (SQLException e) {
            throw new AssertionError("Reading the effects in " + table + " failed: " + e, e);
        }
        return effects;
    }

    /** How many of {@code ids} have an effect. */
    long withEffect(Set<String> ids) {
        Map<String, Integer> effects = effects();
        return ids.stream().filter(effects::containsKey).count();
    }

    Tally tally(Set<String> published) {
        Map<String, Integer> effects = effects();
        List<Run> runs = runs();
        Map<String, Integer> runsPerId = new TreeMap<>();
        runs.forEach(r -> runsPerId.merge(r.id(), 1, Integer::sum));
        List<String> lost = published.stream().filter(id -> !effects.containsKey(id)).sorted().toList();
        long duplicates = effects.values().stream().mapToLong(n -> n - 1).sum();
        long reruns = runsPerId.values().stream().mapToLong(n -> n - 1).sum();
        List<String> unexpected = effects.keySet().stream().filter(id -> !published.contains(id)).toList();
        return new Tally(published.size(), lost, duplicates, runs.size(), reruns, unexpected);
    }

    void execute(String statement) {
        try (Connection c = DriverManager.getConnection(jdbcUrl); Statement s = c.createStatement()) {
            s.execute(statement);
        } catch (SQLException e) {
            throw new AssertionError(statement + " failed: " + e, e);
        }
    }

    /** No published ID without an effect, no effect of an ID never published; lists at most 20 of either. */
    static void assertNoneLostNorUnexpected(SoftAssertions softly, Tally tally) {
        softly.assertThat(tally.lost().size()).as("published IDs without an effect (lost): %s", first(tally.lost()))
                .isZero();
        softly.assertThat(tally.unexpected().size()).as("effects of IDs never published: %s",
                first(tally.unexpected())).isZero();
    }

    /** At most 20 items, then how many more. */
    static String first(List<String> items) {
        return items.size() <= 20 ? items.toString() : items.subList(0, 20) + " and " + (items.size() - 20) + " more";
    }
}
