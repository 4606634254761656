package dev.idem.runtime.internal.payload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectReader;
import dev.idem.api.NonRetryableException;
import dev.idem.api.PayloadException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The runtime's Jackson for typed payloads: records and POJOs bind without annotations, strictly, and every payload
 * that does not read is a {@link PayloadException} naming the JSON path, the line and column (in characters) and what
 * was expected, never the payload's content. The syntax cases are the ones the order example's hand-written parser
 * refused before the runtime decoded its payloads.
 */
class JsonCodecTest {

    public record OrderEvent(String orderId, String event, String amount) {
    }

    public record Item(String sku, int quantity) {
    }

    public enum Channel { WEB, STORE }

    public record Order(String orderId, int quantity, BigDecimal total, List<Item> items, Instant at, Channel channel,
            Optional<String> note) {
    }

    /** A POJO without annotations: a no-arg constructor and setters. */
    public static final class Customer {
        private String name;
        private int age;

        public String getName() {
            return name;
        }

        public void setName(String name) {
            this.name = name;
        }

        public int getAge() {
            return age;
        }

        public void setAge(int age) {
            this.age = age;
        }
    }

    /** A record whose constructor checks its values, as the order example's does. */
    public record Checked(String orderId) {
        public Checked {
            if (orderId == null || orderId.isBlank()) {
                throw new IllegalArgumentException("orderId is missing");
            }
        }
    }

    private final JsonCodec codec = JsonCodec.of(getClass().getClassLoader(), false);

    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private <T> T decode(String json, Class<T> type) {
        return codec.decode(utf8(json), type);
    }

    private PayloadException refused(String json, Class<?> type) {
        try {
            decode(json, type);
        } catch (PayloadException e) {
            return e;
        }
        throw new AssertionError("expected " + json + " to be refused as " + type.getSimpleName());
    }

    @Test
    void aRecordBindsWithoutAnnotationsWithWhitespaceEscapesAndUnknownProperties() {
        OrderEvent event = decode(" {\n\t\"currency\" : \"EUR\",\r\n \"orderId\":\"o\\u002d1\","
                + " \"event\":\"p\\u0061id\", \"amount\":\"3\", \"note\":\"a \\\"quoted\\\" \\\\ note\"} \n", OrderEvent.class);

        assertThat(event).isEqualTo(new OrderEvent("o-1", "paid", "3"));
    }

    @Test
    void nestedRecordsListsEnumsJavaTimeOptionalAndPojosBind() {
        Order order = decode("""
                {"orderId":"o-1","quantity":2,"total":12.50,"items":[{"sku":"A","quantity":1},{"sku":"B","quantity":1}],
                 "at":"2024-05-01T12:34:56Z","channel":"WEB","note":"leave at the door"}""", Order.class);
        Customer customer = decode("{\"name\":\"Zoë\",\"age\":41}", Customer.class);

        assertThat(order).isEqualTo(new Order("o-1", 2, new BigDecimal("12.50"),
                List.of(new Item("A", 1), new Item("B", 1)), Instant.parse("2024-05-01T12:34:56Z"), Channel.WEB,
                Optional.of("leave at the door")));
        assertThat(customer.getName()).isEqualTo("Zoë");
        assertThat(customer.getAge()).isEqualTo(41);
    }

