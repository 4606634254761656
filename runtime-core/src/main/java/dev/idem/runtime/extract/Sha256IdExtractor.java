package dev.idem.runtime.extract;

import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** Hashes the payload; see {@link Sha256IdExtractorProvider}. */
final class Sha256IdExtractor implements IdExtractor {

    static final Sha256IdExtractor INSTANCE = new Sha256IdExtractor();

    private static final HexFormat HEX = HexFormat.of();

    // One digest per pipeline thread: MessageDigest is not thread-safe, and a fresh instance (or a
    // clone) per message would allocate on the hot path. digest(byte[]) resets it for the next use.
    private static final ThreadLocal<MessageDigest> DIGEST = ThreadLocal.withInitial(Sha256IdExtractor::newDigest);

    private Sha256IdExtractor() {
    }

    static MessageDigest newDigest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            // Every Java platform must provide SHA-256.
            throw new IllegalStateException("This JVM has no SHA-256", e);
        }
    }

    @Override
    public String extract(InboundMessage message) {
        return HEX.formatHex(DIGEST.get().digest(message.payload()));
    }

    @Override
    public String toString() {
        return "sha256";
    }
}
