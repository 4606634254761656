package dev.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import org.junit.jupiter.api.Test;

/** {@link StoredKey}'s checks, and the constructor without starts that stores written before it keep using. */
class StoredKeyTest {

    private static final Instant END = Instant.parse("2026-01-01T00:00:00Z");

    @Test
    void theConstructorWithoutStartsShowsNone() {
        assertThat(new StoredKey(StoredKey.State.CLAIMED, 2, null, END))
                .isEqualTo(new StoredKey(StoredKey.State.CLAIMED, 2, null, END, 0));
    }

    @Test
    void startsAreNeverNegative() {
        assertThatThrownBy(() -> new StoredKey(StoredKey.State.CLAIMED, 1, null, END, -1))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("starts must not be negative: -1");
    }
}