    /** The inputs the order example's FlatJson refused, each with where it is wrong and what was expected. */
    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
        "``                                                           | $             | 1 | 1  | a JSON value, found an empty payload",
        "`[1]`                                                        | $             | 1 | 1  | an object (OrderEvent), found an array",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":12.50}`  | $.amount      | 1 | 42 | a string, found a decimal number",
        "`{\"orderId\":\"o-1\",\"orderId\":\"o-2\"}`                  | $.orderId     | 1 | 18 | each name once per object",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"1\"} x`| $             | 1 | 47 | the end of the payload after its one JSON value",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"1\"} {}`| $            | 1 | 47 | the end of the payload after its one JSON value",
        "`{\"orderId\":\"o-1\",\"event\":\"paid\",\"amount\":\"1\"`   | $.amount      | 1 | 45 | the rest of the JSON value: the payload ends inside it",
        "`{\"orderId\":\"o-1`                                         | $.orderId     | 1 | 16 | the rest of the JSON value: the payload ends inside it",
        "`{\"orderId\":\"o-\\x\"}`                                    | $.orderId     | 1 | 16 | a valid escape",
        "`{orderId:\"o-1\"}`                                          | $             | 1 | 2  | double-quote to start field name",
        "`{\"orderId\":\"o-1\" \"event\":\"paid\"}`                   | $.orderId     | 1 | 18 | comma to separate Object entries",
        "`{\"orderId\":tru}`                                          | $.orderId     | 1 | 12 | JSON String, Number, Array, Object or token 'null', 'true' or 'false'",
        "`orderId=o-17`                                               | $             | 1 | 1  | JSON String, Number, Array, Object or token 'null', 'true' or 'false'",
    })
    void aMalformedPayloadSaysWhereAndWhatWasExpected(String payload, String path, int line, int column, String expected) {
        PayloadException e = refused(payload, OrderEvent.class);

        assertThat(e).isInstanceOf(NonRetryableException.class);
        assertThat(e.path()).isEqualTo(path);
        assertThat(e.line()).isEqualTo(line);
        assertThat(e.column()).isEqualTo(column);
        assertThat(e.expected()).contains(expected);
        assertThat(e.getMessage()).isEqualTo("Invalid payload at " + path + " (line " + line + ", column " + column
                + "): expected " + e.expected());
    }

    @Test
    void anUnescapedControlCharacterIsNamedByItsCodePoint() {
        PayloadException e = refused("{\"orderId\":\"o-1\nx\"}", OrderEvent.class);

        assertThat(e.path()).isEqualTo("$.orderId");
        assertThat(e.expected()).contains("escaped").endsWith("not U+000A");
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
        "`{\"orderId\":\"o-1\",\"quantity\":\"SECRET-three\"}`         | $.quantity      | 1 | 29 | an integer (int), found a string",
        "`{\"orderId\":\"o-1\",\"quantity\":1.5}`                      | $.quantity      | 1 | 29 | an integer (int), found a decimal number",
        "`{\"orderId\":\"o-1\",\"quantity\":null}`                     | $.quantity      | 1 | 29 | an integer (int), found null",
        "`{\"orderId\":\"o-1\",\"quantity\":99999999999}`              | $.quantity      | 1 | 29 | an integer (int) within its range",
        "`{\"orderId\":17,\"quantity\":1}`                             | $.orderId       | 1 | 12 | a string, found an integer",
        "`{\"orderId\":true,\"quantity\":1}`                           | $.orderId       | 1 | 12 | a string, found a boolean",
        "`{\"quantity\":1,\"total\":\"SECRET\"}`                       | $.total         | 1 | 23 | a number (BigDecimal), found a string",
        "`{\"quantity\":1,\"items\":{\"sku\":\"A\"}}`                  | $.items         | 1 | 23 | an array, found an object",
        "`{\"quantity\":1,\"items\":[{\"sku\":\"A\",\"quantity\":\"2\"}]}` | $.items[0].quantity | 1 | 46 | an integer (int), found a string",
        "`{\"quantity\":1,\"at\":\"SECRET-yesterday\"}`                | $.at            | 1 | 20 | an ISO-8601 string (Instant)",
        "`{\"quantity\":1,\"channel\":\"SECRET-PHONE\"}`               | $.channel       | 1 | 25 | one of [WEB, STORE] (Channel)",
    })
    void aFieldOfTheWrongTypeSaysWhereAndWhatWasExpectedWithoutTheValue(String payload, String path, int line,
            int column, String expected) {
        PayloadException e = refused(payload, Order.class);

        assertThat(e.path()).isEqualTo(path);
        assertThat(e.line()).isEqualTo(line);
        assertThat(e.column()).isEqualTo(column);
        assertThat(e.expected()).contains(expected);
        assertThat(e.getMessage()).doesNotContain("SECRET").doesNotContain("99999999999");
    }

    @Test
    void aMissingPrimitiveIsRefusedLikeANull() {
        PayloadException e = refused("{\"orderId\":\"o-1\"}", Order.class);

        assertThat(e.path()).isEqualTo("$.quantity");
        assertThat(e.expected()).isEqualTo("an integer (int), found nothing");
    }

    @Test
    void aConstructorThatRefusesItsValuesIsNamedButNotQuoted() {
        PayloadException e = refused("{\"orderId\":\" \"}", Checked.class);

        assertThat(e.path()).isEqualTo("$");
        assertThat(e.line()).isEqualTo(1);
        assertThat(e.column()).isEqualTo(1);
        assertThat(e.expected()).isEqualTo("values Checked accepts (its constructor threw IllegalArgumentException)");
        assertThat(Payloads.deadLetterDetail(e)).isEqualTo(e.getMessage() + ": orderId is missing");
    }

    @Test
    void unknownPropertiesAreIgnoredUnlessThePipelineSaysFail() {
        JsonCodec strict = JsonCodec.of(getClass().getClassLoader(), true);
        byte[] payload = utf8("{\n  \"orderId\": \"o-1\",\n  \"SECRET-extra\": 1\n}");

        assertThat(codec.decode(payload, Checked.class)).isEqualTo(new Checked("o-1"));
        assertThatThrownBy(() -> strict.decode(payload, Checked.class))
                .isInstanceOfSatisfying(PayloadException.class, e -> {
                    assertThat(e.path()).isEqualTo("$['SECRET-extra']");
                    assertThat(e.line()).isEqualTo(3);
                    assertThat(e.column()).isEqualTo(19);
                    assertThat(e.expected()).isEqualTo("no property of this name; Checked has [orderId]");
                });
    }

    @Test
    void columnsCountCharactersNotBytesAndLinesCountEveryLineBreak() {
        // é is 2 bytes, 🚀 is 4 bytes and 2 UTF-16 units: one column each.
        PayloadException e = refused("{\"orderId\":\"éé🚀\",\r\n\"quantity\":\"x\"}", Order.class);
        PayloadException lone = refused("{\r\"orderId\":\"é\",\r\"quantity\":1.5}", Order.class);

        assertThat(e.line()).isEqualTo(2);
        assertThat(e.column()).isEqualTo(12);
        assertThat(lone.line()).isEqualTo(3);
        assertThat(lone.column()).isEqualTo(12);
        assertThat(refused("{\"orderId\":\"ü🚀\",\"quantity\":\"x\"}", Order.class).column()).isEqualTo(28);
    }

    @Test
    void unicodeTextRoundTripsAndInvalidUtf8IsRefused() {
        String text = "Zoë 🚀 日本 \u0000";
        Checked decoded = decode("{\"orderId\":\"" + text.replace("\u0000", "\\u0000") + "\"}", Checked.class);
        byte[] invalid = {'{', '"', 'o', 'r', 'd', 'e', 'r', 'I', 'd', '"', ':', '"', (byte) 0xC3, (byte) 0x28, '"', '}'};

        assertThat(decoded.orderId()).isEqualTo(text);
        assertThat(new String(codec.encode(decoded), StandardCharsets.UTF_8)).contains("Zoë 🚀 日本");
        // The bad sequence starts at its 13th byte (0xC3, whose next byte 0x28 continues nothing): column 13.
        assertThatThrownBy(() -> codec.decode(invalid, Checked.class)).isInstanceOfSatisfying(PayloadException.class,
                e -> {
                    assertThat(e.expected()).isEqualTo("UTF-8 text");
                    assertThat(e.line()).isEqualTo(1);
                    assertThat(e.column()).isEqualTo(13);
                });
    }

    @Test
    void invalidUtf8AfterMultiByteCharactersIsPlacedAtItsFirstByteInCharacters() {
        byte[] head = "{\n \"orderId\": \"日本🚀 ".getBytes(StandardCharsets.UTF_8);
        byte[] invalid = new byte[head.length + 4];
        System.arraycopy(head, 0, invalid, 0, head.length);
        invalid[head.length] = (byte) 0xE6;
        invalid[head.length + 1] = (byte) 0x41;
        invalid[head.length + 2] = '"';
        invalid[head.length + 3] = '}';

        // Line 2: a space, "orderId": (10 characters), a space, the quote, 日, 本, 🚀, a space: the bad byte is the 18th.
        assertThatThrownBy(() -> codec.decode(invalid, Checked.class)).isInstanceOfSatisfying(PayloadException.class,
                e -> assertThat(List.of(e.line(), e.column())).containsExactly(2, 18));
    }

    @Test
    void aVeryLargePayloadDecodes() {
        StringBuilder json = new StringBuilder("{\"quantity\":1,\"items\":[");
        int items = 200_000;
        for (int i = 0; i < items; i++) {
            json.append(i == 0 ? "" : ",").append("{\"sku\":\"SKU-").append(i).append("\",\"quantity\":").append(i).append('}');
        }
        json.append("],\"note\":\"").append("x".repeat(5_000_000)).append("\"}");
        assertThat(json.length()).isGreaterThan(8_000_000);

        Order order = decode(json.toString(), Order.class);

        assertThat(order.items()).hasSize(items);
        assertThat(order.items().get(items - 1)).isEqualTo(new Item("SKU-" + (items - 1), items - 1));
        assertThat(order.note()).hasValueSatisfying(note -> assertThat(note).hasSize(5_000_000));
    }

    @Test
    void aPayloadPastTheReadersLimitsIsRefusedNotACrash() {
        String deep = "[".repeat(5_000) + "]".repeat(5_000);
        String longString = "{\"orderId\":\"" + "x".repeat(20_000_001) + "\"}";

        assertThatThrownBy(() -> decode(deep, Object.class)).isInstanceOfSatisfying(PayloadException.class,
                e -> assertThat(e.expected()).isEqualTo("at most 1000 levels of nesting"));
        assertThatThrownBy(() -> decode(longString, Checked.class)).isInstanceOfSatisfying(PayloadException.class,
                e -> {
                    assertThat(e.path()).isEqualTo("$.orderId");
                    assertThat(e.expected()).isEqualTo("a string of at most 20000000 characters");
                });
    }

    @Test
    void theSyntaxCheckReadsOneValueAndNothingAfterIt() {
        codec.check(utf8(" {\"a\":[1,2,{\"b\":null}]} \n"));

        assertThatThrownBy(() -> codec.check(utf8("{\"a\":1} {\"b\":2}"))).isInstanceOfSatisfying(PayloadException.class,
                e -> assertThat(e.getMessage()).isEqualTo("Invalid payload at $ (line 1, column 9): expected the end"
                        + " of the payload after its one JSON value, found an object"));
        assertThatThrownBy(() -> codec.check(utf8("{\"a\":1,\"a\":2}"))).isInstanceOfSatisfying(PayloadException.class,
                e -> assertThat(e.path()).isEqualTo("$.a"));
        assertThatThrownBy(() -> codec.check(utf8("  "))).isInstanceOfSatisfying(PayloadException.class,
                e -> assertThat(e.expected()).isEqualTo("a JSON value, found an empty payload"));
        assertThatThrownBy(() -> codec.check(utf8("{\"a\":[1,\n2,,3]}"))).isInstanceOfSatisfying(PayloadException.class,
                e -> {
                    assertThat(e.path()).as("the element being read").isEqualTo("$.a[2]");
                    assertThat(e.line()).isEqualTo(2);
                    assertThat(e.column()).isEqualTo(3);
                });
    }

    @Test
    void encodingWritesJavaTimeAsIsoStringsAndReadsBack() {
        Order order = new Order("o-1", 2, new BigDecimal("12.50"), List.of(new Item("A", 2)),
                Instant.parse("2024-05-01T12:34:56Z"), Channel.STORE, Optional.empty());

        String json = new String(codec.encode(order), StandardCharsets.UTF_8);

        assertThat(json).contains("\"at\":\"2024-05-01T12:34:56Z\"").contains("\"channel\":\"STORE\"");
        assertThat(codec.decode(json.getBytes(StandardCharsets.UTF_8), Order.class)).isEqualTo(order);
        assertThatThrownBy(() -> codec.encode(new Object())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Cannot write java.lang.Object as JSON");
    }

    @Test
    void aReaderKeptForOneTypeDecodesManyPayloads() {
        ObjectReader reader = codec.readerFor(codec.type(Item.class));

        assertThat(codec.decode(reader, utf8("{\"sku\":\"A\",\"quantity\":1}"))).isEqualTo(new Item("A", 1));
        assertThat(codec.decode(reader, utf8("{\"sku\":\"B\",\"quantity\":2}"))).isEqualTo(new Item("B", 2));
        assertThat(codec.undecodable(codec.type(Item.class))).isNull();
        assertThat(codec.undecodable(codec.type(Runnable.class))).isNotNull();
    }

    @Test
    void pathsQuoteNamesThatAreNotIdentifiersAndAreCut() {
        assertThat(JsonPositions.path(List.of("order", 2, "first name", "it's"))).isEqualTo("$.order[2]['first name']['it\\'s']");
        assertThat(JsonPositions.path(List.of("x".repeat(1000)))).hasSize(JsonPositions.MAX_PATH_LENGTH + 3).endsWith("...");
    }

    @Test
    void aMapOfUnknownShapeDecodesAnyObject() {
        @SuppressWarnings("unchecked")
        Map<String, Object> map = decode("{\"a\":[1,\"b\",null],\"c\":{\"d\":true}}", Map.class);

        assertThat(map).containsEntry("c", Map.of("d", true));
    }
}
