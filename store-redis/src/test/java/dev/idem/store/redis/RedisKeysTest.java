package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.StoreKey;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Key encoding, slot grouping and duration conversion, without a server. */
class RedisKeysTest {

    private final RedisKeys keys = new RedisKeys("idem:");

    /** Pinned: a packed completion's bucket follows this hash, in every release that reads or writes one. */
    @Test
    void bucketHashOfAnIdNeverChanges() {
        assertThat(java.util.HexFormat.of().formatHex(RedisKeys.hashedField(
                "order-1".getBytes(StandardCharsets.UTF_8)))).isEqualTo("f61e80ab" + java.util.HexFormat.of()
                .formatHex("order-1".getBytes(StandardCharsets.UTF_8)));
        assertThat(java.util.HexFormat.of().formatHex(RedisKeys.hashedField(
                "f47ac10b-58cc-4372-a567-0e02b2c3d479".getBytes(StandardCharsets.UTF_8)), 0, 4)).isEqualTo("524b18a4");
    }

    @Test
    void aNamespacesFamilyOfBucketsIsNamedApartFromItsMessageKeysAndFoundByItsPattern() {
        StoreKey key = new StoreKey("payments", "order-1");
        byte[] id = "order-1".getBytes(StandardCharsets.UTF_8);
        byte[] message = keys.encode(key);

        byte[] family = keys.namespaceFamilyOf(message, id);
        assertThat(new String(family, StandardCharsets.UTF_8)).isEqualTo("idem:p:{0}:8:payments:");
        byte[] onSlot = keys.familyOf(message, id);
        assertThat(io.lettuce.core.cluster.SlotHash.getSlot(onSlot))
                .isEqualTo(io.lettuce.core.cluster.SlotHash.getSlot(message));
        assertThat(keys.isPacked(family)).isTrue();
        assertThat(keys.isPacked(message)).isFalse();
        byte[] bucket = (new String(onSlot, StandardCharsets.UTF_8) + "12").getBytes(StandardCharsets.UTF_8);
        assertThat(keys.isBucketOf(bucket, "payments")).isTrue();
        assertThat(keys.isBucketOf(onSlot, "payments")).as("the family key itself").isFalse();
        assertThat(keys.isBucketOf(bucket, "payment")).isFalse();
        assertThat(keys.isBucketOf("idem:p:{0}:8:payments:12".getBytes(StandardCharsets.UTF_8), "payments")).isTrue();
        assertThat(keys.isBucketOf("idem:p:{0}:9:payments2:12".getBytes(StandardCharsets.UTF_8), "payments"))
                .isFalse();
        assertThat(new String(keys.bucketPattern("pay*"), StandardCharsets.UTF_8))
                .isEqualTo("idem:p:{*}:4:pay\\*:*");
    }

    @Test
    void keyIsPrefixNamespaceByteLengthNamespaceAndId() {
        assertThat(text(keys.encode(new StoreKey("payments", "order-42")))).isEqualTo("idem:8:payments:order-42");
        assertThat(text(keys.encode(new StoreKey("", "")))).isEqualTo("idem:0::");
        assertThat(text(keys.encode(new StoreKey("caf\u00e9", "x")))).isEqualTo("idem:5:caf\u00e9:x");
    }

    @Test
    void namespaceAndIdCannotBeShiftedIntoEachOther() {
        List<StoreKey> near = List.of(new StoreKey("a:b", "c"), new StoreKey("a", "b:c"), new StoreKey("a:", "b:c"),
                new StoreKey("1:a", "b"), new StoreKey("", "1:a:b"), new StoreKey("a\0b", "c"), new StoreKey("a", "b\0c"));

        assertThat(near.stream().map(keys::encode).map(RedisKeysTest::text).distinct()).hasSize(near.size());
    }

    @Test
    void wellFormedTextIsPlainUtf8() {
        for (String text : List.of("plain", "caf\u00e9", "\u6f22\u5b57", "\uD83D\uDE00 party", "nul\0here", "\uFFFF")) {
            assertThat(RedisKeys.utf8(text)).as(text).isEqualTo(text.getBytes(StandardCharsets.UTF_8));
        }
    }

    @Test
    void loneSurrogatesAreEncodedEachOnItsOwnNotReplaced() {
        byte[] high = RedisKeys.utf8("a\uD800");
        byte[] otherHigh = RedisKeys.utf8("a\uD801");
        byte[] low = RedisKeys.utf8("\uDC00a");

        assertThat(high).isEqualTo(new byte[] {'a', (byte) 0xED, (byte) 0xA0, (byte) 0x80});
        assertThat(otherHigh).isNotEqualTo(high);
        assertThat(low).isEqualTo(new byte[] {(byte) 0xED, (byte) 0xB0, (byte) 0x80, 'a'});
    }

