package dev.idem.runtime.extract;

import static dev.idem.runtime.extract.Messages.create;
import static dev.idem.runtime.extract.Messages.headers;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.IdExtractor;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HeaderIdExtractorTest {

    private final HeaderIdExtractorProvider provider = new HeaderIdExtractorProvider();

    @Test
    void readsMessageIdByDefault() {
        IdExtractor extractor = create(provider);

        assertThat(extractor.extract(headers(Map.of("message-id", "m-1", "other", "x")))).isEqualTo("m-1");
    }

    @Test
    void readsTheNamedHeaderExactly() {
        IdExtractor extractor = create(provider, "name", "ce_id");

        assertThat(extractor.extract(headers(Map.of("ce_id", "evt-9")))).isEqualTo("evt-9");
        assertThat(extractor.extract(headers(Map.of("CE_ID", "evt-9")))).isNull();
    }

    @Test
    void missingOrBlankHeaderIsNoKey() {
        IdExtractor extractor = create(provider);

        assertThat(extractor.extract(headers(Map.of()))).isNull();
        assertThat(extractor.extract(headers(Map.of("message-id", "")))).isNull();
        assertThat(extractor.extract(headers(Map.of("message-id", "  ")))).isNull();
    }

    @Test
    void blankNameIsRejectedByTheDeclaredKey() {
        assertThatThrownBy(() -> create(provider, "name", " "))
                .hasMessageContaining("pipelines.orders.id[0].name")
                .hasMessageContaining("must not be blank");
    }
}
