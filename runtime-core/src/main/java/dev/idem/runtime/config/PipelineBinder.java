package dev.idem.runtime.config;

import static dev.idem.runtime.config.RuntimeConfigSpecs.CONCURRENCY;
import static dev.idem.runtime.config.RuntimeConfigSpecs.DEAD_LETTER;
import static dev.idem.runtime.config.RuntimeConfigSpecs.TRANSACTIONAL;
import static dev.idem.runtime.config.RuntimeConfigSpecs.FINGERPRINT;
import static dev.idem.runtime.config.RuntimeConfigSpecs.FINGERPRINT_MISMATCH;
import static dev.idem.runtime.config.RuntimeConfigSpecs.HANDLER;
import static dev.idem.runtime.config.RuntimeConfigSpecs.HANDLER_TIMEOUT;
import static dev.idem.runtime.config.RuntimeConfigSpecs.LEASE;
import static dev.idem.runtime.config.RuntimeConfigSpecs.MAX_DELIVERIES;
import static dev.idem.runtime.config.RuntimeConfigSpecs.MAX_IN_FLIGHT;
import static dev.idem.runtime.config.RuntimeConfigSpecs.MISSING_ID;
import static dev.idem.runtime.config.RuntimeConfigSpecs.ORDERING;
import static dev.idem.runtime.config.RuntimeConfigSpecs.RETENTION;
import static dev.idem.runtime.config.RuntimeConfigSpecs.RETRY_INITIAL_BACKOFF;
import static dev.idem.runtime.config.RuntimeConfigSpecs.RETRY_MAX_ATTEMPTS;
import static dev.idem.runtime.config.RuntimeConfigSpecs.RETRY_MAX_BACKOFF;
import static dev.idem.runtime.config.RuntimeConfigSpecs.RETRY_MULTIPLIER;
import static dev.idem.runtime.config.RuntimeConfigSpecs.SOURCE;

import dev.idem.api.HandlerSettings;
import dev.idem.runtime.config.PipelineConfig.FingerprintMode;
import dev.idem.runtime.config.PipelineConfig.MismatchPolicy;
import dev.idem.runtime.config.PipelineConfig.MissingIdPolicy;
import dev.idem.runtime.config.PipelineConfig.Ordering;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.TransactionalDedupStore;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Validates the {@code pipelines} section and binds each pipeline to a {@link PipelineConfig};
 * also the reverse, for printing. Not thread-safe: it reports into one load's {@link Problems}.
 */
final class PipelineBinder {

    private final SectionValidator validator;
    private final PluginSelector selector;
    private final Problems problems;

    PipelineBinder(SectionValidator validator, PluginSelector selector, Problems problems) {
        this.validator = validator;
        this.selector = selector;
        this.problems = problems;
    }

    /** Binds every pipeline, in file order; invalid ones are reported and left out. */
    Map<String, PipelineConfig> bindAll(Object raw, String path) {
        Map<String, PipelineConfig> out = new LinkedHashMap<>();
        if (raw == null || raw instanceof Map<?, ?> m && m.isEmpty()) {
            problems.missing(path, "at least one pipeline is needed, e.g. " + path + ": {orders: {source: orders}}");
            return out;
        }
        if (!(raw instanceof Map<?, ?> pipelines)) {
            problems.invalid(path, Problems.show(raw), "must be a map of pipelines by name, e.g. "
                    + path + ": {orders: {source: orders}}");
            return out;
        }
        for (Map.Entry<?, ?> e : pipelines.entrySet()) {
            String name = String.valueOf(e.getKey());
            if (!RuntimeConfigSpecs.PIPELINE_NAME.matcher(name).matches()) {
                problems.add("Invalid pipeline name '" + Problems.show(name) + "' in " + path + ": must start with a"
                        + " lowercase letter or digit and hold only lowercase letters, digits, '.', '_' and '-'");
            } else if (name.length() > RuntimeConfigSpecs.MAX_NAME_LENGTH) {
                problems.add("Invalid pipeline name '" + Problems.show(name) + "' in " + path + ": it is "
                        + name.length() + " characters long and must " + RuntimeConfigSpecs.NAME_LENGTH_RULE
                        + " (the name is the namespace of the pipeline's keys by default); give it a shorter name");
            }
            // Bound even under a bad name, so its other problems show in the same run.
            PipelineConfig pipeline = bind(name, e.getValue(), path + "." + name);
            if (pipeline != null) {
                out.put(name, pipeline);
            }
        }
        checkSharedSources(out, path);
        return out;
    }