    @Test
    void batchIsGroupedBySlotKeepingRequestOrderWithinEachGroup() {
        byte[][] batch = new byte[200][];
        for (int i = 0; i < batch.length; i++) {
            batch[i] = keys.encode(new StoreKey("ns", "order-" + (i % 150)));
        }

        int[][] groups = RedisDedupStore.bySlot(batch);

        assertThat(Arrays.stream(groups).mapToInt(g -> g.length).sum()).isEqualTo(batch.length);
        for (int[] group : groups) {
            int slot = SlotHash.getSlot(batch[group[0]]);
            for (int j = 0; j < group.length; j++) {
                assertThat(SlotHash.getSlot(batch[group[j]])).isEqualTo(slot);
                if (j > 0) {
                    assertThat(group[j]).isGreaterThan(group[j - 1]);
                }
            }
        }
        assertThat(Arrays.stream(groups).map(g -> SlotHash.getSlot(batch[g[0]])).distinct()).hasSize(groups.length);
    }

    @Test
    void hashTagInThePrefixPutsEveryKeyOnOneSlot() {
        RedisKeys tagged = new RedisKeys("{idem}:");
        byte[][] batch = new byte[100][];
        for (int i = 0; i < batch.length; i++) {
            batch[i] = tagged.encode(new StoreKey("ns-" + i, "order-" + i));
        }

        assertThat(RedisDedupStore.bySlot(batch)).hasNumberOfRows(1);
    }

    @Test
    void durationsAreRoundedUpAndCapped() {
        assertThat(RedisDedupStore.micros(Duration.ofNanos(1))).isEqualTo(1);
        assertThat(RedisDedupStore.micros(Duration.ofSeconds(30))).isEqualTo(30_000_000);
        assertThat(RedisDedupStore.millis(Duration.ofNanos(1_000_001))).isEqualTo(2);
        assertThat(RedisDedupStore.millis(Duration.ofMinutes(5))).isEqualTo(300_000);
        assertThat(RedisDedupStore.millis(Duration.ZERO)).isZero();
        assertThat(RedisDedupStore.millis(Duration.ofSeconds(-5))).isZero();
        assertThat(RedisDedupStore.millis(Duration.ofSeconds(Long.MAX_VALUE)))
                .isEqualTo(RedisDedupStore.LONGEST.toMillis());
    }

    @Test
    void watermarkKeyIsPrefixSeqThenTheAggregateEncodedAsAMessageKeyIs() {
        assertThat(text(keys.watermark(new StoreKey("payments", "account-7")))).isEqualTo("idem:seq:8:payments:account-7");
        assertThat(text(keys.watermark(new StoreKey("", "")))).isEqualTo("idem:seq:0::");
    }

    @Test
    void noWatermarkKeyEqualsAMessageKeyAndEachIsToldApart() {
        List<StoreKey> near = List.of(new StoreKey("seq", "8:payments:account-7"), new StoreKey("", "seq:0::"),
                new StoreKey("payments", "account-7"), new StoreKey("s", "eq:1:a:b"), new StoreKey("seq:8", "x"));
        for (StoreKey a : near) {
            byte[] watermark = keys.watermark(a);
            assertThat(keys.isWatermark(watermark)).as("watermark of %s", a).isTrue();
            for (StoreKey b : near) {
                byte[] message = keys.encode(b);
                assertThat(keys.isWatermark(message)).as("message key of %s", b).isFalse();
                assertThat(message).as("message key of %s against the watermark of %s", b, a).isNotEqualTo(watermark);
            }
        }
    }

    @Test
    void idIsReadBackFromTheKeyExactlyLoneSurrogatesIncluded() {
        for (String id : List.of("order-42", "", "caf\u00e9", "\u6f22\u5b57", "\uD83D\uDE00 party", "nul\0here",
                "\uFFFF", "a\uD800", "\uDC00a", "\uDBFF\uDFFF", "a:b::c:")) {
            byte[] key = keys.encode(new StoreKey("payments", id));

            assertThat(RedisKeys.text(key, keys.namespacePrefix("payments").length)).as(id).isEqualTo(id);
        }
    }

    @Test
    void bytesThatStartNoUtf8SequenceAreReadAsReplacementCharacters() {
        byte[] broken = {'a', (byte) 0xFF, (byte) 0xC3, 'b', (byte) 0xE2, (byte) 0x82, (byte) 0xC0, (byte) 0x80};

        assertThat(RedisKeys.text(broken, 0)).isEqualTo("a\uFFFD\uFFFDb\uFFFD\uFFFD\uFFFD\uFFFD");
    }

    @Test
    void namespacePrefixIsWhatEveryMessageKeyOfTheNamespaceStartsWith() {
        assertThat(text(keys.namespacePrefix("payments"))).isEqualTo("idem:8:payments:");
        assertThat(text(keys.encode(new StoreKey("payments", "x")))).startsWith(text(keys.namespacePrefix("payments")));
        assertThat(text(keys.encode(new StoreKey("payments:x", "y")))).doesNotStartWith(
                text(keys.namespacePrefix("payments")));
    }

    @Test
    void scanPatternEscapesEveryGlobCharacterAndEndsWithAStar() {
        assertThat(text(RedisKeys.startingWith(RedisKeys.utf8("idem:2:ns:*?[a-z]\\x")))).isEqualTo(
                "idem:2:ns:\\*\\?\\[a-z\\]\\\\x*");
        assertThat(text(RedisKeys.startingWith(RedisKeys.utf8("caf\u00e9")))).isEqualTo("caf\u00e9*");
        assertThat(text(RedisKeys.startingWith(new byte[0]))).isEqualTo("*");
    }

    private static String text(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
