package dev.idem.store.jdbc;

import dev.idem.spi.StoreKey;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;

/**
 * One key to write (claim or complete), encoded for the table: namespace, id and fingerprint as UTF-8 bytes,
 * durations as microseconds the database adds to its own clock.
 *
 * @param index the request's position in its batch
 * @param leaseMicros the lease from now; {@code null} for a row written completed
 * @param expiresMicros how long from now the row is remembered
 */
record ClaimRow(int index, byte[] namespace, byte[] id, byte[] fingerprint, int state, long token, Long leaseMicros,
        long expiresMicros) implements Comparable<ClaimRow> {

    /** Durations are capped so that now plus one stays within every dialect's timestamp range. */
    static final Duration MAX_DURATION = Duration.ofDays(100L * 365);

    static ClaimRow claim(int index, StoreKey key, String fingerprint, Duration lease, Duration retention, long token) {
        long leaseMicros = Math.max(1L, micros(lease));
        return new ClaimRow(index, namespace(key), id(key), utf8(fingerprint, "fingerprint"), Dialect.CLAIMED,
                token, leaseMicros, leaseMicros + micros(retention));
    }

    static ClaimRow completed(StoreKey key, String fingerprint, Duration retention, long token) {
        return new ClaimRow(0, namespace(key), id(key), utf8(fingerprint, "fingerprint"), Dialect.COMPLETED, token,
                null, micros(retention));
    }

    /**
     * A completion of a batch: the key and the owner's token, and the retention as {@code expiresMicros}.
     *
     * @param index the request's position in its batch
     */
    static ClaimRow completion(int index, StoreKey key, long token, Duration retention) {
        return new ClaimRow(index, namespace(key), id(key), null, Dialect.COMPLETED, token, null, micros(retention));
    }

    /** The same row with another token, for a new try. */
    ClaimRow withToken(long newToken) {
        return new ClaimRow(index, namespace, id, fingerprint, state, newToken, leaseMicros, expiresMicros);
    }

    /** A duration in whole microseconds, rounded up, negative as zero, capped at {@link #MAX_DURATION}. */
    static long micros(Duration d) {
        if (d.isNegative()) {
            return 0;
        }
        if (d.compareTo(MAX_DURATION) > 0) {
            d = MAX_DURATION;
        }
        long nanos = d.toNanos();
        return nanos / 1000 + (nanos % 1000 == 0 ? 0 : 1);
    }

    static byte[] namespace(StoreKey key) {
        byte[] bytes = utf8(key.namespace(), "namespace");
        if (bytes.length > Dialect.MAX_NAMESPACE_BYTES) {
            throw new IllegalArgumentException("The namespace '" + key.namespace() + "' is " + bytes.length
                    + " bytes of UTF-8; the JDBC store holds at most " + Dialect.MAX_NAMESPACE_BYTES);
        }
        return bytes;
    }

    static byte[] id(StoreKey key) {
        byte[] bytes = utf8(key.id(), "key");
        if (bytes.length > StoreKey.MAX_ID_BYTES) {
            throw new IllegalArgumentException("A key of " + bytes.length + " bytes of UTF-8 in namespace '"
                    + key.namespace() + "' exceeds the " + StoreKey.MAX_ID_BYTES + " bytes a store holds");
        }
        return bytes;
    }

    /**
     * UTF-8, refusing unpaired surrogates: {@link String#getBytes} would turn each into '?', so two
     * different keys would be stored as one.
     */
    static byte[] utf8(String text, String what) {
        if (text == null) {
            return null;
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("The " + what + " holds an unpaired surrogate at index " + i
                        + " and is not valid Unicode text: " + text.substring(0, i) + "\uFFFD...");
            }
        }
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** Orders by namespace then id, comparing bytes unsigned: one lock order for every batch. */
    @Override
    public int compareTo(ClaimRow other) {
        int c = Arrays.compareUnsigned(namespace, other.namespace);
        return c != 0 ? c : Arrays.compareUnsigned(id, other.id);
    }

    @Override
    public String toString() {
        return "ClaimRow[" + new String(namespace, StandardCharsets.UTF_8) + " / "
                + new String(id, StandardCharsets.UTF_8) + ", token " + token + "]";
    }
}
