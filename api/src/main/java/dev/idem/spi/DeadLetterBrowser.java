package dev.idem.spi;

import java.util.List;

/**
 * An optional capability of a {@link BrokerAdapter}: reading the messages a destination holds without taking any of
 * them, so that an operator's page ({@code idem run}'s console) can show a dead-letter destination as often as it
 * likes. An adapter that can offers it by implementing this interface beside {@link BrokerAdapter}; callers test
 * with {@code instanceof}.
 *
 * <p>A browse never acknowledges, moves, consumes or commits anything: after it, every consumer of the destination
 * (and every reader's committed position) finds exactly what it would have found without it. Where the broker can
 * only read a queue by taking its messages, the adapter says in its Javadoc what a browse does instead and what it
 * costs. Thread-safe; each call may contact the broker and opens what it needs for itself.
 */
public interface DeadLetterBrowser {

    /** The most messages one browse returns, whatever {@code max} asks. */
    int MAX_PAGE = 1000;

    /**
     * Reads the first messages {@code destination} holds for {@code reader}, from its head, oldest first in the order
     * a consumer would be handed them (on a log with several partitions: partition by partition).
     *
     * @param destination a destination as {@link BrokerAdapter#publish} and
     *        {@link BrokerAdapter#subscribeDeadLetters} accept it; one that does not exist holds nothing
     * @param reader the reader of {@link BrokerAdapter#subscribeDeadLetters} whose view to show: on a log, where
     *        acknowledging only moves a reader past a message ({@link Backlog#retained()}), the browse starts at this
     *        reader's committed position (where it has none: the earliest); on a queue it is ignored
     * @param max the most messages to return, from 1; more than {@link #MAX_PAGE} reads {@link #MAX_PAGE}
     * @return at most {@code max} messages, fewer when the destination holds fewer or the broker handed over no more
     *         within the adapter's read timeout; never {@code null}
     * @throws BrokerException if the broker cannot be read
     * @throws IllegalArgumentException if {@code max} is below 1
     */
    List<BrowsedMessage> browse(String destination, String reader, int max);
}