    /**
     * Two pipelines on one source split its messages (or, with their own consumer groups, both get each one);
     * under two namespaces a repeat that lands on the other pipeline runs again.
     */
    private void checkSharedSources(Map<String, PipelineConfig> pipelines, String path) {
        Map<String, PipelineConfig> firstBySource = new LinkedHashMap<>();
        for (PipelineConfig p : pipelines.values()) {
            PipelineConfig first = firstBySource.putIfAbsent(p.source(), p);
            if (first != null && !first.namespace().equals(p.namespace())) {
                problems.add(path + "." + first.name() + " and " + path + "." + p.name() + " both consume '" + p.source()
                        + "' but keep their keys apart (namespaces '" + first.namespace() + "' and '" + p.namespace()
                        + "'), so a repeat that lands on the other pipeline would run its handler again. Give them"
                        + " one namespace (" + path + ".<name>." + RuntimeConfigSpecs.NAMESPACE.name() + ": "
                        + first.namespace() + "), or consume different sources");
            }
        }
    }

    private PipelineConfig bind(String name, Object raw, String path) {
        SectionValidator.Result result =
                validator.validate(raw, path, RuntimeConfigSpecs.PIPELINE,
                        List.of(RuntimeConfigSpecs.ID, RuntimeConfigSpecs.ORDERING_KEY,
                                RuntimeConfigSpecs.SEQUENCE_AGGREGATE, RuntimeConfigSpecs.SEQUENCE_NUMBER));
        if (result.config() == null && !(raw == null || raw instanceof Map<?, ?>)) {
            return null; // Not a section at all: already reported, nothing more to say.
        }
        List<PluginSection> extractors = selector.idExtractors(result.structured().get(RuntimeConfigSpecs.ID),
                path + "." + RuntimeConfigSpecs.ID);
        Object orderingRaw = result.structured().get(RuntimeConfigSpecs.ORDERING_KEY);
        List<PluginSection> ordering = orderingRaw == null ? List.of()
                : selector.idExtractors(orderingRaw, path + "." + RuntimeConfigSpecs.ORDERING_KEY);
        SectionConfig c = result.config();
        Object aggregateRaw = result.structured().get(RuntimeConfigSpecs.SEQUENCE_AGGREGATE);
        Object numberRaw = result.structured().get(RuntimeConfigSpecs.SEQUENCE_NUMBER);
        List<PluginSection> aggregate = aggregateRaw == null ? List.of()
                : selector.idExtractors(aggregateRaw, path + "." + RuntimeConfigSpecs.SEQUENCE_AGGREGATE);
        List<PluginSection> number = numberRaw == null ? List.of()
                : selector.idExtractors(numberRaw, path + "." + RuntimeConfigSpecs.SEQUENCE_NUMBER);
        if (c == null || extractors == null || ordering == null || aggregate == null || number == null
                || !crossChecksPass(c, path) || !sequenceChecksPass(c, path, aggregateRaw, numberRaw, orderingRaw)) {
            return null;
        }
        SequencePolicy sequence = aggregateRaw == null ? null : new SequencePolicy(aggregate, number,
                RuntimeConfigSpecs.enumValue(SequencePolicy.Gaps.class, c.get(RuntimeConfigSpecs.SEQUENCE_GAPS)),
                c.get(RuntimeConfigSpecs.SEQUENCE_GAP_TIMEOUT), c.get(RuntimeConfigSpecs.SEQUENCE_RETENTION));
        return toPipeline(name, c, extractors, ordering, sequence);
    }

