package dev.idem.runtime.extract;

import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;
import java.util.HexFormat;

/** Hashes the payload; see {@link Sha256IdExtractorProvider}. */
final class Sha256IdExtractor implements IdExtractor {

    static final Sha256IdExtractor INSTANCE = new Sha256IdExtractor();

    private static final HexFormat HEX = HexFormat.of();

    private Sha256IdExtractor() {
    }

    @Override
    public String extract(InboundMessage message) {
        return HEX.formatHex(PayloadHash.sha256(message.payload()));
    }

    @Override
    public String toString() {
        return "sha256";
    }
}
