package dev.idem.runtime.extract;

import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;
import java.util.List;

/** Reads one JSON pointer from the payload; see {@link JsonPointerIdExtractorProvider}. */
final class JsonPointerIdExtractor implements IdExtractor {

    private final Pointer pointer;
    private final JsonLookup lookup;

    JsonPointerIdExtractor(Pointer pointer) {
        this.pointer = pointer;
        this.lookup = new JsonLookup(List.of(pointer));
    }

    @Override
    public String extract(InboundMessage message) {
        return Values.present(lookup.find(message.payload())[0]);
    }

    @Override
    public String toString() {
        return "json-pointer " + pointer;
    }
}
