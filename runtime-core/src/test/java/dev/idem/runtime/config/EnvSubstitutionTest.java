package dev.idem.runtime.config;

import static dev.idem.runtime.config.Configs.MINIMAL;
import static dev.idem.runtime.config.Configs.load;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ConfigException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class EnvSubstitutionTest {

    private static final String URL_FROM_ENV = MINIMAL.replace("url: vm://embedded", "url: ${AMQ_URL}");

    @Test
    void setVariableIsSubstituted() {
        IdemConfig config = load(URL_FROM_ENV, Map.of("AMQ_URL", "tcp://broker:61616"));

        assertThat(config.broker().config().get(FakePlugins.AMQ_URL)).isEqualTo("tcp://broker:61616");
    }

    @Test
    void defaultAppliesWhenTheVariableIsUnset() {
        String yaml = MINIMAL.replace("url: vm://embedded", "url: ${AMQ_URL:-vm://fallback}");

        assertThat(load(yaml).broker().config().get(FakePlugins.AMQ_URL)).isEqualTo("vm://fallback");
    }

    @Test
    void defaultAppliesWhenTheVariableIsEmptyAsInAShell() {
        String yaml = MINIMAL.replace("url: vm://embedded", "url: ${AMQ_URL:-vm://fallback}");

        assertThat(load(yaml, Map.of("AMQ_URL", "")).broker().config().get(FakePlugins.AMQ_URL))
                .isEqualTo("vm://fallback");
    }

    @Test
    void setVariableWinsOverTheDefault() {
        String yaml = MINIMAL.replace("url: vm://embedded", "url: ${AMQ_URL:-vm://fallback}");

        assertThat(load(yaml, Map.of("AMQ_URL", "vm://set")).broker().config().get(FakePlugins.AMQ_URL))
                .isEqualTo("vm://set");
    }

    @Test
    void unsetVariableWithoutDefaultIsAProblemNamingThePathAndTheVariable() {
        ConfigException e = Configs.failure(URL_FROM_ENV, Map.of(), FakePlugins.standard());

        assertThat(e.problems()).containsExactly("Environment variable AMQ_URL is not set, for broker.activemq.url."
                + " Set it, or give a default: ${AMQ_URL:-default}");
    }

    @Test
    void unsetVariableOfARequiredKeyIsNotAlsoReportedAsMissing() {
        ConfigException e = Configs.failure(URL_FROM_ENV, Map.of(), FakePlugins.standard());

        assertThat(e.problems()).noneMatch(p -> p.startsWith("Missing required key"));
    }

    @Test
    void everyUnsetVariableIsReported() {
        String yaml = MINIMAL.replace("url: vm://embedded", "url: ${HOST}:${PORT}")
                + "    dead-letter: ${DLQ}\n";

        assertThat(Configs.failure(yaml, Map.of(), FakePlugins.standard()).problems()).containsExactly(
                "Environment variable HOST is not set, for broker.activemq.url. Set it, or give a default: ${HOST:-default}",
                "Environment variable PORT is not set, for broker.activemq.url. Set it, or give a default: ${PORT:-default}",
                "Environment variable DLQ is not set, for pipelines.orders.dead-letter."
                        + " Set it, or give a default: ${DLQ:-default}");
    }

    @Test
    void escapedPlaceholderIsWrittenLiterally() {
        String yaml = MINIMAL.replace("url: vm://embedded", "url: vm://x?opt=$${NOT_A_VAR}&a=$$b");

        assertThat(load(yaml).broker().config().get(FakePlugins.AMQ_URL)).isEqualTo("vm://x?opt=${NOT_A_VAR}&a=$$b");
    }

    @Test
    void placeholdersMayBeEmbeddedAndSeveralInOneValue() {
        String yaml = MINIMAL.replace("url: vm://embedded", "url: tcp://${HOST}:${PORT:-61616}/x");

        assertThat(load(yaml, Map.of("HOST", "mq")).broker().config().get(FakePlugins.AMQ_URL))
                .isEqualTo("tcp://mq:61616/x");
    }

    @Test
    void substitutedTextIsParsedByTheKeysType() {
        String yaml = MINIMAL + "    concurrency: ${CONCURRENCY}\n    lease: ${LEASE:-45s}\n";

        PipelineConfig p = load(yaml, Map.of("CONCURRENCY", "12")).pipelines().get("orders");

        assertThat(p.concurrency()).isEqualTo(12);
        assertThat(p.lease()).hasSeconds(45);
    }

    @Test
    void substitutedValueIsValidatedLikeAWrittenOne() {
        String yaml = MINIMAL + "    lease: ${LEASE}\n";

        assertThat(Configs.failure(yaml, Map.of("LEASE", "-5s"), FakePlugins.standard()).problems())
                .containsExactly("Invalid value '-5s' for pipelines.orders.lease: must be at least 1s");
    }

    @Test
    void valueThatComesOutEmptyCountsAsAbsent() {
        String yaml = MINIMAL.replace("url: vm://embedded", "url: vm://embedded\n    password: ${AMQ_PASSWORD:-}")
                + "    dead-letter: ${DLQ:-}\n";

        IdemConfig config = load(yaml);

        assertThat(config.broker().config().get(FakePlugins.AMQ_PASSWORD)).isNull();
        assertThat(config.pipelines().get("orders").deadLetter()).isNull();
    }

    @Test
    void substitutedValueIsNotScannedAgain() {
        IdemConfig config = load(URL_FROM_ENV, Map.of("AMQ_URL", "vm://${OTHER}"));

        assertThat(config.broker().config().get(FakePlugins.AMQ_URL)).isEqualTo("vm://${OTHER}");
    }

    @Test
    void pluginTypeMayComeFromTheEnvironment() {
        String yaml = MINIMAL.replace("type: caffeine", "type: ${STORE:-caffeine}");

        assertThat(load(yaml).store().type()).isEqualTo("caffeine");
        assertThat(Configs.failure(yaml, Map.of("STORE", "reds"), FakePlugins.standard()).problems())
                .singleElement().asString().startsWith("No dedup store with id 'reds' (store.type).");
    }

    @Test
    void mapSubtreeAndListItemsAreSubstituted() {
        String yaml = MINIMAL.replace("url: vm://embedded", "url: vm://embedded\n    client:\n      user: ${USER_NAME}")
                + "    id:\n      - type: header\n        name: ${ID_HEADER:-message-id}\n";

        IdemConfig config = load(yaml, Map.of("USER_NAME", "idem"));

        assertThat(config.broker().config().get(FakePlugins.AMQ_CLIENT)).containsExactly(Map.entry("user", "idem"));
        assertThat(config.pipelines().get("orders").idExtractors().get(0).config().get(FakePlugins.HEADER_NAME))
                .isEqualTo("message-id");
    }

    @Test
    void unsetVariableInAListItemNamesItsIndex() {
        String yaml = MINIMAL + "    id:\n      - type: header\n        name: ${ID_HEADER}\n";

        assertThat(Configs.failure(yaml, Map.of(), FakePlugins.standard()).problems()).containsExactly(
                "Environment variable ID_HEADER is not set, for pipelines.orders.id[0].name."
                        + " Set it, or give a default: ${ID_HEADER:-default}");
    }

    @Test
    void unterminatedPlaceholderIsAProblem() {
        String yaml = MINIMAL.replace("url: vm://embedded", "url: vm://${HOST");

        assertThat(Configs.failure(yaml, Map.of("HOST", "x"), FakePlugins.standard()).problems()).containsExactly(
                "Unterminated placeholder in broker.activemq.url: '${' without a closing '}'. Write $${ for a literal ${");
    }

    @Test
    void placeholderWithAnInvalidNameIsAProblem() {
        String yaml = MINIMAL.replace("url: vm://embedded", "url: vm://${HOST NAME}");

        assertThat(Configs.failure(yaml, Map.of(), FakePlugins.standard()).problems()).singleElement().asString()
                .startsWith("Invalid placeholder '${HOST NAME}' in broker.activemq.url: must be ${NAME} or"
                        + " ${NAME:-default}");
    }

    @Test
    void numbersAndBooleansWrittenInYamlAreLeftAlone() {
        Problems problems = new Problems();
        EnvResolver resolver = new EnvResolver(Map.of(), problems);

        assertThat(resolver.resolve(42, "a")).isEqualTo(42);
        assertThat(resolver.resolve(true, "a")).isEqualTo(true);
        assertThat(resolver.resolve(List.of("${X:-1}", 2), "a")).isEqualTo(List.of("1", 2));
        assertThat(problems.count()).isZero();
    }
}