    /** The sequence guard needs both lists, and the aggregate as the only ordering key. */
    private boolean sequenceChecksPass(SectionConfig c, String path, Object aggregateRaw, Object numberRaw,
            Object orderingRaw) {
        boolean anySequenceKey = aggregateRaw != null || numberRaw != null
                || c.isGiven(RuntimeConfigSpecs.SEQUENCE_GAPS.name())
                || c.isGiven(RuntimeConfigSpecs.SEQUENCE_GAP_TIMEOUT.name())
                || c.isGiven(RuntimeConfigSpecs.SEQUENCE_RETENTION.name());
        if (!anySequenceKey) {
            return true;
        }
        boolean ok = true;
        String example = "e.g. sequence: {aggregate: [{type: json-pointer, pointer: /accountId}],"
                + " number: [{type: header, name: event-seq}]}";
        if (aggregateRaw == null) {
            problems.missing(path + "." + RuntimeConfigSpecs.SEQUENCE_AGGREGATE,
                    "the sequence guard needs the aggregate's ID extractors, " + example);
            ok = false;
        }
        if (numberRaw == null) {
            problems.missing(path + "." + RuntimeConfigSpecs.SEQUENCE_NUMBER,
                    "the sequence guard needs the event number's extractors, " + example);
            ok = false;
        }
        if (orderingRaw != null) {
            problems.add(path + "." + RuntimeConfigSpecs.ORDERING_KEY + " cannot be set with " + path
                    + ".sequence: the sequence guard orders each aggregate's events by the aggregate's ID"
                    + " (sequence.aggregate); remove " + RuntimeConfigSpecs.ORDERING_KEY);
            ok = false;
        }
        String ordering = c.get(ORDERING);
        if (!RuntimeConfigSpecs.configValue(Ordering.KEY).equals(ordering)) {
            problems.invalid(path + "." + ORDERING.name(), ordering, "must be key (the default) with " + path
                    + ".sequence: the events of one aggregate must run one at a time");
            ok = false;
        }
        return ok;
    }

