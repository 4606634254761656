package dev.idem.runtime.extract;

import static dev.idem.runtime.extract.Messages.create;
import static dev.idem.runtime.extract.Messages.headers;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.IdExtractor;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CloudEventsIdExtractorTest {

    private final CloudEventsIdExtractorProvider provider = new CloudEventsIdExtractorProvider();

    @Test
    void scopesTheIdBySourceByDefault() {
        IdExtractor extractor = create(provider);

        assertThat(extractor.extract(headers(Map.of("ce_id", "A-1", "ce_source", "/shop/orders"))))
                .isEqualTo("/shop/orders A-1");
    }

    @Test
    void readsEachProtocolBindingsHeaders() {
        IdExtractor extractor = create(provider);

        assertThat(extractor.extract(headers(Map.of("ce-id", "h", "ce-source", "s")))).isEqualTo("s h");
        assertThat(extractor.extract(headers(Map.of("cloudEvents_id", "a", "cloudEvents_source", "s"))))
                .isEqualTo("s a");
        assertThat(extractor.extract(headers(Map.of("cloudEvents:id", "b", "cloudEvents:source", "s"))))
                .isEqualTo("s b");
    }

    @Test
    void readsTheIdAloneWhenTold() {
        IdExtractor extractor = create(provider, "include-source", false);

        assertThat(extractor.extract(headers(Map.of("ce-id", "A-1")))).isEqualTo("A-1");
    }

    @Test
    void eventWithoutIdOrSourceHasNoKey() {
        IdExtractor extractor = create(provider);

        assertThat(extractor.extract(headers(Map.of("ce_source", "/shop")))).isNull();
        assertThat(extractor.extract(headers(Map.of("ce_id", "A-1")))).isNull();
        assertThat(extractor.extract(headers(Map.of("message-id", "m")))).isNull();
    }

    @Test
    void sourceWithASpaceIsAnInvalidKeyBecauseTheKeyWouldBeAmbiguous() {
        IdExtractor extractor = create(provider);

        assertThatThrownBy(() -> extractor.extract(headers(Map.of("ce_id", "1", "ce_source", "my shop"))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("ce_source 'my shop' contains a space");
    }
}
