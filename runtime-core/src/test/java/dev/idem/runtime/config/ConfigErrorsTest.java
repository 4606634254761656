package dev.idem.runtime.config;

import static dev.idem.runtime.config.Configs.MINIMAL;
import static dev.idem.runtime.config.Configs.problems;
import static dev.idem.runtime.config.Configs.withPipelineKeys;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.runtime.config.PluginSpecs.Kind;
import dev.idem.spi.ConfigException;
import dev.idem.spi.TransactionalDedupStore;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ConfigErrorsTest {

    private static final String PIPELINE_KEYS = "[source, handler, handler-settings, payload, namespace, missing-id, fingerprint,"
            + " fingerprint-mismatch, ordering, concurrency, max-in-flight, lease, retention, handler-timeout, retry, commit,"
            + " max-deliveries, dead-letter, transactional, sequence, emit, steps, reply, batch, id, ordering-key]";

    @Test
    void twoPipelinesOnOneSourceMustShareANamespace() {
        String yaml = """
                broker: { type: activemq, activemq: { url: "vm://embedded" } }
                store: { type: caffeine }
                pipelines:
                  billing: { source: orders }
                  audit: { source: orders }
                  shipping: { source: orders, namespace: billing }
                """;
        assertThat(problems(yaml)).containsExactly("pipelines.billing and pipelines.audit both consume 'orders' but"
                + " keep their keys apart (namespaces 'billing' and 'audit'), so a repeat that lands on the other"
                + " pipeline would run its handler again. Give them one namespace (pipelines.<name>.namespace:"
                + " billing), or consume different sources");
    }

    @Test
    void negativeDurationIsRejectedNamingPathValueAndRule() {
        assertThat(problems(withPipelineKeys("lease: -5s")))
                .containsExactly("Invalid value '-5s' for pipelines.orders.lease: must be at least 1s");
    }

    @Test
    void durationWithoutUnitSaysWhatIsAccepted() {
        assertThat(problems(withPipelineKeys("retention: 30"))).containsExactly("Invalid value '30' for"
                + " pipelines.orders.retention: must be a duration such as 500ms, 30s, 5m, 2h, 7d or ISO-8601 PT30S");
    }

    @Test
    void numberOutOfRangeNamesTheBound() {
        assertThat(problems(withPipelineKeys("concurrency: 0\nmax-deliveries: 1001\nretry:\n  multiplier: 0.5")))
                .containsExactly(
                        "Invalid value '0' for pipelines.orders.concurrency: must be at least 1",
                        "Invalid value '0.5' for pipelines.orders.retry.multiplier: must be at least 1.0",
                        "Invalid value '1001' for pipelines.orders.max-deliveries: must be at most 1000");
    }

    @Test
    void textWhereANumberBelongsSaysWhatIsAccepted() {
        assertThat(problems(withPipelineKeys("concurrency: many"))).singleElement().asString()
                .startsWith("Invalid value 'many' for pipelines.orders.concurrency: must be an integer");
    }

    @Test
    void enumRejectsOtherValuesListingTheAllowedOnes() {
        assertThat(problems(withPipelineKeys("ordering: fifo\nmissing-id: Hash"))).containsExactly(
                "Invalid value 'Hash' for pipelines.orders.missing-id: must be one of [dead-letter, hash, unprotected]",
                "Invalid value 'fifo' for pipelines.orders.ordering: must be one of [partition, key, none]");
    }

    @Test
    void unknownKeySuggestsTheClosestAndListsTheAccepted() {
        assertThat(problems(withPipelineKeys("leese: 10s"))).containsExactly(
                "Unknown key pipelines.orders.leese. Did you mean 'lease'? Accepted: " + PIPELINE_KEYS);
    }

    @Test
    void unknownKeyInANestedSectionListsThatSectionsKeys() {
        assertThat(problems(withPipelineKeys("retry:\n  max-atempts: 2"))).containsExactly(
                "Unknown key pipelines.orders.retry.max-atempts. Did you mean 'max-attempts'?"
                        + " Accepted: [max-attempts, initial-backoff, max-backoff, multiplier, conflict-attempts]");
    }

    @Test
    void unknownKeyWithNoLikelyMatchGetsNoSuggestion() {
        assertThat(problems(withPipelineKeys("colour: blue")))
                .containsExactly("Unknown key pipelines.orders.colour. Accepted: " + PIPELINE_KEYS);
    }

    @Test
    void unknownKeysAreErrorsEverywhere() {
        String yaml = """
                brokr: {}
                broker:
                  type: activemq
                  tpye: kafka
                  activemq:
                    url: vm://embedded
                    urll: vm://typo
                store:
                  type: caffeine
                  caffeine:
                    maximum-sise: 10
                pipelines:
                  orders:
                    source: orders
                    id:
                      - type: header
                        nme: x
                runtime:
                  shutdown-timout: 5s
                """;

        assertThat(problems(yaml)).containsExactly(
                "Unknown key brokr. Did you mean 'broker'? Accepted: [broker, store, pipelines, runtime]",
                "Unknown key broker.tpye. Did you mean 'type'? Accepted: [type, activemq]",
                "Unknown key broker.activemq.urll. Did you mean 'url'?"
                        + " Accepted: [url, user, password, prefetch, persistent, client]",
                "Unknown key store.caffeine.maximum-sise. Did you mean 'maximum-size'? Accepted: [maximum-size]",
                "Unknown key pipelines.orders.id[0].nme. Did you mean 'name'? Accepted: [name]",
                "Missing required key pipelines.orders.id[0].name",
                "Unknown key runtime.shutdown-timout. Did you mean 'shutdown-timeout'? Accepted: [shutdown-timeout, summary-interval, handler-create-timeout, http, console]");
    }

    @Test
    void missingRequiredKeysAreNamedByPath() {
        String yaml = """
                broker:
                  activemq:
                    user: me
                store:
                  type: caffeine
                pipelines:
                  orders:
                    concurrency: 2
                """;

        assertThat(problems(yaml)).containsExactly(
                "Missing required key broker.type: the broker adapter to use. Available: [activemq, kafka]",
                "Missing required key pipelines.orders.source");
    }

    @Test
    void missingRequiredPluginKeyIsNamedByPath() {
        assertThat(problems(MINIMAL.replace("url: vm://embedded", "user: me")))
                .containsExactly("Missing required key broker.activemq.url");
    }

    @Test
    void emptyFileReportsEachRequiredSection() {
        assertThat(problems("")).containsExactly(
                "Missing required key broker.type: the broker adapter to use. Available: [activemq, kafka]",
                "Missing required key store.type: the dedup store to use. Available: [caffeine, jdbc, redis]",
                "Missing required key pipelines: at least one pipeline is needed, e.g. pipelines: {orders: {source: orders}}");
    }

    @Test
    void unknownPluginIdListsTheAvailableOnesAndHintsAtAMissingPlugin() {
        assertThat(problems(MINIMAL.replace("type: caffeine", "type: reds"))).containsExactly(
                "No dedup store with id 'reds' (store.type). Did you mean 'redis'? Available: [caffeine, jdbc, redis]."
                        + " If it is a plugin, is its folder or JAR missing from plugins/?");
    }

    @Test
    void unknownPluginIdFarFromAnyGetsNoSuggestion() {
        assertThat(problems(MINIMAL.replace("type: activemq", "type: rabbitmq"))).containsExactly(
                "No broker adapter with id 'rabbitmq' (broker.type). Available: [activemq, kafka]."
                        + " If it is a plugin, is its folder or JAR missing from plugins/?");
    }

    @Test
    void unknownIdExtractorTypeIsNamedWithItsIndex() {
        assertThat(problems(withPipelineKeys("id:\n  - type: header\n    name: x\n  - type: jsonpointer\n    pointer: /a")))
                .containsExactly("No ID extractor with id 'jsonpointer' (pipelines.orders.id[1].type)."
                        + " Did you mean 'json-pointer'? Available: [header, json-pointer]."
                        + " If it is a plugin, is its folder or JAR missing from plugins/?");
    }

    @Test
    void sectionNamedAfterAnotherPluginIsAnError() {
        String yaml = MINIMAL.replace("type: caffeine", "type: caffeine\n  redis:\n    password: x");

        assertThat(problems(yaml)).containsExactly(
                "Section store.redis does not apply: store.type is 'caffeine'. Remove it, or set store.type: redis");
    }

    @Test
    void sectionMisnamedForTheSelectedPluginGetsASuggestion() {
        String yaml = MINIMAL.replace("type: caffeine", "type: caffeine\n  cafeine:\n    maximum-size: 1");

        assertThat(problems(yaml)).containsExactly(
                "Unknown key store.cafeine. Did you mean 'caffeine'? Accepted: [type, key-digest, caffeine]");
    }

    @Test
    void keyDigestNamesTheValueAndTheAcceptedOnes() {
        String yaml = MINIMAL.replace("type: caffeine", "type: caffeine\n  key-digest: md5");

        assertThat(problems(yaml)).containsExactly(
                "Invalid value 'md5' for store.key-digest: must be one of [none, sha256-128]");
    }

    @Test
    void keyDigestMisspeltGetsASuggestion() {
        String yaml = MINIMAL.replace("type: caffeine", "type: caffeine\n  key-digets: sha256-128");

        assertThat(problems(yaml)).containsExactly(
                "Unknown key store.key-digets. Did you mean 'key-digest'? Accepted: [type, key-digest, caffeine]");
    }

    @Test
    void keyDigestBelongsToTheStoreNotTheBroker() {
        String yaml = MINIMAL.replace("type: activemq", "type: activemq\n  key-digest: sha256-128");

        assertThat(problems(yaml)).singleElement().asString().startsWith("Unknown key broker.key-digest.");
    }

    @Test
    void pluginKeyValueIsValidatedByItsOwnRules() {
        assertThat(problems(withPipelineKeys("id:\n  - type: json-pointer\n    pointer: orderId")))
                .containsExactly("Invalid value 'orderId' for pipelines.orders.id[0].pointer: must start with /");
    }

    @Test
    void secretValueNeverAppearsInAnErrorMessage() {
        String yaml = MINIMAL.replace("type: caffeine", """
                type: redis
                  redis:
                    password: [hunter2]
                    passwrd: hunter3""");

        ConfigException e = Configs.failure(yaml);

        assertThat(e.problems()).containsExactly(
                "Unknown key store.redis.passwrd. Did you mean 'password'? Accepted: [url, password]",
                "Invalid value '******' for store.redis.password: must be a string (a secret, masked when printed),"
                        + " not a list");
        assertThat(e.getMessage()).doesNotContain("hunter");
    }

    @Test
    void sectionValuesAreNotShownWhenASectionIsMisplaced() {
        String yaml = MINIMAL.replace("url: vm://embedded", "url: {password: hunter2}");

        assertThat(problems(yaml)).singleElement().asString()
                .isEqualTo("Invalid value '{password: ...}' for broker.activemq.url: must be a string, not a map");
    }

    @Test
    void maxInFlightBelowConcurrencyIsACrossKeyError() {
        assertThat(problems(withPipelineKeys("concurrency: 8\nmax-in-flight: 4"))).containsExactly(
                "Invalid value '4' for pipelines.orders.max-in-flight: must be at least concurrency (8)");
    }

    @Test
    void crossKeyErrorSaysWhenTheClashingValueIsADefault() {
        assertThat(problems(withPipelineKeys("concurrency: 1024"))).containsExactly(
                "Invalid value '1000' for pipelines.orders.max-in-flight: must be at least concurrency (1024);"
                        + " that is its default, so set max-in-flight too");
    }

    @Test
    void groupedTransactionKeysNeedTransactionalModeAndAGroup() {
        assertThat(problems(withPipelineKeys("transactional.group: 20"))).containsExactly(
                "pipelines.orders.transactional.group groups the transactions of transactional mode, but"
                        + " pipelines.orders.transactional is not true; set transactional: true, or remove"
                        + " transactional.group");
        assertThat(problems(withPipelineKeys("transactional.savepoints: on-failure"))).containsExactly(
                "pipelines.orders.transactional.savepoints: on-failure places the savepoints of grouped transactions,"
                        + " but pipelines.orders.transactional is not true; set transactional: true, or remove"
                        + " transactional.savepoints");
        assertThat(problems(withPipelineKeys(
                "transactional: true\ntransactional.group: 1\ntransactional.savepoints: on-failure")))
                .containsExactly("pipelines.orders.transactional.savepoints: on-failure places the savepoints of"
                        + " grouped transactions, but pipelines.orders.transactional.group is 1; set"
                        + " transactional.group above 1 (with transactional: true), or remove transactional.savepoints");
        assertThat(Configs.load(withPipelineKeys("transactional: true\ntransactional.savepoints: on-failure"))
                .pipelines().get("orders").groupSavepoints())
                .isEqualTo(TransactionalDedupStore.Savepoints.ON_FAILURE);
    }

    @Test
    void theDefaultGroupOfTransactionalModeIsNoErrorInPlainMode() {
        assertThat(Configs.load(withPipelineKeys("transactional: false")).pipelines().get("orders")
                .transactionGroupChosen()).isFalse();
        PipelineConfig orders = Configs.load(withPipelineKeys("transactional: true")).pipelines().get("orders");
        assertThat(orders.transactionGroup()).isEqualTo(10);
        assertThat(orders.transactionGroupChosen()).isFalse();
        assertThat(Configs.load(withPipelineKeys("transactional: true\ntransactional.group: 20")).pipelines()
                .get("orders").transactionGroupChosen()).isTrue();
    }

    @Test
    void maxBackoffBelowInitialBackoffIsACrossKeyError() {
        assertThat(problems(withPipelineKeys("retry:\n  initial-backoff: 5s\n  max-backoff: 1s"))).containsExactly(
                "Invalid value '1s' for pipelines.orders.retry.max-backoff: must be at least retry.initial-backoff (5s)");
    }

    @Test
    void crossKeyChecksWaitUntilBothKeysAreValid() {
        assertThat(problems(withPipelineKeys("concurrency: 0\nmax-in-flight: -1"))).containsExactly(
                "Invalid value '0' for pipelines.orders.concurrency: must be at least 1",
                "Invalid value '-1' for pipelines.orders.max-in-flight: must be at least 1");
    }

    @Test
    void pipelineNamesMustBeLowercaseWordsAndAreStillValidated() {
        String yaml = MINIMAL.replace("pipelines:\n", "pipelines:\n  Orders:\n    lease: 0s\n  -x:\n    source: x\n");

        assertThat(problems(yaml)).containsExactly(
                "Invalid pipeline name 'Orders' in pipelines: must start with a lowercase letter or digit and hold only"
                        + " lowercase letters, digits, '.', '_' and '-'",
                "Missing required key pipelines.Orders.source",
                "Invalid value '0s' for pipelines.Orders.lease: must be at least 1s",
                "Invalid pipeline name '-x' in pipelines: must start with a lowercase letter or digit and hold only"
                        + " lowercase letters, digits, '.', '_' and '-'");
    }

    @Test
    void aPipelineNameOrNamespaceLongerThanEveryStoreHoldsIsRefused() {
        String longest = "o".repeat(255);
        String tooLong = "o".repeat(256);
        String yaml = MINIMAL.replace("pipelines:\n", "pipelines:\n  " + tooLong + ":\n    source: a\n"
                + "  " + longest + ":\n    source: b\n    namespace: " + "n".repeat(300) + "\n");

        assertThat(problems(yaml)).containsExactly(
                "Invalid pipeline name '" + "o".repeat(120) + "...' in pipelines: it is 256 characters long and must be"
                        + " at most 255 characters, the longest namespace every dedup store holds (the name is the"
                        + " namespace of the pipeline's keys by default); give it a shorter name",
                "Invalid value '" + "n".repeat(120) + "...' for pipelines." + longest + ".namespace: must be at most"
                        + " 255 characters, the longest namespace every dedup store holds");
        assertThat(Configs.load(MINIMAL.replace("pipelines:\n", "pipelines:\n  " + longest + ":\n    source: b\n"
                + "    namespace: " + "n".repeat(255) + "\n")).pipelines().get(longest).namespace()).hasSize(255);
    }

    @Test
    void pipelineNamesWithDigitsDotsUnderscoresAndDashesAreAccepted() {
        String yaml = MINIMAL.replace("pipelines:\n", "pipelines:\n  orders.v2:\n    source: a\n  0day_x-y:\n    source: b\n");

        assertThat(Configs.load(yaml).pipelines().keySet()).containsExactly("orders.v2", "0day_x-y", "orders");
    }

    @Test
    void pipelinesMustNotBeEmpty() {
        String yaml = MINIMAL.replace("pipelines:\n  orders:\n    source: orders\n", "pipelines: {}\n");

        assertThat(problems(yaml)).containsExactly(
                "Missing required key pipelines: at least one pipeline is needed, e.g. pipelines: {orders: {source: orders}}");
    }

    @Test
    void scalarWhereASectionBelongsListsTheSectionsKeys() {
        assertThat(problems(withPipelineKeys("retry: 5"))).containsExactly("Invalid value '5' for pipelines.orders.retry:"
                + " must be a section with keys [max-attempts, initial-backoff, max-backoff, multiplier, conflict-attempts]");
        assertThat(problems(MINIMAL.replace("broker:\n  type: activemq\n  activemq:\n    url: vm://embedded\n",
                "broker: kafka\n"))).containsExactly(
                "Invalid value 'kafka' for broker: must be a section with a type, e.g. {type: activemq}");
        assertThat(problems(MINIMAL + "  other: x\n"))
                .containsExactly("Invalid value 'x' for pipelines.other: must be a section with keys " + PIPELINE_KEYS);
    }

    @Test
    void mapKeyGivenAScalarIsInvalid() {
        assertThat(problems(MINIMAL.replace("url: vm://embedded", "url: vm://embedded\n    client: max.poll=1")))
                .containsExactly("Invalid value 'max.poll=1' for broker.activemq.client: must be a map of settings");
    }

    @Test
    void keyGivenTwiceThroughNestingAndDotsIsAnError() {
        assertThat(problems(withPipelineKeys("retry:\n  max-attempts: 2\nretry.max-attempts: 3")))
                .containsExactly("Key pipelines.orders.retry.max-attempts is given twice; keep one");
    }

    @Test
    void idMustBeANonEmptyListOfEntriesWithAType() {
        assertThat(problems(withPipelineKeys("id: []")))
                .containsExactly("Invalid value '[]' for pipelines.orders.id: must list at least one ID extractor");
        assertThat(problems(withPipelineKeys("id: {type: header, name: x}"))).containsExactly(
                "Invalid value '{type: ..., name: ...}' for pipelines.orders.id: must be a list of ID extractors,"
                        + " each with a type, e.g. [{type: header, name: message-id}]");
        assertThat(problems(withPipelineKeys("id:\n  - name: x\n  - header"))).containsExactly(
                "Missing required key pipelines.orders.id[0].type: the ID extractor to use. Available: [header, json-pointer]",
                "Invalid value 'header' for pipelines.orders.id[1]: must be an entry with a type and that ID extractor's"
                        + " keys, e.g. {type: header}");
    }

    @Test
    void withoutAHeaderExtractorTheIdListIsRequired() {
        PluginSpecs plugins = FakePlugins.standard().without(Kind.ID_EXTRACTOR, "header");

        assertThat(Configs.failure(MINIMAL, Map.of(), plugins).problems()).containsExactly(
                "Missing required key pipelines.orders.id: the default (the message-id header) needs the 'header'"
                        + " ID extractor, which is not installed. Available: [json-pointer]."
                        + " List the extractors to use, each with a type");
    }

    @Test
    void topLevelThatIsNotAMapIsRejected() {
        assertThat(problems("- broker\n- store\n")).containsExactly("The configuration in test.yaml must be a map"
                + " with keys [broker, store, pipelines, runtime], not [broker, store]");
    }

    @Test
    void everyProblemIsCollectedIntoOneException() {
        String yaml = """
                broker:
                  type: activemq
                  activemq:
                    prefetch: 0
                store:
                  type: reds
                pipelines:
                  orders:
                    source: orders
                    lease: -5s
                    leese: 10s
                    ordering: fifo
                  Bad:
                    concurrency: 2
                    max-in-flight: 1
                runtime:
                  shutdown-timeout: soon
                """;

        ConfigException e = Configs.failure(yaml);

        assertThat(e.problems()).containsExactly(
                "Missing required key broker.activemq.url",
                "Invalid value '0' for broker.activemq.prefetch: must be at least 1",
                "No dedup store with id 'reds' (store.type). Did you mean 'redis'? Available: [caffeine, jdbc, redis]."
                        + " If it is a plugin, is its folder or JAR missing from plugins/?",
                "Unknown key pipelines.orders.leese. Did you mean 'lease'? Accepted: " + PIPELINE_KEYS,
                "Invalid value 'fifo' for pipelines.orders.ordering: must be one of [partition, key, none]",
                "Invalid value '-5s' for pipelines.orders.lease: must be at least 1s",
                "Invalid pipeline name 'Bad' in pipelines: must start with a lowercase letter or digit and hold only"
                        + " lowercase letters, digits, '.', '_' and '-'",
                "Missing required key pipelines.Bad.source",
                "Invalid value 'soon' for runtime.shutdown-timeout: must be a duration such as 500ms, 30s, 5m, 2h, 7d"
                        + " or ISO-8601 PT30S");
        assertThat(e.getMessage()).startsWith("Invalid configuration (9 problems):");
    }
}
