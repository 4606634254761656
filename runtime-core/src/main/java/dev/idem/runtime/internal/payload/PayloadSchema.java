package dev.idem.runtime.internal.payload;

import com.fasterxml.jackson.databind.JsonNode;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.SpecificationVersion;
import com.networknt.schema.path.NodePath;
import com.networknt.schema.path.PathType;
import dev.idem.api.PayloadException;
import dev.idem.spi.ConfigException;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * A pipeline's {@code payload.schema}: a JSON Schema file, checked by networknt's json-schema-validator, draft 2020-12
 * unless the file's {@code $schema} names another draft. {@code format} is asserted, not only annotated: whoever
 * writes {@code "format": "date-time"} means it. The file's {@code $ref}s may name other files ({@code file:} IRIs,
 * relative ones resolved beside it) and the drafts' meta-schemas, which the library carries; nothing is fetched
 * over the network, so a check never waits on a web server. Messages are the library's English ones, which quote
 * the schema (a pattern, a bound) but not the payload.
 *
 * <p>Loaded once per pipeline, and by {@code idem check}; thread-safe once loaded.
 */
public final class PayloadSchema {

    /** How many further problems a dead letter mentions by count. */
    private static final int MAX_MORE = 99;

    private final Path file;
    private final Schema schema;

    private PayloadSchema(Path file, Schema schema) {
        this.file = file;
        this.schema = schema;
    }

    /**
     * Reads and compiles the schema in {@code file}, after checking it against its draft's meta-schema.
     *
     * @param key the configuration key that names it, for messages
     * @throws ConfigException naming the file, the key and what is wrong with it
     */
    public static PayloadSchema load(Path file, String key) {
        Path absolute = file.toAbsolutePath().normalize();
        if (!Files.isRegularFile(absolute) || !Files.isReadable(absolute)) {
            throw new ConfigException("The JSON Schema " + absolute + " (" + key + ") " + (Files.exists(absolute)
                    ? "is not a readable file" : "does not exist") + ". Name a readable JSON Schema file (a relative"
                    + " path is resolved against the working directory; ${IDEM_HOME}/conf/... names the installation's)");
        }
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(absolute);
        } catch (IOException e) {
            throw new ConfigException("The JSON Schema " + absolute + " (" + key + ") cannot be read: " + e);
        }
        JsonNode node;
        try {
            node = JsonCodec.of(PayloadSchema.class.getClassLoader(), false).tree(bytes);
        } catch (PayloadException e) {
            throw new ConfigException("The JSON Schema " + absolute + " (" + key + ") is not JSON: "
                    + e.getMessage().replaceFirst("^Invalid payload ", ""));
        }
        Optional<SpecificationVersion> declared = SpecificationVersion.fromSchemaNode(node);
        if (node.has("$schema") && declared.isEmpty()) {
            throw new ConfigException("The JSON Schema " + absolute + " (" + key + ") names the dialect '"
                    + node.get("$schema").asText() + "' in $schema, which is not a JSON Schema draft the validator"
                    + " knows. Use https://json-schema.org/draft/2020-12/schema, or leave $schema out for draft 2020-12");
        }
        SpecificationVersion version = declared.orElse(SpecificationVersion.DRAFT_2020_12);
        SchemaRegistry registry = registry(version);
        List<Error> metaErrors = registry.getSchema(SchemaLocation.of(version.getDialectId())).validate(node);
        if (!metaErrors.isEmpty()) {
            List<String> shown = new ArrayList<>();
            for (Error error : metaErrors.subList(0, Math.min(5, metaErrors.size()))) {
                shown.add(error.getInstanceLocation() + ": " + error.getMessage());
            }
            throw new ConfigException("The JSON Schema " + absolute + " (" + key + ") is not a valid " + version.name()
                    .toLowerCase(Locale.ROOT).replace('_', '-') + " schema: " + String.join("; ", shown)
                    + (metaErrors.size() > 5 ? "; and " + (metaErrors.size() - 5) + " more" : ""));
        }
        try {
            Schema schema = registry.getSchema(SchemaLocation.of(absolute.toUri().toString()), node);
            // Resolves every $ref now, so that a missing file shows at idem check rather than on the first payload.
            schema.initializeValidators();
            return new PayloadSchema(absolute, schema);
        } catch (RuntimeException e) {
            throw new ConfigException("The JSON Schema " + absolute + " (" + key + ") cannot be compiled: "
                    + e.getMessage() + ". Are its $refs files beside it (nothing is fetched over the network)?");
        }
    }

    private static SchemaRegistry registry(SpecificationVersion version) {
        return SchemaRegistry.withDefaultDialect(version, b -> b
                .schemaRegistryConfig(SchemaRegistryConfig.builder()
                        .formatAssertionsEnabled(true)
                        .pathType(PathType.JSON_PATH)
                        .locale(Locale.ROOT)
                        .build())
                .schemaLoader(loader -> loader.resourceLoaders(resources -> resources.add(iri -> {
                    String text = iri.toString();
                    if (!text.startsWith("file:")) {
                        return null;
                    }
                    Path file = Path.of(URI.create(text));
                    return () -> Files.newInputStream(file);
                }))));
    }

    /** The schema file, absolute. */
    public Path file() {
        return file;
    }

    /**
     * Checks a payload's tree against the schema.
     *
     * @param tree the payload as read by {@link JsonCodec#tree}
     * @param payload its bytes, to place the problem
     * @throws PayloadException naming the first problem's path, line and column, and the schema's rule
     */
    public void check(JsonNode tree, byte[] payload) {
        List<Error> errors = schema.validate(tree);
        if (errors.isEmpty()) {
            return;
        }
        Error first = errors.get(0);
        List<Object> segments = segments(first.getInstanceLocation());
        JsonPositions.Found found = JsonPositions.find(payload, segments);
        JsonPositions.Position at = found.token() == null ? JsonPositions.Position.UNKNOWN
                : JsonPositions.position(payload, found.byteOffset());
        int more = errors.size() - 1;
        throw new PayloadException(JsonPositions.path(segments), at.line(), at.column(), "what the schema's "
                + first.getKeyword() + " says: " + first.getMessage()
                + (more == 0 ? "" : " (and " + Math.min(more, MAX_MORE) + (more > MAX_MORE ? "+" : "") + " more"
                        + " problem" + (more == 1 ? "" : "s") + ")"), null);
    }

    private static List<Object> segments(NodePath path) {
        List<Object> segments = new ArrayList<>(path.getNameCount());
        for (int i = 0; i < path.getNameCount(); i++) {
            Object element = path.getElement(i);
            segments.add(element instanceof Integer index ? index : String.valueOf(element));
        }
        return segments;
    }
}
