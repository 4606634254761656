package dev.idem.runtime.extract;

import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;
import java.util.Map;

/** Reads a binary-mode CloudEvent's id (and source); see {@link CloudEventsIdExtractorProvider}. */
final class CloudEventsIdExtractor implements IdExtractor {

    /** The id and source headers of each protocol binding, most common first. */
    private static final String[][] BINDINGS = {
        {"ce_id", "ce_source"},
        {"ce-id", "ce-source"},
        {"cloudEvents_id", "cloudEvents_source"},
        {"cloudEvents:id", "cloudEvents:source"},
    };

    private final boolean includeSource;

    CloudEventsIdExtractor(boolean includeSource) {
        this.includeSource = includeSource;
    }

    @Override
    public String extract(InboundMessage message) {
        Map<String, String> headers = message.headers();
        for (String[] binding : BINDINGS) {
            String id = Values.present(headers.get(binding[0]));
            if (id == null) {
                continue;
            }
            if (!includeSource) {
                return id;
            }
            String source = Values.present(headers.get(binding[1]));
            if (source == null) {
                return null;
            }
            if (source.indexOf(' ') >= 0) {
                throw new IllegalArgumentException("CloudEvents header " + binding[1] + " '" + source
                        + "' contains a space; a source must be a URI-reference");
            }
            return source + ' ' + id;
        }
        return null;
    }

    @Override
    public String toString() {
        return includeSource ? "cloudevents (source and id)" : "cloudevents (id)";
    }
}
