package dev.idem.runtime.internal.payload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.api.PayloadException;
import dev.idem.spi.ConfigException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code payload.schema}: a draft 2020-12 JSON Schema file, loaded and checked against the meta-schema once, then
 * every payload checked against it, each problem placed by JSON path, line and column without the payload's content.
 */
class PayloadSchemaTest {

    private static final String KEY = "pipelines.orders.payload.schema";

    @TempDir
    Path dir;

    private final JsonCodec codec = JsonCodec.of(getClass().getClassLoader(), false);

    private Path file(String name, String json) throws IOException {
        return Files.writeString(dir.resolve(name), json);
    }

    private PayloadSchema orders() throws IOException {
        file("item.schema.json", """
                {"type": "object", "required": ["sku"],
                 "properties": {"sku": {"type": "string", "pattern": "^SKU-[0-9]+$"}, "quantity": {"type": "integer", "minimum": 1}}}
                """);
        return PayloadSchema.load(file("order.schema.json", """
                {
                  "$schema": "https://json-schema.org/draft/2020-12/schema",
                  "type": "object",
                  "required": ["orderId", "amount"],
                  "properties": {
                    "orderId": {"type": "string", "minLength": 3},
                    "amount": {"type": "string", "pattern": "^[0-9]+(\\\\.[0-9]{1,2})?$"},
                    "placedAt": {"type": "string", "format": "date-time"},
                    "items": {"type": "array", "items": {"$ref": "item.schema.json"}},
                    "total": {"type": "number", "multipleOf": 0.01}
                  }
                }
                """), KEY);
    }

    private PayloadException violation(PayloadSchema schema, String json) {
        byte[] payload = json.getBytes(StandardCharsets.UTF_8);
        try {
            schema.check(codec.tree(payload), payload);
        } catch (PayloadException e) {
            return e;
        }
        throw new AssertionError("expected a violation: " + json);
    }

    @Test
    void aPayloadThatMatchesPasses() throws IOException {
        PayloadSchema schema = orders();
        byte[] payload = """
                {"orderId": "o-17", "amount": "12.50", "placedAt": "2024-05-01T12:34:56Z",
                 "items": [{"sku": "SKU-1", "quantity": 2}], "total": 12.35}""".getBytes(StandardCharsets.UTF_8);

        schema.check(codec.tree(payload), payload);
    }

    @Test
    void aViolationNamesThePathThePositionAndTheRuleNotTheValue() throws IOException {
        PayloadSchema schema = orders();

        PayloadException pattern = violation(schema, "{\"orderId\": \"o-17\",\n \"amount\": \"SECRET,50\"}");
        PayloadException nested = violation(schema,
                "{\"orderId\":\"o-17\",\"amount\":\"1\",\"items\":[{\"sku\":\"SKU-1\"},{\"sku\":\"SECRET\"}]}");
        PayloadException format = violation(schema, "{\"orderId\":\"o-17\",\"amount\":\"1\",\"placedAt\":\"SECRET-yesterday\"}");
        PayloadException required = violation(schema, "{\"orderId\": \"o-17\"}");
        PayloadException type = violation(schema, "{\"orderId\": \"o-17\", \"amount\": 12.5}");

        assertThat(pattern.path()).isEqualTo("$.amount");
        assertThat(pattern.line()).isEqualTo(2);
        assertThat(pattern.column()).isEqualTo(12);
        assertThat(pattern.expected()).isEqualTo("what the schema's pattern says: does not match the regex pattern"
                + " ^[0-9]+(\\.[0-9]{1,2})?$");
        assertThat(nested.path()).isEqualTo("$.items[1].sku");
        assertThat(nested.column()).isEqualTo(64);
        assertThat(format.expected()).contains("format").contains("date-time");
        assertThat(required.path()).isEqualTo("$");
        assertThat(required.column()).isEqualTo(1);
        assertThat(required.expected()).isEqualTo("what the schema's required says: required property 'amount' not found");
        assertThat(type.expected()).isEqualTo("what the schema's type says: number found, string expected");
        for (PayloadException e : new PayloadException[] {pattern, nested, format, required, type}) {
            assertThat(e.getMessage()).doesNotContain("SECRET");
        }
    }

    @Test
    void decimalsAreComparedExactly() throws IOException {
        PayloadSchema schema = orders();

        assertThat(violation(schema, "{\"orderId\":\"o-17\",\"amount\":\"1\",\"total\":0.105}").expected())
                .contains("multipleOf");
    }

    @Test
    void severalProblemsAreCounted() throws IOException {
        PayloadException e = violation(orders(), "{\"orderId\": \"x\", \"amount\": 1, \"items\": 3}");

        assertThat(e.expected()).endsWith("(and 2 more problems)");
    }

    @Test
    void aMissingFileIsNamedWithItsKey() {
        assertThatThrownBy(() -> PayloadSchema.load(dir.resolve("nope.json"), KEY))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(dir.resolve("nope.json").toString())
                .hasMessageContaining(KEY)
                .hasMessageContaining("does not exist");
    }

    @Test
    void aFileThatIsNotJsonSaysWhere() throws IOException {
        Path bad = file("bad.json", "{\n  \"type\": \"object\",\n  \"properties\": {]\n}");

        assertThatThrownBy(() -> PayloadSchema.load(bad, KEY))
                .isInstanceOf(ConfigException.class)
                .hasMessageEndingWith("is not JSON: at $.properties (line 3, column 18): expected '}' to close the object first");
    }

    @Test
    void aSchemaTheMetaSchemaRefusesIsRefused() throws IOException {
        Path bad = file("bad.json", "{\"type\": \"objekt\", \"minimum\": \"1\"}");

        assertThatThrownBy(() -> PayloadSchema.load(bad, KEY))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("is not a valid draft-2020-12 schema")
                .hasMessageContaining("$.type")
                .hasMessageContaining("$.minimum");
    }

    @Test
    void anUnknownDialectIsRefused() throws IOException {
        Path bad = file("bad.json", "{\"$schema\": \"https://example.com/my-dialect\", \"type\": \"object\"}");

        assertThatThrownBy(() -> PayloadSchema.load(bad, KEY))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("names the dialect 'https://example.com/my-dialect'");
    }

    @Test
    void anOlderDraftNamedInTheFileIsUsed() throws IOException {
        PayloadSchema draft7 = PayloadSchema.load(file("d7.json", """
                {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "string"}]}
                """), KEY);

        assertThat(violation(draft7, "[1]").path()).isEqualTo("$[0]");
    }

    @Test
    void aRefToAMissingFileOrTheNetworkFailsAtLoadNotOnAPayload() throws IOException {
        Path missing = file("missing-ref.json", "{\"properties\": {\"a\": {\"$ref\": \"absent.json\"}}}");
        Path remote = file("remote-ref.json", "{\"properties\": {\"a\": {\"$ref\": \"https://example.com/a.json\"}}}");

        assertThatThrownBy(() -> PayloadSchema.load(missing, KEY)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("cannot be compiled");
        assertThatThrownBy(() -> PayloadSchema.load(remote, KEY)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("cannot be compiled")
                .hasMessageContaining("nothing is fetched over the network");
    }
}
