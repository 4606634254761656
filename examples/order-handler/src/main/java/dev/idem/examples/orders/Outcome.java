package dev.idem.examples.orders;

/** What one handler run did with a payment, as written to the ledger and to {@code payment_events}. */
enum Outcome {

    /** The order was not paid yet and now is. */
    APPLIED("applied"),

    /** The order was paid already (by another message, or by an earlier run of this one): nothing changed. */
    IGNORED_ALREADY_PAID("ignored-already-paid");

    private final String label;

    Outcome(String label) {
        this.label = label;
    }

    /** The value written down, e.g. {@code ignored-already-paid}. */
    String label() {
        return label;
    }
}
