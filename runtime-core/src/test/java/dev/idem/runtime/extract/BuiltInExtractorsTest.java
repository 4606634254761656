package dev.idem.runtime.extract;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ConfigKey;
import dev.idem.spi.IdExtractorProvider;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The built-ins as the runtime finds them: through the services file. */
class BuiltInExtractorsTest {

    private static List<IdExtractorProvider> builtIns() {
        List<IdExtractorProvider> providers = new ArrayList<>();
        ServiceLoader.load(IdExtractorProvider.class, BuiltInExtractorsTest.class.getClassLoader())
                .forEach(p -> {
                    if (p.getClass().getPackageName().equals("dev.idem.runtime.extract")) {
                        providers.add(p);
                    }
                });
        return providers;
    }

    @Test
    void everyBuiltInIsListedInTheServicesFile() {
        assertThat(builtIns()).extracting(IdExtractorProvider::id)
                .containsExactly("header", "cloudevents", "broker-id", "json-pointer", "template", "sha256");
    }

    @Test
    void everyKeyOfEveryBuiltInIsDocumented() {
        for (IdExtractorProvider provider : builtIns()) {
            for (ConfigKey<?> key : provider.configSpec().keys()) {
                assertThat(key.doc()).as(provider.id() + "." + key.name()).isNotBlank();
            }
        }
    }

    @Test
    void extractorsDescribeThemselvesForLogs() {
        assertThat(Messages.create(new JsonPointerIdExtractorProvider(), "pointer", "/id"))
                .hasToString("json-pointer /id");
        assertThat(Messages.create(new TemplateIdExtractorProvider(), "template", "a-{/id}"))
                .hasToString("template a-{/id}");
    }
}
