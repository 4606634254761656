package dev.idem.cli;

import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Random;
import java.util.function.Supplier;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * The messages {@code idem publish} and {@code idem demo} send: {@code count} messages of which
 * {@code duplicatePercent} repeat the ID and payload of an earlier one, placed with a seed so a run can be
 * repeated. Templates may use {@code {n}} (the message's number among the unique ones, from 1) and
 * {@code {id}}. The ID is a template too: with {@code {n}} in it, that is where the number goes; without, the number
 * is appended (a prefix) unless one message is sent under an ID that does not end with {@code -}.
 *
 * <p>The plan is streamed: each message is made when it is taken, so its memory does not grow with
 * {@code count} (two billion messages plan as cheaply as ten). Each iteration yields the same messages in the
 * same order. Every position is a repeat with the chance of the repeats still to place among the messages
 * still to send, so the repeats spread evenly; a repeat copies a unique message sent before it, chosen at
 * random. Immutable; each iterator is for one thread.
 */
final class MessagePlan implements Iterable<MessagePlan.Planned> {

    /** One message to send. */
    record Planned(int number, String id, String key, byte[] payload, boolean repeat) {
    }

    /** The message's number among the unique ones, from 1. */
    static final String N = "{n}";
    /** The message's ID, in the key and payload templates. */
    static final String ID = "{id}";

    private final int count;
    private final int unique;
    private final String idTemplate;
    private final List<String> payloads;
    private final String keyTemplate;
    private final long seed;

    private MessagePlan(int count, int unique, String idTemplate, List<String> payloads, String keyTemplate,
            long seed) {
        this.count = count;
        this.unique = unique;
        this.idTemplate = idTemplate;
        this.payloads = List.copyOf(payloads);
        this.keyTemplate = keyTemplate;
        this.seed = seed;
    }

    /**
     * @param idTemplate the ID: a template where {@code {n}} is the number, else a prefix the number is appended to
     * @param payloads the payload templates, used in turn (one per unique message)
     * @param keyTemplate the key template, or null for none
     * @throws IllegalArgumentException for a count below 1, a percentage outside 0 to 100, or an ID template that
     *         uses {@code {id}}, which stands for the ID itself
     */
    static MessagePlan plan(int count, int duplicatePercent, String idTemplate, List<String> payloads,
            String keyTemplate, long seed) {
        if (count < 1) {
            throw new IllegalArgumentException("--count must be at least 1: " + count);
        }
        if (duplicatePercent < 0 || duplicatePercent > 100) {
            throw new IllegalArgumentException("--duplicates must be a percentage from 0 to 100: " + duplicatePercent);
        }
        if (idTemplate.contains(ID)) {
            throw new IllegalArgumentException("--id cannot use " + ID + ", which stands for the ID itself; use " + N
                    + " for the message's number: " + idTemplate);
        }
        long repeats = Math.round((long) count * duplicatePercent / 100.0);
        int unique = (int) Math.max(1, count - repeats);
        return new MessagePlan(count, unique, idTemplate, payloads, keyTemplate, seed);
    }

    /** Runs a {@link #plan} call, turning a bad count or percentage into a usage error of the command. */
    static MessagePlan checked(Supplier<MessagePlan> plan) {
        try {
            return plan.get();
        } catch (IllegalArgumentException e) {
            throw new Main.UsageError(e.getMessage());
        }
    }

    /** How many messages are sent. */
    int size() {
        return count;
    }

    /** How many distinct IDs are sent. */
    int unique() {
        return unique;
    }

    /** How many messages repeat an earlier one. */
    int repeats() {
        return count - unique;
    }

    Stream<Planned> stream() {
        return StreamSupport.stream(spliterator(), false);
    }

    @Override
    public Iterator<Planned> iterator() {
        return new Iterator<>() {
            private final Random random = new Random(seed);
            private int sent;
            private int uniqueSent;

            @Override
            public boolean hasNext() {
                return sent < count;
            }

            @Override
            public Planned next() {
                if (!hasNext()) {
                    throw new NoSuchElementException("all " + count + " planned messages were taken");
                }
                int repeatsLeft = repeats() - (sent - uniqueSent);
                // The first message is unique, so that every repeat has an earlier original.
                boolean repeat = uniqueSent > 0 && (uniqueSent == unique || random.nextInt(count - sent) < repeatsLeft);
                sent++;
                if (repeat) {
                    return message(1 + random.nextInt(uniqueSent), true);
                }
                uniqueSent++;
                return message(uniqueSent, false);
            }
        };
    }

    private Planned message(int n, boolean repeat) {
        String id = idTemplate.contains(N) ? idTemplate.replace(N, Integer.toString(n))
                : count == 1 && !idTemplate.endsWith("-") ? idTemplate : idTemplate + n;
        String payload = fill(payloads.get((n - 1) % payloads.size()), n, id);
        String key = keyTemplate == null ? null : fill(keyTemplate, n, id);
        return new Planned(n, id, key, payload.getBytes(StandardCharsets.UTF_8), repeat);
    }

    static String fill(String template, int n, String id) {
        return template.replace(N, Integer.toString(n)).replace(ID, id);
    }

    /** The headers a planned message carries: the given ones plus {@code message-id}. */
    static Map<String, String> headers(Map<String, String> extra, Planned message) {
        Map<String, String> headers = new LinkedHashMap<>(extra);
        headers.put("message-id", message.id());
        return headers;
    }
}
