package dev.idem.runtime.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.StoreKey;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Pins {@code store.key-digest}'s function: a store filled under one version of Idem must find its keys under the
 * next, so these strings may never change. The expected values were computed apart from this code (SHA-256 of the
 * UTF-8, first 16 bytes, unpadded base64url), e.g. {@code printf 'order-1' | openssl dgst -sha256 -binary | head -c16
 * | base64 | tr '+/' '-_' | tr -d '='}.
 */
class KeyDigestTest {

    @Test
    void sha256128IsTheFirst128BitsOfTheSha256OfTheUtf8AsUnpaddedBase64Url() {
        assertThat(KeyDigest.SHA256_128.apply("order-1")).isEqualTo("C6_iIVbSaYwUO4YEBEbTZg");
        assertThat(KeyDigest.SHA256_128.apply("550e8400-e29b-41d4-a716-446655440000"))
                .isEqualTo("o6nh7ZcyyrKIaBJ74A8c6Q");
        assertThat(KeyDigest.SHA256_128.apply("Bestellung-Größe-注文-😀")).isEqualTo("hO9bZ3PuiVMWAebW0Bp4jQ");
        assertThat(KeyDigest.SHA256_128.apply("")).isEqualTo("47DEQpj8HBSa-_TImW-5JA");
    }

    @Test
    void theLongestKeysDigestToTwentyTwoCharacters() {
        String ascii = "k".repeat(StoreKey.MAX_ID_BYTES);
        String accented = "tenant-42/orders/" + "é".repeat(247);
        assertThat(accented.getBytes(StandardCharsets.UTF_8)).hasSize(511);

        assertThat(KeyDigest.SHA256_128.apply(ascii)).isEqualTo("eJpJ_P4g3M3bD5JmNFmJrg");
        assertThat(KeyDigest.SHA256_128.apply(accented)).isEqualTo("b7sekI5Na4ngE1Lx_MOY5A");
    }

    @Test
    void noneKeepsTheKey() {
        assertThat(KeyDigest.NONE.apply("Bestellung-Größe-注文-😀")).isEqualTo("Bestellung-Größe-注文-😀");
    }

    @Test
    void theConfigurationNamesTheFunctions() {
        assertThat(KeyDigest.NONE.configValue()).isEqualTo("none");
        assertThat(KeyDigest.SHA256_128.configValue()).isEqualTo("sha256-128");
        assertThat(RuntimeConfigSpecs.KEY_DIGEST.allowedValues()).containsExactly("none", "sha256-128");
    }
}
