package dev.idem.adapter.kafka;

import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * A record's headers as the read-only map of a delivery, values decoded as UTF-8 (a {@code null} value as the empty
 * string); for a repeated name the last value wins, at the place of the name's first appearance. A look-up by name
 * decodes that header alone, so the pipeline's usual reads (the idempotency key's header, the trace context) build
 * no map; the whole map is built once, on the first read that needs it (iteration, size, equality).
 *
 * <p>Thread-safe for reads, as long as nobody changes the record's headers: the intake and a worker may read one
 * delivery's headers at once.
 */
final class KafkaHeaderMap extends AbstractMap<String, String> {

    private final Headers headers;
    private volatile Map<String, String> decoded;

    KafkaHeaderMap(Headers headers) {
        this.headers = headers;
    }

    @Override
    public String get(Object name) {
        Map<String, String> all = decoded;
        if (all != null) {
            return all.get(name);
        }
        if (!(name instanceof String key)) {
            return null;
        }
        Header header = headers.lastHeader(key);
        return header == null ? null : text(header.value());
    }

    @Override
    public boolean containsKey(Object name) {
        return name instanceof String key && headers.lastHeader(key) != null;
    }

    @Override
    public boolean isEmpty() {
        return !headers.iterator().hasNext();
    }

    @Override
    public int size() {
        return all().size();
    }

    @Override
    public Set<Entry<String, String>> entrySet() {
        return all().entrySet();
    }

    private Map<String, String> all() {
        Map<String, String> all = decoded;
        if (all == null) {
            Map<String, String> out = new LinkedHashMap<>();
            for (Header h : headers) {
                out.put(h.key(), text(h.value()));
            }
            all = Collections.unmodifiableMap(out);
            decoded = all;
        }
        return all;
    }

    private static String text(byte[] value) {
        return value == null ? "" : new String(value, StandardCharsets.UTF_8);
    }
}
