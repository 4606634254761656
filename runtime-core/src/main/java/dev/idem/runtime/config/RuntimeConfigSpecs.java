package dev.idem.runtime.config;

import dev.idem.runtime.config.PipelineConfig.FingerprintMode;
import dev.idem.runtime.config.PipelineConfig.MismatchPolicy;
import dev.idem.runtime.config.PipelineConfig.MissingIdPolicy;
import dev.idem.runtime.config.PipelineConfig.Ordering;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The runtime's own configuration keys, each declared once: the loader validates against these,
 * {@link ConfigDocs} documents them and {@link ConfigPrinter} prints them.
 *
 * <p>{@link #PIPELINE} holds the keys of one {@code pipelines.<name>} section (dotted names such
 * as {@code retry.max-attempts} nest under YAML sections); {@link #RUNTIME} holds the keys of the
 * {@code runtime} section. The pipeline's {@value #ID} list is not a {@link ConfigKey}: it is a
 * list of ID extractor sections, each validated against its extractor's own spec.
 *
 * <p>Everything here is an immutable constant; thread-safe.
 */
public final class RuntimeConfigSpecs {

    /** A pipeline's name: its consumer name and the namespace of its keys in the store. */
    public static final Pattern PIPELINE_NAME = Pattern.compile("[a-z0-9][a-z0-9._-]*");

    // Host names, IPv4 and IPv6 literals (with or without brackets and a scope); whether it resolves is checked apart.
    private static final Pattern HOST = Pattern.compile("[A-Za-z0-9._:%\\[\\]-]+");

    private static final Pattern CLASS_NAME =
            Pattern.compile("[\\p{L}_$][\\p{L}\\p{N}_$]*(\\.[\\p{L}_$][\\p{L}\\p{N}_$]*)*");

    /** Selects a plugin by id: {@code broker.type}, {@code store.type}, and each {@code id} entry's {@code type}. */
    public static final ConfigKey<String> TYPE = ConfigKey.string("type").required()
            .doc("The id of the plugin to use; its settings go in the section named after that id.");

    /** The name of the pipeline key that lists ID extractors. */
    public static final String ID = "id";

    /** The extractor used when a pipeline has no {@value #ID} list, if one with this id was discovered. */
    public static final String DEFAULT_ID_EXTRACTOR = "header";

    /** The settings of the default extractor: the broker's message id. */
    public static final Map<String, Object> DEFAULT_ID_EXTRACTOR_SETTINGS = Map.of("name", "message-id");

    static final String ID_DOC = "Where a message's idempotency key comes from: a list of ID extractors, each"
            + " `type:` (an ID extractor id) plus that extractor's keys. The first that finds a key wins."
            + " Defaults to the `message-id` header when the `header` extractor is installed.";

    public static final ConfigKey<String> SOURCE = ConfigKey.string("source").required()
            .validate(s -> !s.isBlank(), "not be blank")
            .doc("The topic or queue the pipeline consumes.");

    public static final ConfigKey<String> HANDLER = ConfigKey.string("handler")
            .validate(CLASS_NAME.asMatchPredicate(), "be a fully qualified class name such as com.example.OrderHandler")
            .doc("The handler class, loaded from `handlers/`. Leave it out when the handler is bound in code.");

    public static final ConfigKey<String> NAMESPACE = ConfigKey.string("namespace")
            .validate(PIPELINE_NAME.asMatchPredicate(), "start with a lowercase letter or digit and hold only lowercase"
                    + " letters, digits, '.', '_' and '-'")
            .doc("The scope of the pipeline's keys in the store; the pipeline's name when left out. Pipelines that"
                    + " consume the same source must share one, so that a repeat landing on either is recognised;"
                    + " it also lets a pipeline be renamed without forgetting its keys.");

    public static final ConfigKey<String> MISSING_ID = enumKey("missing-id", MissingIdPolicy.DEAD_LETTER)
            .doc("What happens to a message without a usable key (none found, over 512 bytes, or not UTF-8):"
                    + " `dead-letter` it unprocessed, key it by the `hash` of its payload, or run it `unprotected`"
                    + " with no duplicate check.");

    public static final ConfigKey<String> FINGERPRINT = enumKey("fingerprint", FingerprintMode.SHA256)
            .doc("How the payload fingerprint stored with each key is computed; `none` never checks a duplicate's"
                    + " payload.");

    public static final ConfigKey<String> FINGERPRINT_MISMATCH = enumKey("fingerprint-mismatch", MismatchPolicy.DEAD_LETTER)
            .doc("What happens to a duplicate key whose payload differs from the processed one: `dead-letter` it,"
                    + " `skip` it like any duplicate, or `process` it anyway.");

    public static final ConfigKey<String> ORDERING = enumKey("ordering", Ordering.KEY)
            .doc("What runs in order under concurrency: messages of one `partition`, of one ordering `key`"
                    + " (see `ordering-key`), or `none`. Other keys run on while one waits for a retry.");

    /** The name of the pipeline key that lists the ordering key's extractors. */
    public static final String ORDERING_KEY = "ordering-key";

    public static final String ORDERING_KEY_DOC = "Under `ordering: key`, where the key whose messages run one at a time and"
            + " in order comes from: a list of ID extractors like `id`; the first that finds a value wins. Defaults to"
            + " the broker's own per-message key (the Kafka record key, the JMS `JMSXGroupID`; never the AMQP routing"
            + " key), else the idempotency key.";

    public static final ConfigKey<Integer> CONCURRENCY = ConfigKey.integer("concurrency").defaultValue(4)
            .atLeast(1).atMost(1024)
            .doc("How many handler runs at once.");

    public static final ConfigKey<Integer> MAX_IN_FLIGHT = ConfigKey.integer("max-in-flight").defaultValue(1000)
            .atLeast(1)
            .doc("How many deliveries the pipeline holds unsettled at once before it stops fetching;"
                    + " at least `concurrency`.");

    public static final ConfigKey<Duration> LEASE = ConfigKey.duration("lease").defaultValue(Duration.ofSeconds(30))
            .atLeast(Duration.ofSeconds(1))
            .doc("How long a claim on a key is exclusive before another consumer may take it over;"
                    + " renewed while the handler runs.");

    public static final ConfigKey<Duration> RETENTION = ConfigKey.duration("retention").defaultValue(Duration.ofDays(7))
            .atLeast(Duration.ofSeconds(1))
            .doc("How long a processed key is remembered; a duplicate arriving later is processed again.");

    public static final ConfigKey<Duration> HANDLER_TIMEOUT = ConfigKey.duration("handler-timeout")
            .defaultValue(Duration.ofSeconds(30)).atLeast(Duration.ofMillis(1))
            .doc("How long one handler run may take before it is interrupted and counted as a failure.");

    public static final ConfigKey<Integer> RETRY_MAX_ATTEMPTS = ConfigKey.integer("retry.max-attempts").defaultValue(3)
            .atLeast(1).atMost(100)
            .doc("Handler runs in all for one delivery, while the key stays claimed; 1 means no retry.");

    public static final ConfigKey<Duration> RETRY_INITIAL_BACKOFF = ConfigKey.duration("retry.initial-backoff")
            .defaultValue(Duration.ofMillis(100)).atLeast(Duration.ZERO)
            .doc("The wait before the first retry.");

    public static final ConfigKey<Duration> RETRY_MAX_BACKOFF = ConfigKey.duration("retry.max-backoff")
            .defaultValue(Duration.ofSeconds(10)).atLeast(Duration.ZERO)
            .doc("The longest wait between two runs; at least `retry.initial-backoff`.");

    public static final ConfigKey<Double> RETRY_MULTIPLIER = ConfigKey.decimal("retry.multiplier").defaultValue(2.0)
            .atLeast(1.0)
            .doc("How much each wait grows over the previous one.");

    public static final ConfigKey<Duration> COMMIT_LINGER = ConfigKey.duration("commit.linger")
            .defaultValue(Duration.ofMillis(1)).atLeast(Duration.ZERO).atMost(Duration.ofSeconds(1))
            .doc("Plain mode: the longest a handled message's completion waits for others to join one batched"
                    + " store write. A batch goes sooner when it is full or when no other handler is running; the"
                    + " message is acked only once its completion is stored. This widens the window in which a"
                    + " crash re-runs a handled message by at most this much plus one store round trip.");

    public static final ConfigKey<Integer> COMMIT_BATCH_SIZE = ConfigKey.integer("commit.batch-size")
            .defaultValue(256).atLeast(1).atMost(10_000)
            .doc("Plain mode: the most completions in one store write; 1 completes each key on its own, on the"
                    + " worker that ran it.");

    public static final ConfigKey<Integer> MAX_DELIVERIES = ConfigKey.integer("max-deliveries").defaultValue(5)
            .atLeast(1).atMost(1000)
            .doc("Handler runs of one key that started and never completed (the consumer crashed mid-run) before"
                    + " the message is dead-lettered without running again. Counted for keys taken over after a lease"
                    + " ran out, which run alone, so messages in flight beside a crash are not blamed.");

    public static final ConfigKey<String> DEAD_LETTER = ConfigKey.string("dead-letter")
            .validate(s -> !s.isBlank(), "not be blank")
            .doc("Where dead-lettered messages go; the broker adapter's default when left out.");

    public static final ConfigKey<Boolean> TRANSACTIONAL = ConfigKey.bool("transactional").defaultValue(false)
            .doc("Record the key in the same database transaction as the handler's own writes (the store must"
                    + " support it, as the JDBC store does): the handler gets the transaction from its context,"
                    + " and a crash rolls back both, so the effect on that database is exactly once.");

    /** The keys of one {@code pipelines.<name>} section, except {@value #ID}. */
    public static final ConfigSpec PIPELINE = ConfigSpec.builder()
            .define(SOURCE)
            .define(HANDLER)
            .define(NAMESPACE)
            .define(MISSING_ID)
            .define(FINGERPRINT)
            .define(FINGERPRINT_MISMATCH)
            .define(ORDERING)
            .define(CONCURRENCY)
            .define(MAX_IN_FLIGHT)
            .define(LEASE)
            .define(RETENTION)
            .define(HANDLER_TIMEOUT)
            .define(RETRY_MAX_ATTEMPTS)
            .define(RETRY_INITIAL_BACKOFF)
            .define(RETRY_MAX_BACKOFF)
            .define(RETRY_MULTIPLIER)
            .define(COMMIT_LINGER)
            .define(COMMIT_BATCH_SIZE)
            .define(MAX_DELIVERIES)
            .define(DEAD_LETTER)
            .define(TRANSACTIONAL)
            .build();

    public static final ConfigKey<Duration> SHUTDOWN_TIMEOUT = ConfigKey.duration("shutdown-timeout")
            .defaultValue(Duration.ofSeconds(30)).atLeast(Duration.ZERO)
            .doc("How long a graceful stop waits for running handlers before it interrupts them and releases"
                    + " their keys.");

    public static final ConfigKey<Duration> SUMMARY_INTERVAL = ConfigKey.duration("summary-interval")
            .defaultValue(Duration.ofSeconds(30)).atLeast(Duration.ZERO)
            .doc("How often each pipeline logs a summary line at info (processed, duplicates, failures, rate);"
                    + " 0s turns the lines off.");

    public static final ConfigKey<Duration> HANDLER_CREATE_TIMEOUT = ConfigKey.duration("handler-create-timeout")
            .defaultValue(Duration.ofSeconds(30)).atLeast(Duration.ofMillis(1))
            .doc("How long creating a handler from its class (its public no-arg constructor) may take, at `idem"
                    + " check` and at start, before it fails naming the class; the stuck constructor's thread is"
                    + " interrupted and left behind.");

    public static final ConfigKey<Boolean> HTTP_ENABLED = ConfigKey.bool("http.enabled").defaultValue(true)
            .doc("Whether `idem run` serves /health/live, /health/ready and /metrics (Prometheus text).");

    public static final ConfigKey<String> HTTP_HOST = ConfigKey.string("http.host").defaultValue("127.0.0.1")
            .validate(HOST.asMatchPredicate(), "be a host name or an IP address of this machine, such as 127.0.0.1,"
                    + " ::1 or 0.0.0.0")
            .doc("The address the health and metrics port binds to; 0.0.0.0 for every interface. It must resolve"
                    + " to an address of this machine (checked by `idem check`); `idem run` binds it before any"
                    + " pipeline starts.");

    public static final ConfigKey<Integer> HTTP_PORT = ConfigKey.integer("http.port").defaultValue(9464)
            .atLeast(0).atMost(65535)
            .doc("The health and metrics port; 0 picks a free one (logged at start).");

    /** The keys of the {@code runtime} section. */
    public static final ConfigSpec RUNTIME = ConfigSpec.builder()
            .define(SHUTDOWN_TIMEOUT)
            .define(SUMMARY_INTERVAL)
            .define(HANDLER_CREATE_TIMEOUT)
            .define(HTTP_ENABLED)
            .define(HTTP_HOST)
            .define(HTTP_PORT)
            .build();

    private RuntimeConfigSpecs() {
    }

    /** How an enum constant is written in YAML: {@code DEAD_LETTER} as {@code dead-letter}. */
    static String configValue(Enum<?> constant) {
        return constant.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** The constant a validated YAML value names; the value was already checked against the constants. */
    static <E extends Enum<E>> E enumValue(Class<E> type, String configValue) {
        return Enum.valueOf(type, configValue.toUpperCase(Locale.ROOT).replace('-', '_'));
    }

    // The allowed values come from the enum itself, so a new constant cannot be forgotten here.
    private static <E extends Enum<E>> ConfigKey<String> enumKey(String name, E defaultValue) {
        String[] allowed = Arrays.stream(defaultValue.getDeclaringClass().getEnumConstants())
                .map(RuntimeConfigSpecs::configValue)
                .toArray(String[]::new);
        return ConfigKey.oneOf(name, allowed).defaultValue(configValue(defaultValue));
    }
}
