package dev.idem.spi;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A configuration value that must never be printed: passwords, tokens, keys.
 * {@link #toString()} masks it; only {@link #reveal()} returns the value.
 */
public final class Secret {

    private static final String MASK = "******";

    private static final Pattern USER_INFO_PASSWORD = Pattern.compile("(//[^/@:?;\\s]*:)[^/@\\s]*@");
    /** Redis clients read a user-info without a colon ({@code redis://secret@host}) as a password alone. */
    private static final Pattern REDIS_USER_INFO = Pattern.compile("(?i)(redis[a-z-]*://)[^/@:\\s]+@");
    /**
     * A password-like parameter of a URL ({@code ?password=}, {@code ;password=}) or of a libpq-style connection
     * string of {@code keyword=value} pairs ({@code host=db password=secret}, {@code password = 'a b'}).
     */
    private static final Pattern PASSWORD_PARAMETER = Pattern.compile(
            "(?i)((?:^|[?&;\\s])(?:password|passwd|pwd|passphrase|secret|token|sslpassword|sslkeypassword"
                    + "|access[-_]?key)\\s*=\\s*)('(?:[^'\\\\]|\\\\.)*'?|[^&;\\s]*)");

    private final String value;

    public Secret(String value) {
        this.value = Objects.requireNonNull(value, "value");
    }

    /** The secret itself; pass it straight to the client that needs it. */
    public String reveal() {
        return value;
    }

    @Override
    public String toString() {
        return MASK;
    }

    /**
     * {@code text} with the credentials of any URL in it masked, for a message, a log line or printed
     * configuration: the password of a user-info ({@code amqp://user:******@host}), a Redis user-info that is
     * a password alone ({@code redis://******@host}), password-like query or JDBC parameters
     * ({@code ?password=******}, {@code ;password=******}) and the password of a libpq-style connection string
     * ({@code host=db password=******}, a quoted value included). Text without them is returned as it is.
     * Thread-safe; {@code null} stays {@code null}.
     */
    public static String maskCredentials(String text) {
        if (text == null || text.indexOf('=') < 0 && text.indexOf('@') < 0) {
            return text;
        }
        String masked = PASSWORD_PARAMETER.matcher(text).replaceAll("$1" + MASK);
        masked = USER_INFO_PASSWORD.matcher(masked).replaceAll("$1" + MASK + "@");
        return REDIS_USER_INFO.matcher(masked).replaceAll("$1" + MASK + "@");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Secret other && other.value.equals(value);
    }

    @Override
    public int hashCode() {
        return value.hashCode();
    }
}
