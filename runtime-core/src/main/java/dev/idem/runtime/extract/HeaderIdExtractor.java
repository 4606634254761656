package dev.idem.runtime.extract;

import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;

/** Reads one header; see {@link HeaderIdExtractorProvider}. */
final class HeaderIdExtractor implements IdExtractor {

    private final String name;

    HeaderIdExtractor(String name) {
        this.name = name;
    }

    @Override
    public String extract(InboundMessage message) {
        return Values.present(message.headers().get(name));
    }

    @Override
    public String toString() {
        return "header " + name;
    }
}
