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

import dev.idem.runtime.config.PipelineConfig.FingerprintMode;
import dev.idem.runtime.config.PipelineConfig.MismatchPolicy;
import dev.idem.runtime.config.PipelineConfig.MissingIdPolicy;
import dev.idem.runtime.config.PipelineConfig.Ordering;
import dev.idem.spi.ConfigKey;
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
                problems.add("Invalid pipeline name '" + name + "' in " + path + ": must start with a lowercase letter or"
                        + " digit and hold only lowercase letters, digits, '.', '_' and '-'");
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
                        List.of(RuntimeConfigSpecs.ID, RuntimeConfigSpecs.ORDERING_KEY));
        if (result.config() == null && !(raw == null || raw instanceof Map<?, ?>)) {
            return null; // Not a section at all: already reported, nothing more to say.
        }
        List<PluginSection> extractors = selector.idExtractors(result.structured().get(RuntimeConfigSpecs.ID),
                path + "." + RuntimeConfigSpecs.ID);
        Object orderingRaw = result.structured().get(RuntimeConfigSpecs.ORDERING_KEY);
        List<PluginSection> ordering = orderingRaw == null ? List.of()
                : selector.idExtractors(orderingRaw, path + "." + RuntimeConfigSpecs.ORDERING_KEY);
        SectionConfig c = result.config();
        if (c == null || extractors == null || ordering == null || !crossChecksPass(c, path)) {
            return null;
        }
        return toPipeline(name, c, extractors, ordering);
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
            List<PluginSection> orderingKey) {
        return new PipelineConfig(
                name,
                c.get(SOURCE),
                c.get(HANDLER),
                c.get(RuntimeConfigSpecs.NAMESPACE),
                extractors,
                orderingKey,
                RuntimeConfigSpecs.enumValue(MissingIdPolicy.class, c.get(MISSING_ID)),
                RuntimeConfigSpecs.enumValue(FingerprintMode.class, c.get(FINGERPRINT)),
                RuntimeConfigSpecs.enumValue(MismatchPolicy.class, c.get(FINGERPRINT_MISMATCH)),
                RuntimeConfigSpecs.enumValue(Ordering.class, c.get(ORDERING)),
                c.get(CONCURRENCY),
                c.get(MAX_IN_FLIGHT),
                c.get(LEASE),
                c.get(RETENTION),
                c.get(HANDLER_TIMEOUT),
                new RetryPolicy(c.get(RETRY_MAX_ATTEMPTS), c.get(RETRY_INITIAL_BACKOFF), c.get(RETRY_MAX_BACKOFF),
                        c.get(RETRY_MULTIPLIER)),
                new CommitPolicy(c.get(RuntimeConfigSpecs.COMMIT_LINGER), c.get(RuntimeConfigSpecs.COMMIT_BATCH_SIZE)),
                c.get(MAX_DELIVERIES),
                c.get(DEAD_LETTER),
                c.get(TRANSACTIONAL));
    }

    /**
     * A pipeline's values by key name, typed as {@link RuntimeConfigSpecs#PIPELINE} declares them
     * (enums as their YAML strings); the inverse of {@link #toPipeline}, without {@code id} and {@code ordering-key}.
     */
    static Map<String, Object> values(PipelineConfig p) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put(SOURCE.name(), p.source());
        v.put(HANDLER.name(), p.handler());
        if (!p.namespace().equals(p.name())) {
            v.put(RuntimeConfigSpecs.NAMESPACE.name(), p.namespace());
        }
        v.put(MISSING_ID.name(), yaml(p.missingId()));
        v.put(FINGERPRINT.name(), yaml(p.fingerprint()));
        v.put(FINGERPRINT_MISMATCH.name(), yaml(p.fingerprintMismatch()));
        v.put(ORDERING.name(), yaml(p.ordering()));
        v.put(CONCURRENCY.name(), p.concurrency());
        v.put(MAX_IN_FLIGHT.name(), p.maxInFlight());
        v.put(LEASE.name(), p.lease());
        v.put(RETENTION.name(), p.retention());
        v.put(HANDLER_TIMEOUT.name(), p.handlerTimeout());
        if (p.retry() != null) {
            v.put(RETRY_MAX_ATTEMPTS.name(), p.retry().maxAttempts());
            v.put(RETRY_INITIAL_BACKOFF.name(), p.retry().initialBackoff());
            v.put(RETRY_MAX_BACKOFF.name(), p.retry().maxBackoff());
            v.put(RETRY_MULTIPLIER.name(), p.retry().multiplier());
        }
        if (p.commit() != null) {
            v.put(RuntimeConfigSpecs.COMMIT_LINGER.name(), p.commit().linger());
            v.put(RuntimeConfigSpecs.COMMIT_BATCH_SIZE.name(), p.commit().batchSize());
        }
        v.put(MAX_DELIVERIES.name(), p.maxDeliveries());
        v.put(DEAD_LETTER.name(), p.deadLetter());
        v.put(TRANSACTIONAL.name(), p.transactional());
        return v;
    }

    private static String yaml(Enum<?> constant) {
        return constant == null ? null : RuntimeConfigSpecs.configValue(constant);
    }
}
