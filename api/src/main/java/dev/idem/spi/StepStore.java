package dev.idem.spi;

import java.util.Map;
import java.util.Optional;

/**
 * An optional capability of a {@link DedupStore}: the durable steps of {@code HandlerContext.step}, recorded results
 * of a handler's actions kept under the message's key, so that a later run of the message (an in-process retry, a
 * takeover after a crash, a redelivery after a hand-back) gets them back instead of running the actions again. See
 * docs/design.md, "Durable steps".
 *
 * <p><b>Fencing.</b> Both calls take the claim's token and act only for the key's current owner: a claimed key whose
 * token is {@code token}, its lease running or over while nobody took the key over (as {@link #complete} and
 * {@link #renew} allow). A consumer whose claim was taken over can neither record a step over the new owner's nor
 * read them. A record and a takeover of the same key are atomic with respect to each other: a takeover sees every
 * step recorded before it, and a record after it is refused.
 *
 * <p><b>Lifetime.</b> A step is remembered while its key is in flight: across takeovers, and across a
 * {@linkplain #release release} too (a message handed back while stopping, or dead-lettered and replayed, finds
 * its steps). It is forgotten at the latest when the claim it was recorded under would have been forgotten had
 * it ended then: the claim's retention ({@link ClaimRequest#retention()}) after the earlier of the record and the
 * end of that claim's lease. Since a completed key is remembered for its retention from its completion, and an
 * abandoned claim for its retention from its lease's end, a key acquired afresh (attempt 1) after either was
 * forgotten never sees a step of that earlier life. A store may forget a key's steps sooner once the key completes
 * (the runtime never reads them after that); one that can forget a completion early (a bounded cache) must.
 * A store that is also an {@link InspectableDedupStore} forgets a key's steps with {@link InspectableDedupStore#delete}
 * and with {@link InspectableDedupStore#purge} of the key, so that an operator's "process it again" runs every step
 * again.
 *
 * <p><b>Sizes.</b> Names are non-blank text of at most {@value #MAX_NAME_BYTES} bytes of UTF-8, compared exactly;
 * values are bytes, empty allowed, of at most {@value #MAX_VALUE_BYTES} bytes. Every store holds both.
 *
 * <p>Thread-safe like every store; the runtime calls it from the worker running the handler. In transactional mode
 * it is called while that worker's transaction holds the key's row: the call runs outside that transaction (the
 * effect a step records does not roll back) and must not wait for the row's lock. Failures are
 * {@link StoreException}s, retriable as for the other calls; no method answers {@code null}.
 */
public interface StepStore extends DedupStore {

    /** The longest step name, in bytes of UTF-8, every store holds. */
    int MAX_NAME_BYTES = 255;

    /** The largest step value, in bytes, every store holds: 1 MiB. */
    int MAX_VALUE_BYTES = 1 << 20;

    /**
     * The steps recorded for {@code key}, if {@code token} owns its claim.
     *
     * @return every remembered step's value by name (empty when none was recorded); an empty {@link Optional} when
     *         {@code token} does not own the key's claim (taken over, released, completed, forgotten, never claimed)
     * @throws StoreException when the store cannot answer
     */
    Optional<Map<String, byte[]>> steps(StoreKey key, long token);

    /**
     * Records {@code value} as step {@code name} of {@code key}, if {@code token} owns its claim; a step of that name
     * recorded before is replaced. Durable once it returns {@code true}.
     *
     * @return {@code false} if {@code token} does not own the key's claim; nothing is recorded then
     * @throws IllegalArgumentException if the name is blank or longer than {@value #MAX_NAME_BYTES} bytes, or the
     *         value longer than {@value #MAX_VALUE_BYTES}
     * @throws StoreException when the store cannot answer; the step may or may not have been recorded
     */
    boolean recordStep(StoreKey key, long token, String name, byte[] value);

    /**
     * Checks a step's name and value as every store must; for implementations.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    static void check(String name, byte[] value) {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("A step needs a name that is not blank; got "
                    + (name == null ? "null" : "'" + name + "'"));
        }
        int bytes = utf8Length(name);
        if (bytes > MAX_NAME_BYTES) {
            throw new IllegalArgumentException("Step name '" + name.substring(0, 40) + "...' is " + bytes
                    + " bytes of UTF-8; at most " + MAX_NAME_BYTES + " are kept");
        }
        if (value != null && value.length > MAX_VALUE_BYTES) {
            throw new IllegalArgumentException("Step '" + name + "' is " + value.length + " bytes; at most "
                    + MAX_VALUE_BYTES + " are kept");
        }
    }

    private static int utf8Length(String text) {
        int bytes = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < 0x80) {
                bytes++;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < text.length()
                    && Character.isLowSurrogate(text.charAt(i + 1))) {
                bytes += 4;
                i++;
            } else {
                bytes += 3;
            }
        }
        return bytes;
    }
}
