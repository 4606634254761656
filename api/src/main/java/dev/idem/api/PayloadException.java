package dev.idem.api;

/**
 * A payload that cannot be read as the handler wants it: not the pipeline's {@code payload.format}, against its
 * {@code payload.schema}, or not decodable into the handler's payload type. The runtime dead-letters the message with
 * cause {@code invalid-payload}, without retrying it, and releases its key.
 *
 * <p>It says where and what, never the payload's content (payloads may hold personal data, and this message is
 * logged): the JSON path ({@code $.items[2].sku}), the line and column in the payload and what was expected there,
 * such as {@code Invalid payload at $.amount (line 1, column 42): expected a number (int), found a string}.
 * Thrown by {@link Message#payloadAs}, and by a handler's own {@link PayloadCodec} that wants to name a position.
 */
public class PayloadException extends NonRetryableException {

    private static final long serialVersionUID = 1L;

    private final String path;
    private final int line;
    private final int column;
    private final String expected;

    /**
     * @param path where in the payload, as a JSON path ({@code $} for the whole payload, {@code $.order.items[2]}),
     *        or {@code null} for a payload read as a whole (text, bytes)
     * @param line the line in the payload, from 1; 0 when unknown
     * @param column the column in that line, in characters from 1; 0 when unknown
     * @param expected what the payload should have held there, such as {@code a number (int)}; not {@code null}
     * @param cause what the decoder threw, or {@code null}
     */
    public PayloadException(String path, int line, int column, String expected, Throwable cause) {
        super(describe(path, line, column, expected), cause);
        this.path = path;
        this.line = Math.max(0, line);
        this.column = Math.max(0, column);
        this.expected = expected;
    }

    /** The JSON path of the problem ({@code $.amount}), or {@code null} when the payload is read as a whole. */
    public String path() {
        return path;
    }

    /** The line of the problem in the payload, from 1; 0 when unknown. */
    public int line() {
        return line;
    }

    /** The column of the problem in its line, in characters from 1; 0 when unknown. */
    public int column() {
        return column;
    }

    /** What was expected there, such as {@code a number (int)}. */
    public String expected() {
        return expected;
    }

    private static String describe(String path, int line, int column, String expected) {
        StringBuilder s = new StringBuilder("Invalid payload");
        if (path != null) {
            s.append(" at ").append(path);
        }
        if (line > 0) {
            s.append(path != null ? " (" : " at ").append("line ").append(line);
            if (column > 0) {
                s.append(", column ").append(column);
            }
            if (path != null) {
                s.append(')');
            }
        }
        return s.append(": expected ").append(expected).toString();
    }
}
