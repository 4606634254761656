package dev.idem.runtime.extract;

import java.util.ArrayList;
import java.util.List;

/**
 * A parsed RFC 6901 JSON pointer: {@code /items/0/id}, with {@code ~1} for '/' and {@code ~0} for '~'
 * inside a token. Immutable.
 *
 * <p>The empty pointer (the whole document) is not accepted: a whole document is no idempotency key;
 * {@code sha256} is the extractor for that.
 */
final class Pointer {

    /** What a valid pointer looks like, completing "must ...". */
    static final String RULE = "be a JSON pointer starting with '/', such as /orderId or /items/0/id"
            + " (write '/' inside a name as ~1 and '~' as ~0)";

    private final String text;
    private final List<String> tokens;

    private Pointer(String text, List<String> tokens) {
        this.text = text;
        this.tokens = tokens;
    }

    /**
     * @throws IllegalArgumentException saying what is wrong, e.g. a '~' not followed by 0 or 1
     */
    static Pointer parse(String text) {
        if (text == null || !text.startsWith("/")) {
            throw new IllegalArgumentException("must start with '/' (a JSON pointer such as /orderId)");
        }
        List<String> tokens = new ArrayList<>();
        StringBuilder token = new StringBuilder();
        for (int i = 1; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '/') {
                tokens.add(token.toString());
                token.setLength(0);
            } else if (c == '~') {
                char next = i + 1 < text.length() ? text.charAt(i + 1) : ' ';
                if (next != '0' && next != '1') {
                    throw new IllegalArgumentException("has a '~' not followed by 0 or 1;"
                            + " write '~' as ~0 and '/' as ~1");
                }
                token.append(next == '0' ? '~' : '/');
                i++;
            } else {
                token.append(c);
            }
        }
        tokens.add(token.toString());
        return new Pointer(text, List.copyOf(tokens));
    }

    static boolean isValid(String text) {
        try {
            parse(text);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** The unescaped reference tokens: {@code /a~1b/0} → {@code [a/b, 0]}. */
    List<String> tokens() {
        return tokens;
    }

    /** The array index a token denotes ({@code 0}, {@code 12}; never {@code 01} or {@code -}), or -1. */
    static int arrayIndex(String token) {
        if (token.isEmpty() || token.length() > 9 || (token.length() > 1 && token.charAt(0) == '0')) {
            return -1;
        }
        for (int i = 0; i < token.length(); i++) {
            if (token.charAt(i) < '0' || token.charAt(i) > '9') {
                return -1;
            }
        }
        return Integer.parseInt(token);
    }

    @Override
    public String toString() {
        return text;
    }
}
