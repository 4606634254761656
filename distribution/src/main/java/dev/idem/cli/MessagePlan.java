package dev.idem.cli;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The messages {@code idem publish} and {@code idem demo} send: {@code count} messages of which
 * {@code duplicatePercent} repeat the ID and payload of another one, shuffled with a seed so a run can be
 * repeated. Templates may use {@code {n}} (the message's number among the unique ones, from 1) and
 * {@code {id}}.
 */
final class MessagePlan {

    /** One message to send. */
    record Planned(int number, String id, String key, byte[] payload, boolean repeat) {
    }

    private MessagePlan() {
    }

    /**
     * @param payloads the payload templates, used in turn (one per unique message)
     * @param keyTemplate the key template, or null for none
     */
    static List<Planned> plan(int count, int duplicatePercent, String idPrefix, List<String> payloads,
            String keyTemplate, long seed) {
        if (count < 1) {
            throw new IllegalArgumentException("--count must be at least 1: " + count);
        }
        if (duplicatePercent < 0 || duplicatePercent > 100) {
            throw new IllegalArgumentException("--duplicates must be a percentage from 0 to 100: " + duplicatePercent);
        }
        int repeats = (int) Math.round(count * duplicatePercent / 100.0);
        int unique = Math.max(1, count - repeats);
        repeats = count - unique;
        List<Planned> messages = new ArrayList<>(count);
        for (int n = 1; n <= unique; n++) {
            String id = count == 1 && unique == 1 && !idPrefix.endsWith("-") ? idPrefix : idPrefix + n;
            String payload = fill(payloads.get((n - 1) % payloads.size()), n, id);
            String key = keyTemplate == null ? null : fill(keyTemplate, n, id);
            messages.add(new Planned(n, id, key, payload.getBytes(StandardCharsets.UTF_8), false));
        }
        Random random = new Random(seed);
        for (int i = 0; i < repeats; i++) {
            Planned original = messages.get(random.nextInt(unique));
            messages.add(new Planned(original.number(), original.id(), original.key(), original.payload(), true));
        }
        Collections.shuffle(messages, random);
        return messages;
    }

    /** Runs a {@link #plan} call, turning a bad count or percentage into a usage error of the command. */
    static List<Planned> checked(picocli.CommandLine.Model.CommandSpec spec, java.util.function.Supplier<List<Planned>> plan) {
        try {
            return plan.get();
        } catch (IllegalArgumentException e) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), e.getMessage(), e);
        }
    }

    static String fill(String template, int n, String id) {
        return template.replace("{n}", Integer.toString(n)).replace("{id}", id);
    }

    /** The headers a planned message carries: the given ones plus {@code message-id}. */
    static Map<String, String> headers(Map<String, String> extra, Planned message) {
        Map<String, String> headers = new java.util.LinkedHashMap<>(extra);
        headers.put("message-id", message.id());
        return headers;
    }
}
