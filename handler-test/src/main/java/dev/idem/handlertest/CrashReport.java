package dev.idem.handlertest;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

/**
 * What a crash test found: one row per pass (the stream without crashes, then a kill at each point), each saying for
 * each effect how many messages ran it as often as the reference pass did (each message delivered once, no crash),
 * more often, or less often; and a one-line {@link #verdict()} to assert.
 *
 * <pre>
 * Crash test of OrderHandler: 12 messages, stream of 24 deliveries (25 % duplicated, each redelivered, shuffled
 * within 4, seed 42), plain mode
 * pass                                         crashes  effect 'charge': as reference  more  fewer  dead letters  unsettled
 * reference (each message once)                      0                             12     0      0             0          0
 * stream, no crash                                   0                             12     0      0             0          0
 * before the handler                                12                             12     0      0             0          0
 * after effect 1 ('charge')                         12                              0    12      0             0          0
 * after step 1 ('charge')                           12                             12     0      0             0          0
 * after the handler, before the key completed       12                             12     0      0             0          0
 * verdict: NOT effectively once: 'charge' ran more often than without crashes after effect 1 ('charge') (12 of 12,
 * e.g. message 'order-0' 2 times, 1 without crashes)
 * </pre>
 *
 * That handler charges in a durable step without a key: a kill after the charge and before its record charges again.
 *
 * Immutable.
 */
public final class CrashReport {

    /** The verdict of a handler that ran every effect as often as without crashes, at every point. */
    public static final String EFFECTIVELY_ONCE = "effectively once";

    /**
     * How the messages of one pass ran one effect, compared with the reference pass.
     *
     * @param same messages that ran it as often as in the reference pass
     * @param more messages that ran it more often: the effect was repeated
     * @param fewer messages that ran it less often: the effect was lost
     */
    public record Tally(int same, int more, int fewer) {
    }

    /**
     * One pass.
     *
     * @param point where each message was killed once (or {@link CrashPoint.Kind#NONE})
     * @param crashes how many messages were killed there (a message whose runs never reach the point is not)
     * @param effects per effect, how the messages ran it
     * @param deadLettered messages dead-lettered in this pass that the reference pass did not dead-letter, or the
     *        other way round
     * @param unsettled messages still neither acknowledged nor dead-lettered when the pass timed out
     * @param worst per effect, a message that ran it more often, and how often; for the message that says why
     */
    public record Row(CrashPoint point, String label, int crashes, Map<String, Tally> effects, int deadLettered,
            int unsettled, Map<String, String> worst) {
    }

    private final String title;
    private final List<Row> rows;
    private final List<String> effects;
    private final int messages;

    CrashReport(String title, List<Row> rows, int messages) {
        this.title = title;
        this.rows = List.copyOf(rows);
        this.messages = messages;
        TreeSet<String> names = new TreeSet<>();
        for (Row row : rows) {
            names.addAll(row.effects().keySet());
        }
        this.effects = List.copyOf(names);
    }

    /** Every pass, the reference first. */
    public List<Row> rows() {
        return rows;
    }

    /** Whether every pass ran every effect of every message as often as the reference pass, and settled alike. */
    public boolean effectivelyOnce() {
        return problems().isEmpty();
    }

    /**
     * One line: {@value #EFFECTIVELY_ONCE}, or {@code NOT effectively once: } and what ran more or less often, or was
     * dead-lettered or left unsettled, at which points and for how many messages.
     */
    public String verdict() {
        List<String> problems = problems();
        return problems.isEmpty() ? EFFECTIVELY_ONCE : "NOT effectively once: " + String.join("; ", problems);
    }

    /**
     * Fails unless {@link #effectivelyOnce()}.
     *
     * @throws AssertionError with the verdict and the whole report
     */
    public void assertEffectivelyOnce() {
        if (!effectivelyOnce()) {
            throw new AssertionError(verdict() + "\n" + this);
        }
    }

    private List<String> problems() {
        List<String> problems = new ArrayList<>();
        for (Row row : rows) {
            for (String effect : effects) {
                Tally tally = row.effects().getOrDefault(effect, new Tally(messages, 0, 0));
                if (tally.more() > 0) {
                    problems.add("'" + effect + "' ran more often than without crashes " + where(row) + " ("
                            + tally.more() + " of " + messages + ", e.g. " + row.worst().get(effect) + ")");
                }
                if (tally.fewer() > 0) {
                    problems.add("'" + effect + "' ran less often than without crashes " + where(row) + " ("
                            + tally.fewer() + " of " + messages + ")");
                }
            }
            if (row.deadLettered() > 0) {
                problems.add(row.deadLettered() + " message(s) dead-lettered otherwise than without crashes "
                        + where(row));
            }
            if (row.unsettled() > 0) {
                problems.add(row.unsettled() + " message(s) never settled " + where(row));
            }
        }
        return problems;
    }

    private static String where(Row row) {
        return row.point().kind() == CrashPoint.Kind.NONE ? "in the " + row.label() : row.label();
    }

    /** The report as a table, the verdict last. */
    @Override
    public String toString() {
        int width = "pass".length();
        for (Row row : rows) {
            width = Math.max(width, row.label().length());
        }
        StringBuilder out = new StringBuilder(title).append('\n');
        out.append(pad("pass", width)).append("  crashes");
        for (String effect : effects) {
            out.append("  effect '").append(effect).append("': as reference  more  fewer");
        }
        out.append("  dead letters  unsettled\n");
        for (Row row : rows) {
            out.append(pad(row.label(), width)).append(String.format("  %7d", row.crashes()));
            for (String effect : effects) {
                Tally t = row.effects().getOrDefault(effect, new Tally(messages, 0, 0));
                String head = "  effect '" + effect + "': as reference";
                out.append(String.format("%" + head.length() + "d  %4d  %5d", t.same(), t.more(), t.fewer()));
            }
            out.append(String.format("  %12d  %9d%n", row.deadLettered(), row.unsettled()));
        }
        return out.append("verdict: ").append(verdict()).toString();
    }

    private static String pad(String text, int width) {
        return text + " ".repeat(Math.max(0, width - text.length()));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CrashReport other && title.equals(other.title) && rows.equals(other.rows);
    }

    @Override
    public int hashCode() {
        return Objects.hash(title, rows);
    }
}
