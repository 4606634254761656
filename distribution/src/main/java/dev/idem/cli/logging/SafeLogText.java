package dev.idem.cli.logging;

import dev.idem.spi.Secret;

/**
 * Text made safe for a log file read by people and by log shippers: credentials in URLs masked
 * ({@link Secret#maskCredentials}), and no line a producer could forge. Every line a log event writes after
 * its first is indented unless it already starts with white space or is a {@code Caused by:} line, so only a
 * real event starts at column 0 with its timestamp. Carriage returns and other control characters but tab and
 * line feed are written as {@code \r} or {@code \}{@code u00XX} (an ANSI escape cannot repaint a terminal).
 */
final class SafeLogText {

    static final String CONTINUATION = "  ";

    private SafeLogText() {
    }

    static String of(String text) {
        if (text == null || text.isEmpty()) {
            return text;
        }
        String masked = Secret.maskCredentials(text);
        int length = masked.length();
        int i = 0;
        while (i < length && !needsWork(masked.charAt(i))) {
            i++;
        }
        if (i == length) {
            return masked;
        }
        StringBuilder out = new StringBuilder(length + 16).append(masked, 0, i);
        for (; i < length; i++) {
            char c = masked.charAt(i);
            if (c == '\n') {
                out.append('\n');
                if (i + 1 < length && startsUnindented(masked, i + 1)) {
                    out.append(CONTINUATION);
                }
            } else if (c == '\r') {
                if (i + 1 < length && masked.charAt(i + 1) == '\n') {
                    continue;
                }
                out.append("\\r");
            } else if (c != '\t' && Character.isISOControl(c)) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static boolean needsWork(char c) {
        return c != '\t' && Character.isISOControl(c);
    }

    private static boolean startsUnindented(String text, int from) {
        char first = text.charAt(from);
        return first != ' ' && first != '\t' && first != '\n' && first != '\r'
                && !text.startsWith("Caused by: ", from);
    }
}
