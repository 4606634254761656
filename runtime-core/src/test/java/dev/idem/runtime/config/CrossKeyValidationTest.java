package dev.idem.runtime.config;

import static dev.idem.runtime.config.Configs.MINIMAL;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.runtime.config.PluginSpecs.Kind;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.PluginConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedSet;
import org.junit.jupiter.api.Test;

/**
 * What a plugin's own {@code validate} finds is reported by the loader with every other problem, so
 * {@code check} and a start refuse the same files; and the health port's host is checked before anything starts.
 */
class CrossKeyValidationTest {

    /** The standard fakes, whose broker refuses any {@code client} entry named {@code bogus}. */
    private static final class Validating implements PluginSpecs {
        private final FakePlugins fakes = FakePlugins.standard();
        final List<String> validated = new ArrayList<>();

        @Override
        public Optional<ConfigSpec> spec(Kind kind, String id) {
            return fakes.spec(kind, id);
        }

        @Override
        public SortedSet<String> ids(Kind kind) {
            return fakes.ids(kind);
        }

        @Override
        public List<ConfigProblem> validate(Kind kind, String id, PluginConfig config) {
            validated.add(config.path());
            Map<String, String> client = kind == Kind.BROKER ? config.get(FakePlugins.AMQ_CLIENT) : Map.of();
            return client.containsKey("bogus") ? List.of(new ConfigProblem(config.path() + ".client.bogus",
                    "Unknown key " + config.path() + ".client.bogus: not a client property")) : List.of();
        }
    }

    @Test
    void aPluginsProblemIsReportedTogetherWithTheKeyProblems() {
        Validating plugins = new Validating();
        String yaml = MINIMAL.replace("url: vm://embedded", "url: vm://embedded\n    client: {bogus: 1}")
                + "    lease: -5s\n";

        assertThat(Configs.failure(yaml, Map.of(), plugins).problems()).containsExactlyInAnyOrder(
                "Unknown key broker.activemq.client.bogus: not a client property",
                "Invalid value '-5s' for pipelines.orders.lease: must be at least 1s");
    }

    @Test
    void everySectionAndEveryIdEntryIsHandedToItsPluginOnceItsKeysAreValid() {
        Validating plugins = new Validating();
        String yaml = MINIMAL + """
                    id:
                      - {type: header, name: message-id}
                      - {type: json-pointer, pointer: orderId}
                      - {type: json-pointer, pointer: /orderId}
                """;

        Configs.failure(yaml, Map.of(), plugins);

        assertThat(plugins.validated).as("the entry with an invalid pointer is not handed over")
                .containsExactly("broker.activemq", "store.caffeine", "pipelines.orders.id[0]", "pipelines.orders.id[2]");
    }

    @Test
    void anHttpHostThatIsNoHostNameIsRefused() {
        assertThat(Configs.problems(MINIMAL + "runtime: {http: {host: \"not a host!\"}}")).containsExactly(
                "Invalid value 'not a host!' for runtime.http.host: must be a host name or an IP address of this"
                        + " machine, such as 127.0.0.1, ::1 or 0.0.0.0");
    }

    @Test
    void anHttpHostThatDoesNotResolveIsRefused() {
        assertThat(Configs.problems(MINIMAL + "runtime: {http: {host: idem-no-such-host.invalid}}")).singleElement()
                .asString().startsWith("Invalid value 'idem-no-such-host.invalid' for runtime.http.host: does not"
                        + " resolve to an address");
    }

    @Test
    void anHttpHostOfAnotherMachineIsRefused() {
        // 192.0.2.0/24 is reserved for documentation (RFC 5737): never an address of this machine.
        assertThat(Configs.problems(MINIMAL + "runtime: {http: {host: 192.0.2.1}}")).singleElement().asString()
                .startsWith("Invalid value '192.0.2.1' for runtime.http.host: resolves to 192.0.2.1, which is not an"
                        + " address of this machine");
    }

    @Test
    void localHostsAreAccepted() {
        for (String host : List.of("127.0.0.1", "0.0.0.0", "localhost", "::1")) {
            assertThat(Configs.load(MINIMAL + "runtime: {http: {host: \"" + host + "\"}}").runtime().http().host())
                    .isEqualTo(host);
        }
    }

    @Test
    void theHostIsNotCheckedWhenThePortIsOff() {
        assertThat(Configs.load(MINIMAL + "runtime: {http: {enabled: false, host: 192.0.2.1}}").runtime().http().host())
                .isEqualTo("192.0.2.1");
    }
}
