package dev.idem.runtime.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class SuggestionsTest {

    private static final List<String> KEYS = List.of("lease", "retention", "retry", "handler", "handler-timeout", "id");

    @Test
    void distanceCountsEditsAndAdjacentSwapsOnce() {
        assertThat(Suggestions.distance("lease", "lease")).isZero();
        assertThat(Suggestions.distance("leese", "lease")).isEqualTo(1);
        assertThat(Suggestions.distance("leas", "lease")).isEqualTo(1);
        assertThat(Suggestions.distance("retyr", "retry")).isEqualTo(1);
        assertThat(Suggestions.distance("", "abc")).isEqualTo(3);
    }

    @Test
    void closestIsSuggestedWhenItIsAPlausibleTypo() {
        assertThat(Suggestions.closest("leese", KEYS)).contains("lease");
        assertThat(Suggestions.closest("retyr", KEYS)).contains("retry");
        assertThat(Suggestions.closest("Handler", KEYS)).contains("handler");
        assertThat(Suggestions.closest("handler-timout", KEYS)).contains("handler-timeout");
    }

    @Test
    void nothingIsSuggestedForAFarOrVeryShortName() {
        assertThat(Suggestions.closest("colour", KEYS)).isEmpty();
        assertThat(Suggestions.closest("xy", KEYS)).isEmpty();
        assertThat(Suggestions.closest("anything", List.of())).isEmpty();
    }
}
