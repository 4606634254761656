package dev.idem.spi;

import java.util.Objects;

/**
 * One message of a destination as {@link DeadLetterBrowser#browse} read it, left where it is.
 *
 * @param position where the message sits in the destination, in the broker's own terms ({@code topic-2-17}, partition and offset, on a
 *        log, the broker's message ID on a queue that keeps one); unique within one browse, and the same in the next
 *        browse as long as the message stays in the destination. It names the message for display and ordering; a
 *        consumer of the destination is not handed it, so a tool that picks messages to consume by what it browsed
 *        matches them by their content
 * @param message the message, as a subscription would hand it over (headers, payload, key, broker ID), except that
 *        {@code redelivered} and {@code deliveryCount} tell nothing about a browse
 */
public record BrowsedMessage(String position, InboundMessage message) {

    public BrowsedMessage {
        Objects.requireNonNull(position, "position");
        Objects.requireNonNull(message, "message");
    }
}