    /** Rules between keys, which a single key's validator cannot express. */
    private boolean crossChecksPass(SectionConfig c, String path) {
        boolean ok = true;
        int concurrency = c.get(CONCURRENCY);
        int maxInFlight = c.get(MAX_IN_FLIGHT);
        if (maxInFlight < concurrency) {
            problems.invalid(path + "." + MAX_IN_FLIGHT.name(), String.valueOf(maxInFlight),
                    "must be at least " + CONCURRENCY.name() + " (" + concurrency + ")" + defaultNote(c, MAX_IN_FLIGHT));
            ok = false;
        }
        // The default is no error: it only applies in transactional mode. A value of one's own asks for that mode.
        int group = c.get(RuntimeConfigSpecs.TRANSACTIONAL_GROUP);
        if (group > 1 && group != RuntimeConfigSpecs.TRANSACTIONAL_GROUP.defaultValue() && !c.get(TRANSACTIONAL)) {
            problems.add(path + "." + RuntimeConfigSpecs.TRANSACTIONAL_GROUP.name() + " groups the transactions of"
                    + " transactional mode, but " + path + "." + TRANSACTIONAL.name() + " is not true; set "
                    + TRANSACTIONAL.name() + ": true, or remove " + RuntimeConfigSpecs.TRANSACTIONAL_GROUP.name());
            ok = false;
        }
        if (c.get(RuntimeConfigSpecs.TRANSACTIONAL_SAVEPOINTS).equals("on-failure") && !c.get(TRANSACTIONAL)) {
            problems.add(path + "." + RuntimeConfigSpecs.TRANSACTIONAL_SAVEPOINTS.name() + ": on-failure places the"
                    + " savepoints of grouped transactions, but " + path + "." + TRANSACTIONAL.name() + " is not true;"
                    + " set " + TRANSACTIONAL.name() + ": true, or remove "
                    + RuntimeConfigSpecs.TRANSACTIONAL_SAVEPOINTS.name());
            ok = false;
        } else if (c.get(RuntimeConfigSpecs.TRANSACTIONAL_SAVEPOINTS).equals("on-failure")
                && c.get(RuntimeConfigSpecs.TRANSACTIONAL_GROUP) <= 1) {
            problems.add(path + "." + RuntimeConfigSpecs.TRANSACTIONAL_SAVEPOINTS.name() + ": on-failure places the"
                    + " savepoints of grouped transactions, but " + path + "." + RuntimeConfigSpecs.TRANSACTIONAL_GROUP.name()
                    + " is " + c.get(RuntimeConfigSpecs.TRANSACTIONAL_GROUP) + "; set "
                    + RuntimeConfigSpecs.TRANSACTIONAL_GROUP.name() + " above 1 (with " + TRANSACTIONAL.name()
                    + ": true), or remove " + RuntimeConfigSpecs.TRANSACTIONAL_SAVEPOINTS.name());
            ok = false;
        }
        // Left out, the format follows the handler's payload type, which Payloads checks against the schema.
        String format = c.get(RuntimeConfigSpecs.PAYLOAD_FORMAT);
        if (c.get(RuntimeConfigSpecs.PAYLOAD_SCHEMA) != null && format != null
                && !RuntimeConfigSpecs.configValue(PayloadPolicy.Format.JSON).equals(format)) {
            problems.add(path + "." + RuntimeConfigSpecs.PAYLOAD_SCHEMA.name() + " checks JSON payloads, but " + path + "."
                    + RuntimeConfigSpecs.PAYLOAD_FORMAT.name() + " is " + format + "; set "
                    + RuntimeConfigSpecs.PAYLOAD_FORMAT.name() + ": json, or remove "
                    + RuntimeConfigSpecs.PAYLOAD_SCHEMA.name());
            ok = false;
        }
        Duration initial = c.get(RETRY_INITIAL_BACKOFF);
        Duration max = c.get(RETRY_MAX_BACKOFF);
        if (max.compareTo(initial) < 0) {
            problems.invalid(path + "." + RETRY_MAX_BACKOFF.name(), ConfigKey.formatDuration(max),
                    "must be at least " + RETRY_INITIAL_BACKOFF.name() + " (" + ConfigKey.formatDuration(initial) + ")"
                            + defaultNote(c, RETRY_MAX_BACKOFF));
            ok = false;
        }
        return ok;
    }

    // A person who never wrote the key must learn that it is the default that clashes, and that they may set it.
    private static String defaultNote(SectionConfig c, ConfigKey<?> key) {
        return c.isGiven(key.name()) ? "" : "; that is its default, so set " + key.name() + " too";
    }

    static PipelineConfig toPipeline(String name, SectionConfig c, List<PluginSection> extractors,
            List<PluginSection> orderingKey, SequencePolicy sequence) {
        return new PipelineConfig(name, c, extractors, orderingKey, sequence);
    }

    /**
     * A pipeline's values by key name, typed as {@link RuntimeConfigSpecs#PIPELINE} declares them
     * (enums as their YAML strings), for printing; without {@code id} and {@code ordering-key}.
     */
    static Map<String, Object> values(PipelineConfig p) {
        Map<String, Object> v = new LinkedHashMap<>();
        for (ConfigKey<?> key : RuntimeConfigSpecs.PIPELINE.keys()) {
            v.put(key.name(), p.section().value(key.name()));
        }
        // Left out when empty, as in the file: printing "handler-settings: {}" under every pipeline says nothing.
        if (p.handlerSettings().asMap().isEmpty()) {
            v.put(RuntimeConfigSpecs.HANDLER_SETTINGS.name(), null);
        }
        if (p.namespace().equals(p.name())) {
            v.remove(RuntimeConfigSpecs.NAMESPACE.name());
        }
        if (p.sequence() == null) {
            v.remove(RuntimeConfigSpecs.SEQUENCE_GAPS.name());
            v.remove(RuntimeConfigSpecs.SEQUENCE_GAP_TIMEOUT.name());
            v.remove(RuntimeConfigSpecs.SEQUENCE_RETENTION.name());
        }
        return v;
    }
}
