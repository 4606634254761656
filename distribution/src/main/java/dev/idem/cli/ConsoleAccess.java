package dev.idem.cli;

import dev.idem.spi.Secret;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Who may use the console, and how an action proves it came from the console's own page.
 *
 * <ul>
 *   <li>A request is <em>authenticated</em> by {@code Authorization: Bearer <token>} (scripts) or by the session
 *       cookie the login form sets once the token was typed in (the page). Without a configured token nobody is.</li>
 *   <li>On a loopback host reading is open to every local process, as {@code /metrics} is; off it (the
 *       configuration then requires a token) every page and API call must be authenticated.</li>
 *   <li>An action (a POST) must be authenticated, whatever the host. Through the cookie it must also carry the
 *       session's CSRF token in {@link #CSRF_HEADER}: another site's page can make the browser send the cookie, but it
 *       can neither read the token nor set the header without the console's consent (no CORS is answered). A bearer
 *       token is never sent by a browser on its own, so a call that carries one needs no CSRF token.</li>
 * </ul>
 *
 * <p>Tokens are compared in constant time. Sessions live {@link #SESSION_LIFETIME} in memory, at most
 * {@link #MAX_SESSIONS} (the oldest go first); a restart logs everyone out. Thread-safe.
 */
final class ConsoleAccess {

    static final String COOKIE = "idem-console";
    static final String CSRF_HEADER = "X-Idem-Csrf";
    static final Duration SESSION_LIFETIME = Duration.ofHours(8);
    static final int MAX_SESSIONS = 256;

    /** How a request proved who it is. */
    enum Proof {
        /** Nothing: a read on a loopback host, or refused. */
        NONE,
        /** {@code Authorization: Bearer} with the token. */
        BEARER,
        /** The login form's session cookie. */
        SESSION
    }

    private record Session(String csrf, long expiresAtNanos) {
    }

    private static final SecureRandom RANDOM = new SecureRandom();

    private final byte[] tokenDigest;
    private final boolean loopback;
    private final LongSupplier nanoTicker;
    private final Map<String, Session> sessions = new ConcurrentHashMap<>();

    /**
     * @param token the configured token, or {@code null}: nobody authenticates, so nothing is acted on
     * @param loopback whether the ops port is bound to a loopback address only
     */
    ConsoleAccess(Secret token, boolean loopback, LongSupplier nanoTicker) {
        this.tokenDigest = token == null ? null : sha256(token.reveal());
        this.loopback = loopback;
        this.nanoTicker = nanoTicker;
    }

    boolean tokenConfigured() {
        return tokenDigest != null;
    }

    /** Whether a request that proved nothing may read. */
    boolean openForReading() {
        return loopback;
    }

    /** Whether {@code candidate} is the configured token; false when none is configured. */
    boolean tokenMatches(String candidate) {
        return tokenDigest != null && candidate != null && MessageDigest.isEqual(tokenDigest, sha256(candidate));
    }

    /**
     * @param authorization the {@code Authorization} header, or {@code null}
     * @param sessionId the session cookie's value, or {@code null}
     */
    Proof proof(String authorization, String sessionId) {
        if (authorization != null && authorization.regionMatches(true, 0, "Bearer ", 0, 7)
                && tokenMatches(authorization.substring(7).strip())) {
            return Proof.BEARER;
        }
        return session(sessionId) != null ? Proof.SESSION : Proof.NONE;
    }

    /** The CSRF token of a live session, or {@code null}. */
    String csrf(String sessionId) {
        Session s = session(sessionId);
        return s == null ? null : s.csrf();
    }

    /** Whether {@code presented} is the CSRF token of the live session {@code sessionId}. */
    boolean csrfMatches(String sessionId, String presented) {
        Session s = session(sessionId);
        return s != null && presented != null && MessageDigest.isEqual(s.csrf().getBytes(StandardCharsets.UTF_8),
                presented.getBytes(StandardCharsets.UTF_8));
    }

    /** Opens a session for someone who typed the token in; returns its ID, for the cookie. */
    String open() {
        long now = nanoTicker.getAsLong();
        sessions.values().removeIf(s -> s.expiresAtNanos() - now <= 0);
        while (sessions.size() >= MAX_SESSIONS) {
            Iterator<Map.Entry<String, Session>> oldest = sessions.entrySet().stream()
                    .sorted(Map.Entry.comparingByValue((a, b) -> Long.compare(a.expiresAtNanos(), b.expiresAtNanos())))
                    .iterator();
            if (!oldest.hasNext()) {
                break;
            }
            sessions.remove(oldest.next().getKey());
        }
        String id = randomToken();
        sessions.put(id, new Session(randomToken(), now + SESSION_LIFETIME.toNanos()));
        return id;
    }

    void close(String sessionId) {
        if (sessionId != null) {
            sessions.remove(sessionId);
        }
    }

    private Session session(String sessionId) {
        if (sessionId == null) {
            return null;
        }
        Session s = sessions.get(sessionId);
        if (s == null) {
            return null;
        }
        if (s.expiresAtNanos() - nanoTicker.getAsLong() <= 0) {
            sessions.remove(sessionId, s);
            return null;
        }
        return s;
    }

    /** 32 random bytes, URL-safe base64: unguessable, and safe in a cookie and a header. */
    static String randomToken() {
        byte[] bytes = new byte[32];
        RANDOM.nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    private static byte[] sha256(String text) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("Every JDK has SHA-256", e);
        }
    }
}
