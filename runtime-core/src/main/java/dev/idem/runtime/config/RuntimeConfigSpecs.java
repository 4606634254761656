package dev.idem.runtime.config;

import dev.idem.runtime.config.PipelineConfig.FingerprintMode;
import dev.idem.runtime.config.PipelineConfig.MismatchPolicy;
import dev.idem.runtime.config.PipelineConfig.MissingIdPolicy;
import dev.idem.runtime.config.PipelineConfig.Ordering;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.Secret;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.TransactionalDedupStore;
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

    /**
     * The longest pipeline name and {@code namespace}, in characters (of {@link #PIPELINE_NAME}, so as many bytes):
     * the name is the namespace unless one is set, and every store holds a namespace of up to
     * {@link StoreKey#MAX_NAMESPACE_BYTES} bytes (the JDBC store's column, no more).
     */
    public static final int MAX_NAME_LENGTH = StoreKey.MAX_NAMESPACE_BYTES;

    /** Why a name or namespace is too long, completing "must ...". */
    static final String NAME_LENGTH_RULE = "be at most " + MAX_NAME_LENGTH + " characters, the longest namespace"
            + " every dedup store holds";

    // Host names, IPv4 and IPv6 literals (with or without brackets and a scope); whether it resolves is checked apart.
    private static final Pattern HOST = Pattern.compile("[A-Za-z0-9._:%\\[\\]-]+");

    private static final Pattern CLASS_NAME =
            Pattern.compile("[\\p{L}_$][\\p{L}\\p{N}_$]*(\\.[\\p{L}_$][\\p{L}\\p{N}_$]*)*");

    /** Selects a plugin by id: {@code broker.type}, {@code store.type}, and each {@code id} entry's {@code type}. */
    public static final ConfigKey<String> TYPE = ConfigKey.string("type").required()
            .doc("The id of the plugin to use; its settings go in the section named after that id.");

    /** What the store keeps of each key: {@code store.key-digest}, beside {@code store.type}. */
    public static final ConfigKey<String> KEY_DIGEST = enumKey("key-digest", KeyDigest.NONE)
            .doc("What the dedup store keeps of each message's idempotency key (and of each aggregate ID of the"
                    + " sequence guard): `none`, the key itself (up to 512 bytes); `sha256-128`, the first 128 bits"
                    + " of the SHA-256 of its UTF-8 as 22 characters of unpadded base64url, whatever its length,"
                    + " which saves store memory for UUIDs (36 characters) and long composite keys. Every store"
                    + " gets it, and `idem store` and the console apply it to the ID you type; logs, metrics,"
                    + " spans, dead-letter headers, emitted IDs and the handler keep the real key. Two distinct"
                    + " keys with the same digest are one key to the store, so the second message is taken for a"
                    + " duplicate (skipped, or dead-lettered as `fingerprint-mismatch` when its payload differs"
                    + " under the default `fingerprint`). For n keys alive at once the chance of any such"
                    + " collision is about n^2 / 2^129: 1.5e-23 for 10^8 keys, 1.5e-21 for 10^9, 1.5e-19 for"
                    + " 10^10, 1.5e-15 for 10^12 (someone who picks the IDs needs about 2^64 SHA-256 runs to make"
                    + " two collide). Choose it before the store first holds keys: a store's keys are found only"
                    + " under the setting they were written with, so switching it on or off forgets every key"
                    + " held, and a message delivered again after the switch runs again (the keys of before"
                    + " expire with their retention). Every pipeline of the runtime uses it.");

    /** The runtime's own keys of the {@code store} section, beside {@code type} and the store's section. */
    public static final ConfigSpec STORE = ConfigSpec.builder()
            .define(KEY_DIGEST)
            .build();

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

    public static final ConfigKey<Map<String, String>> HANDLER_SETTINGS = ConfigKey.map("handler-settings")
            .doc("Settings for the handler, which it receives through `dev.idem.api.HandlerLifecycle.init` once,"
                    + " before its first message (a handler class that does not implement it is refused settings):"
                    + " any YAML map, nested sections flattened to dotted names"
                    + " (`db: {url: ...}` is `db.url`), every value a string. Use `${VAR}` for secrets; settings"
                    + " whose names suggest a secret (`password`, `secret`, `token`, `credential`, `api-key`, ...)"
                    + " and credentials in URLs are masked wherever configuration is printed. `idem check`"
                    + " validates them but does not call `init`.");

    public static final ConfigKey<String> PAYLOAD_FORMAT = ConfigKey.oneOf("payload.format",
            Arrays.stream(PayloadPolicy.Format.values()).map(RuntimeConfigSpecs::configValue).toArray(String[]::new))
            .doc("What the runtime reads each payload as before the handler runs: `bytes`, not at all (the handler"
                    + " takes the bytes); `text`, UTF-8 text; `json`, one JSON value in UTF-8 (each name once per"
                    + " object, nothing after the value), checked against `payload.schema` when set and, for a typed"
                    + " handler (`dev.idem.api.TypedHandler<T>`), decoded into `T` with the runtime's Jackson. Left out,"
                    + " it is `bytes` for a handler of bytes (any `MessageHandler`, as handlers always ran, or"
                    + " `TypedHandler<byte[]>`), `text` for `TypedHandler<String>` and `json` for any other typed"
                    + " handler. A payload that does not read is dead-lettered as `invalid-payload`, naming the JSON"
                    + " path, the line and column and what was expected (never the payload's content), without running"
                    + " the handler. A typed handler of another type than `byte[]` and `String` needs `json`, unless it"
                    + " implements `dev.idem.api.PayloadCodec` and decodes its own.");

    public static final ConfigKey<String> PAYLOAD_UNKNOWN_FIELDS = enumKey("payload.unknown-fields",
            PayloadPolicy.UnknownFields.IGNORE)
            .doc("Under `payload.format: json`, what decoding into a typed handler's payload type does with a JSON"
                    + " property the type does not have: `ignore` it (producers may add fields first), or `fail`, which"
                    + " dead-letters the message as `invalid-payload`, naming the property. A handler that implements"
                    + " `PayloadCodec` decides for itself.");

    public static final ConfigKey<String> PAYLOAD_SCHEMA = ConfigKey.string("payload.schema")
            .validate(s -> !s.isBlank(), "not be blank")
            .doc("A JSON Schema file every payload must match before the handler runs, under `payload.format: json`:"
                    + " draft 2020-12 unless its `$schema` names another draft, `format` asserted (`date-time`,"
                    + " `email`, ...). A path relative to the working directory; `${IDEM_HOME}/conf/...` names one in the"
                    + " installation. Its `$ref`s may name files beside it; nothing is fetched over the network."
                    + " `idem check` reads it and checks it against its draft's meta-schema. A payload that does not"
                    + " match is dead-lettered as `invalid-payload`, naming the path, line and column and the rule.");

    public static final ConfigKey<String> NAMESPACE = ConfigKey.string("namespace")
            .validate(PIPELINE_NAME.asMatchPredicate(), "start with a lowercase letter or digit and hold only lowercase"
                    + " letters, digits, '.', '_' and '-'")
            .validate(n -> n.length() <= MAX_NAME_LENGTH, NAME_LENGTH_RULE)
            .doc("The scope of the pipeline's keys in the store; the pipeline's name when left out. Pipelines that"
                    + " consume the same source must share one, so that a repeat landing on either is recognised;"
                    + " it also lets a pipeline be renamed without forgetting its keys. Like a pipeline's name, at"
                    + " most " + MAX_NAME_LENGTH + " characters.");

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

    public static final ConfigKey<Integer> RETRY_CONFLICT_ATTEMPTS = ConfigKey.integer("retry.conflict-attempts")
            .defaultValue(5).atLeast(0).atMost(100)
            .doc("Handler runs at once, without back-off, after the handler threw `ConcurrentUpdateException` (an"
                    + " optimistic update lost a race), each re-reading the row; past them the conflict is an ordinary"
                    + " failure, retried with back-off under `retry.max-attempts`. 0 treats a conflict as a failure at"
                    + " once.");

    public static final ConfigKey<Duration> COMMIT_LINGER = ConfigKey.duration("commit.linger")
            .defaultValue(Duration.ofMillis(1)).atLeast(Duration.ZERO).atMost(Duration.ofSeconds(1))
            .doc("Plain mode: the longest a handled message's completion waits for others to join one batched"
                    + " store write. A batch goes sooner when it is full or when no other handler is running; the"
                    + " message is acked only once its completion is stored. This widens the window in which a"
                    + " crash re-runs a handled message by at most this much plus one store round trip.");

    public static final ConfigKey<Integer> COMMIT_BATCH_SIZE = ConfigKey.integer("commit.batch-size")
            .defaultValue(100).atLeast(1).atMost(10_000)
            .doc("Plain mode: the most completions in one store write; 1 completes each key on its own, on the"
                    + " worker that ran it.");

    public static final ConfigKey<Integer> COMMIT_WRITERS = ConfigKey.integer("commit.writers")
            .defaultValue(3).atLeast(1).atMost(16)
            .doc("Plain mode with `commit.batch-size` above 1: how many completion batches are written to the store"
                    + " at once, each on a connection of its own. A further batch goes while another is being written"
                    + " only once it is full, so batches stay large and a second write starts only when completions"
                    + " come faster than one writer stores them. 1 writes one batch at a time.");

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

    public static final ConfigKey<Integer> TRANSACTIONAL_GROUP = ConfigKey.integer("transactional.group")
            .defaultValue(10).atLeast(1).atMost(1000)
            .doc("Transactional mode: up to this many claimed messages that a worker takes together run in one"
                    + " database transaction, each under a savepoint of its own. Groups fill only while messages"
                    + " wait (a worker takes its fair share of the ready keys, never waits for more), so a quiet"
                    + " pipeline still runs one message per transaction. A message whose handler fails is rolled"
                    + " back to its savepoint and retried or dead-lettered alone; the others commit together, then"
                    + " each is acked. A failure of the database itself (a deadlock, a lost connection) or a crash"
                    + " rolls the whole group back, and its messages run again. 1 gives each message its own"
                    + " transaction. Plain mode and a batch handler ignore the default and refuse another value. Written"
                    + " flat beside"
                    + " `transactional: true` (`transactional.group: 1`).");

    public static final ConfigKey<String> TRANSACTIONAL_SAVEPOINTS = enumKey("transactional.savepoints",
            TransactionalDedupStore.Savepoints.PER_MESSAGE)
            .doc("Transactional mode with `transactional.group` above 1: `per-message` sets a savepoint before each"
                    + " message of a group, so every handler runs once. `on-failure` sets none, which spares a"
                    + " database round trip per message; when a handler fails, the whole transaction is rolled back"
                    + " and the group runs again with a savepoint per message, so the handlers before the failing one"
                    + " run twice. Use it only when a handler's every effect is in the transaction.");

    /** The name of the sequence guard's aggregate extractors under a pipeline. */
    public static final String SEQUENCE_AGGREGATE = "sequence.aggregate";

    public static final String SEQUENCE_AGGREGATE_DOC = "Turns the sequence guard on: where the aggregate's ID comes"
            + " from (a list of ID extractors like `id`; the first that finds a value wins). Events of one aggregate"
            + " run one at a time, in the order of their numbers, with the aggregate as their ordering key. An event"
            + " without one is dead-lettered as `invalid-sequence`. Needs `sequence.number` and a store that keeps"
            + " watermarks (Caffeine, Redis, JDBC).";

    /** The name of the sequence guard's number extractors under a pipeline. */
    public static final String SEQUENCE_NUMBER = "sequence.number";

    public static final String SEQUENCE_NUMBER_DOC = "Where each event's sequence number comes from (a list of ID"
            + " extractors, e.g. a header); it must be an unsigned decimal number from 1 up to 2^63-1. An event"
            + " numbered at or below its aggregate's watermark is `stale` (acked, counted, not run); the next number"
            + " runs and raises the watermark with its key's completion. A missing or malformed number is"
            + " dead-lettered as `invalid-sequence`.";

    public static final ConfigKey<String> SEQUENCE_GAPS = enumKey("sequence.gaps", SequencePolicy.Gaps.WAIT)
            .doc("What an event numbered past the next one does: `wait` (set aside, while its aggregate's later"
                    + " events and other aggregates go on, until the missing numbers ran or `sequence.gap-timeout`"
                    + " passed; then it is dead-lettered as `sequence-gap`, naming the missing numbers) or `accept`"
                    + " (run it; the watermark jumps, and the missing events are stale when they come).");

    public static final ConfigKey<Duration> SEQUENCE_GAP_TIMEOUT = ConfigKey.duration("sequence.gap-timeout")
            .defaultValue(Duration.ofSeconds(30)).atLeast(Duration.ofMillis(1))
            .doc("Under `sequence.gaps: wait`, how long an event waits for the numbers before it. It holds its"
                    + " delivery unacked meanwhile (on Kafka the partition's committed offset waits too), so keep it"
                    + " below `lease` times a few and the broker's redelivery timeouts.");

    public static final ConfigKey<Duration> SEQUENCE_RETENTION = ConfigKey.duration("sequence.retention")
            .defaultValue(Duration.ofDays(30)).atLeast(Duration.ofSeconds(1))
            .doc("How long an aggregate's watermark is remembered after its last event; an aggregate quiet for"
                    + " longer starts over, and an old event replayed after that runs again.");

    public static final ConfigKey<String> EMIT_ID_HEADER = ConfigKey.string("emit.id-header").defaultValue("message-id")
            .validate(s -> !s.isBlank(), "not be blank")
            .doc("The header that carries the ID of each message the handler emits through `HandlerContext.send`"
                    + " (a name-based UUID of the namespace, the inbound key and the emit's ordinal, so a re-run emits"
                    + " the same IDs); a downstream pipeline takes its key from it. Where the broker lets the sender"
                    + " choose the message ID, it is set too.");

    public static final ConfigKey<Integer> STEPS_MAX_SIZE = ConfigKey.integer("steps.max-size")
            .defaultValue(64 * 1024).atLeast(1).atMost(StepStore.MAX_VALUE_BYTES)
            .doc("The largest result a durable step (`HandlerContext.step`) may record, in bytes once encoded (JSON, or"
                    + " the bytes of a `byte[]`). A step whose result is larger ran but is not recorded: it fails the"
                    + " run without retry, since running it again would repeat its effect. Record what a re-run needs"
                    + " (a charge's ID), not a whole response.");

    public static final ConfigKey<Integer> REPLY_MAX_SIZE = ConfigKey.integer("reply.max-size")
            .defaultValue(64 * 1024).atLeast(1).atMost(ReplyStore.MAX_REPLY_BYTES)
            .doc("The largest reply a handler may send to a request (`HandlerContext.reply`), in bytes: its payload"
                    + " plus its header names and values in UTF-8. The reply is stored with the request's key, so a"
                    + " duplicate of the request gets it again; a larger one fails the run with"
                    + " `IllegalArgumentException`.");

    public static final ConfigKey<Integer> BATCH_SIZE = ConfigKey.integer("batch.size").defaultValue(100)
            .atLeast(1).atMost(10_000)
            .doc("A batch handler (`BatchHandler`): the most messages one call takes. Each is claimed, none is a"
                    + " duplicate, and no two share an ordering key. In transactional mode the batch is one database"
                    + " transaction. Ignored for other handlers.");

    public static final ConfigKey<Duration> BATCH_LINGER = ConfigKey.duration("batch.linger")
            .defaultValue(Duration.ofMillis(5)).atLeast(Duration.ZERO).atMost(Duration.ofSeconds(10))
            .doc("A batch handler: the longest a worker waits for a batch to fill up to `batch.size` before it runs"
                    + " what it has. A message waits at most this long more before its handler starts. Ignored for"
                    + " other handlers.");

    /** The keys of one {@code pipelines.<name>} section, except {@value #ID}. */
    public static final ConfigSpec PIPELINE = ConfigSpec.builder()
            .define(SOURCE)
            .define(HANDLER)
            .define(HANDLER_SETTINGS)
            .define(PAYLOAD_FORMAT)
            .define(PAYLOAD_UNKNOWN_FIELDS)
            .define(PAYLOAD_SCHEMA)
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
            .define(RETRY_CONFLICT_ATTEMPTS)
            .define(COMMIT_LINGER)
            .define(COMMIT_BATCH_SIZE)
            .define(COMMIT_WRITERS)
            .define(MAX_DELIVERIES)
            .define(DEAD_LETTER)
            .define(TRANSACTIONAL)
            .define(TRANSACTIONAL_GROUP)
            .define(TRANSACTIONAL_SAVEPOINTS)
            .define(SEQUENCE_GAPS)
            .define(SEQUENCE_GAP_TIMEOUT)
            .define(SEQUENCE_RETENTION)
            .define(EMIT_ID_HEADER)
            .define(STEPS_MAX_SIZE)
            .define(REPLY_MAX_SIZE)
            .define(BATCH_SIZE)
            .define(BATCH_LINGER)
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

    public static final ConfigKey<Boolean> CONSOLE_ENABLED = ConfigKey.bool("console.enabled").defaultValue(false)
            .doc("Whether `idem run` serves the operator's console under /console on the health and metrics port"
                    + " (`http.*`): pipelines, live figures, dead letters and their replay, key lookup and release,"
                    + " and its JSON API under /console/api. Off a loopback `http.host` it needs `console.token`.");

    public static final ConfigKey<Secret> CONSOLE_TOKEN = ConfigKey.secret("console.token")
            .doc("The console's token, best given as ${IDEM_CONSOLE_TOKEN}: sent as `Authorization: Bearer` or"
                    + " typed into the console's login form. Every page and API call needs it when `http.host` is"
                    + " not a loopback address; actions (replaying dead letters, releasing a claim) need it always, so"
                    + " without it the console only shows.");

    public static final ConfigKey<Boolean> CONSOLE_SHOW_PAYLOADS = ConfigKey.bool("console.show-payloads")
            .defaultValue(false)
            .doc("Whether the console's dead-letter view may send a dead letter's whole payload to the browser, on"
                    + " request. Off, it shows the first 256 bytes of each, escaped: payloads may hold personal"
                    + " data.");

    /** The keys of the {@code runtime} section. */
    public static final ConfigSpec RUNTIME = ConfigSpec.builder()
            .define(SHUTDOWN_TIMEOUT)
            .define(SUMMARY_INTERVAL)
            .define(HANDLER_CREATE_TIMEOUT)
            .define(HTTP_ENABLED)
            .define(HTTP_HOST)
            .define(HTTP_PORT)
            .define(CONSOLE_ENABLED)
            .define(CONSOLE_TOKEN)
            .define(CONSOLE_SHOW_PAYLOADS)
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
