package dev.idem.runtime.internal.pipeline;

/**
 * Message-derived text made safe for one log line: control characters (line breaks above all, which
 * would let a producer forge log lines) are written as {@code \n}, {@code \r}, {@code \t} or
 * {@code \}{@code u00XX}, and a backslash as two. Thread-safe.
 */
final class LogSafe {

    private LogSafe() {
    }

    /** {@code text} with its control characters escaped; the same instance when it has none. */
    static String text(String text) {
        if (text == null) {
            return null;
        }
        int i = 0;
        int length = text.length();
        while (i < length && !needsEscape(text.charAt(i))) {
            i++;
        }
        if (i == length) {
            return text;
        }
        StringBuilder out = new StringBuilder(length + 16).append(text, 0, i);
        for (; i < length; i++) {
            char c = text.charAt(i);
            switch (c) {
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\\' -> out.append("\\\\");
                default -> {
                    if (KeyResolver.isControl(c)) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.toString();
    }

    /** {@code U+000A}. */
    static String codePoint(char c) {
        return String.format("U+%04X", (int) c);
    }

    private static boolean needsEscape(char c) {
        return c == '\\' || KeyResolver.isControl(c);
    }
}
