package dev.idem.store.caffeine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.testkit.TestPluginConfig;
import java.util.List;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

class CaffeineDedupStoreProviderTest {

    @Test
    void providerIsFoundByServiceLoaderWithIdCaffeine() {
        List<DedupStoreProvider> found = ServiceLoader.load(DedupStoreProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(p -> p.id().equals("caffeine"))
                .toList();

        assertThat(found).singleElement().isInstanceOf(CaffeineDedupStoreProvider.class);
    }

    @Test
    void providerDeclaresMaximumSizeAndInitialCapacityWithDefaultsAndDocs() {
        var spec = new CaffeineDedupStoreProvider().configSpec();

        assertThat(spec.names()).containsExactly("maximum-size", "initial-capacity");
        assertThat(spec.key("maximum-size").defaultValue()).isEqualTo(1_000_000L);
        assertThat(spec.key("maximum-size").type()).isEqualTo(ConfigKey.Type.LONG);
        assertThat(spec.key("initial-capacity").defaultValue()).isEqualTo(0);
        assertThat(spec.keys()).allSatisfy(key -> assertThat(key.doc()).isNotBlank());
    }

    @Test
    void maximumSizeMustBeAtLeastOne() {
        var config = TestPluginConfig.defaults("store.caffeine", new CaffeineDedupStoreProvider().configSpec());

        assertThatThrownBy(() -> config.with("maximum-size", 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Invalid value '0' for store.caffeine.maximum-size: must be at least 1");
        assertThatThrownBy(() -> config.with("initial-capacity", -1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must be at least 0");
    }
}
