package dev.idem.cli;

import dev.idem.runtime.IdemRuntime;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.config.PipelineConfig;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoredKey;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * What the console's JSON API answers, read from the running runtime: its configuration, its Micrometer registry
 * (the meters {@code /metrics} serves) and its store's {@link InspectableDedupStore}. Answers are plain maps and
 * lists, written as JSON by {@link Console}. Never a payload, a token or a credential. Thread-safe.
 */
final class ConsoleApi {

    /** The outcomes of {@code idem.messages} the overview shows, in its order. */
    static final List<String> OUTCOMES = List.of("processed", "duplicate", "stale", "rejected", "retried",
            "dead-lettered");
    /** The store calls whose latency the overview shows ({@code idem.store.duration{operation}}). */
    static final List<String> STORE_OPERATIONS = List.of("claim", "complete", "release", "renew");

    /** A request the API refuses, with its status and a sentence for the operator. */
    static final class Refused extends RuntimeException {
        final int status;

        Refused(int status, String message) {
            super(message, null, false, false);
            this.status = status;
        }
    }

    /** How often {@link #sample} is meant to run, and how many samples {@link #history} keeps: 5 minutes. */
    static final Duration SAMPLE_EVERY = Duration.ofSeconds(2);
    static final int SAMPLES = 150;

    private final IdemRuntime runtime;
    private final MeterRegistry meters;
    /** The last {@link #SAMPLES} answers of {@link #metrics}, oldest first; guarded by itself. */
    private final Deque<Map<String, Object>> samples = new ArrayDeque<>();

    ConsoleApi(IdemRuntime runtime) {
        this.runtime = runtime;
        this.meters = runtime.meterRegistry();
    }

    /** {@code GET /console/api/pipelines}. */
    Map<String, Object> pipelines() {
        IdemConfig config = runtime.config();
        Map<String, Boolean> running = runtime.pipelinesRunning();
        List<Object> list = new ArrayList<>();
        for (PipelineConfig p : config.pipelines().values()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", p.name());
            m.put("source", p.source());
            m.put("deadLetter", p.deadLetter());
            m.put("namespace", p.namespace());
            m.put("broker", config.broker().type());
            m.put("store", config.store().type());
            m.put("mode", p.transactional() ? "transactional" : "plain");
            m.put("state", Boolean.TRUE.equals(running.get(p.name())) ? "running" : "stopped");
            list.add(m);
        }
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("pipelines", list);
        answer.put("keyLookup", runtime.inspectableStore().isPresent());
        return answer;
    }

    /** {@code GET /console/api/metrics}: each pipeline's figures now; rates are the client's differences. */
    Map<String, Object> metrics() {
        List<Object> list = new ArrayList<>();
        for (String name : runtime.config().pipelines().keySet()) {
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("name", name);
            Map<String, Object> messages = new LinkedHashMap<>();
            for (String outcome : OUTCOMES) {
                Counter c = meters.find("idem.messages").tag("pipeline", name).tag("outcome", outcome).counter();
                messages.put(outcome, c == null ? 0L : (long) c.count());
            }
            p.put("messages", messages);
            p.put("inFlight", gauge("idem.inflight", name));
            p.put("oldestInFlightSeconds", gauge("idem.inflight.oldest.age", name));
            Map<String, Object> backlog = new TreeMap<>();
            for (Gauge g : meters.find("idem.backlog").tag("pipeline", name).gauges()) {
                String partition = g.getId().getTag("partition");
                backlog.put(partition == null ? "" : partition, finite(g.value()));
            }
            p.put("backlog", backlog);
            Map<String, Object> store = new LinkedHashMap<>();
            for (String operation : STORE_OPERATIONS) {
                Timer t = meters.find("idem.store.duration").tag("pipeline", name).tag("operation", operation).timer();
                if (t != null) {
                    Map<String, Object> call = new LinkedHashMap<>();
                    call.put("count", t.count());
                    call.put("totalSeconds", t.totalTime(TimeUnit.SECONDS));
                    call.put("maxSeconds", t.max(TimeUnit.SECONDS));
                    store.put(operation, call);
                }
            }
            p.put("store", store);
            list.add(p);
        }
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("time", System.currentTimeMillis());
        answer.put("pipelines", list);
        Gauge outbox = meters.find("idem.outbox.backlog").gauge();
        if (outbox != null) {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("backlog", finite(outbox.value()));
            Gauge age = meters.find("idem.outbox.oldest.age").gauge();
            o.put("oldestAgeSeconds", age == null ? null : finite(age.value()));
            answer.put("outbox", o);
        }
        return answer;
    }

    /** Keeps the figures now for {@link #history}: a page opened later still shows the last minutes. */
    void sample() {
        Map<String, Object> now = metrics();
        synchronized (samples) {
            samples.addLast(now);
            while (samples.size() > SAMPLES) {
                samples.removeFirst();
            }
        }
    }

    /** {@code GET /console/api/history}: the kept samples, oldest first, each as {@link #metrics} answers. */
    Map<String, Object> history() {
        List<Object> list;
        synchronized (samples) {
            list = new ArrayList<>(samples);
        }
        return Map.of("samples", list);
    }

    /** {@code GET /console/api/health}: the readiness checks, as {@code /health/ready} makes them. */
    Map<String, Object> health() {
        IdemRuntime.Health h = runtime.health();
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("ready", h.ready());
        answer.put("checks", h.checks());
        return answer;
    }

    /** {@code GET /console/api/keys?pipeline=P&id=ID}: the key as the next claim would see it. */
    Map<String, Object> key(String pipeline, String id) {
        StoreKey key = storeKey(pipeline, id);
        return describe(pipeline, id, key, store().inspect(key));
    }

    /**
     * {@code POST /console/api/keys/release}: removes a claimed key, so that the next delivery of its message claims
     * it afresh. A completed key is refused ({@code idem store delete} removes those): the console releases stuck
     * claims, it does not make processed messages run again.
     *
     * @return the key as it was, and whether it was removed
     */
    Map<String, Object> release(String pipeline, String id) {
        StoreKey key = storeKey(pipeline, id);
        InspectableDedupStore store = store();
        Optional<StoredKey> before = store.inspect(key);
        if (before.isPresent() && before.get().state() == StoredKey.State.COMPLETED) {
            throw new Refused(409, "The key is completed, not claimed: the console releases stuck claims only."
                    + " To have its message processed again, use 'idem store delete'.");
        }
        boolean released = before.isPresent() && store.delete(key);
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("released", released);
        answer.put("was", describe(pipeline, id, key, before));
        return answer;
    }

    private InspectableDedupStore store() {
        return runtime.inspectableStore().orElseThrow(() -> new Refused(501, "The store '"
                + runtime.config().store().type() + "' cannot show its keys (it is not an InspectableDedupStore)"));
    }

    private StoreKey storeKey(String pipeline, String id) {
        if (pipeline == null || pipeline.isEmpty()) {
            throw new Refused(400, "Say which pipeline: pipeline=NAME; configured: "
                    + runtime.config().pipelines().keySet());
        }
        PipelineConfig p = runtime.config().pipelines().get(pipeline);
        if (p == null) {
            throw new Refused(404, "No pipeline '" + pipeline + "'; configured: "
                    + runtime.config().pipelines().keySet());
        }
        if (id == null || id.isEmpty()) {
            throw new Refused(400, "Say which key: id=IDEMPOTENCY-KEY");
        }
        if (id.getBytes(StandardCharsets.UTF_8).length > StoreKey.MAX_ID_BYTES) {
            throw new Refused(400, "A key is at most " + StoreKey.MAX_ID_BYTES + " bytes of UTF-8");
        }
        try {
            return new StoreKey(p.namespace(), runtime.config().keyDigest().apply(id));
        } catch (IllegalArgumentException e) {
            throw new Refused(400, "Not a key: " + e.getMessage());
        }
    }

    /** {@code storedId}, what the store holds for {@code id}, is there only when {@code store.key-digest} is on. */
    private static Map<String, Object> describe(String pipeline, String id, StoreKey key, Optional<StoredKey> found) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("pipeline", pipeline);
        m.put("namespace", key.namespace());
        m.put("id", id);
        if (!key.id().equals(id)) {
            m.put("storedId", key.id());
        }
        if (found.isEmpty()) {
            m.put("state", "absent");
            return m;
        }
        StoredKey k = found.get();
        m.put("state", k.state() == StoredKey.State.CLAIMED ? "claimed" : "completed");
        m.put("attempts", k.attempts());
        m.put("starts", k.starts());
        m.put("fingerprint", k.fingerprint());
        if (k.state() == StoredKey.State.CLAIMED) {
            m.put("leaseUntil", k.expiresAt().toString());
        } else {
            m.put("expiresAt", k.expiresAt().toString());
        }
        return m;
    }

    private Object gauge(String name, String pipeline) {
        Gauge g = meters.find(name).tag("pipeline", pipeline).gauge();
        return g == null ? null : finite(g.value());
    }

    /** A gauge whose object is gone reads NaN, which JSON cannot hold. */
    private static Object finite(double value) {
        if (Double.isNaN(value) || Double.isInfinite(value)) {
            return null;
        }
        return value == Math.rint(value) && Math.abs(value) < 1e15 ? (Object) (long) value : (Object) value;
    }
}
