package dev.idem.adapter.rocketmq;

import dev.idem.spi.BrokerException;
import org.apache.rocketmq.client.consumer.MessageSelector;

/**
 * A pipeline's {@code source}: a topic and the broker-side filter of its messages. {@code orders} takes every message;
 * {@code orders?tag=paid||shipped} a tag expression; {@code orders?sql=amount > 100} an SQL92 expression over the
 * message's properties. Immutable.
 *
 * @param topic the topic
 * @param sql whether {@code expression} is SQL92 rather than a tag expression
 * @param expression the filter; {@code *} for every message
 */
record Source(String topic, boolean sql, String expression) {

    private static final String TAG = "tag=";
    private static final String SQL = "sql=";

    /**
     * @throws BrokerException (not retriable) naming the source and the accepted forms, if it is neither
     */
    static Source parse(String source) {
        int question = source.indexOf('?');
        String topic = question < 0 ? source : source.substring(0, question);
        if (!topic.matches("[%|a-zA-Z0-9_-]{1,127}")) {
            throw new BrokerException("The source '" + source + "' does not name a RocketMQ topic: a topic is 1 to 127"
                    + " letters, digits, '_', '-', '%' or '|'; write orders, orders?tag=paid||shipped or"
                    + " orders?sql=amount > 100", false);
        }
        if (question < 0) {
            return new Source(topic, false, "*");
        }
        String filter = source.substring(question + 1);
        boolean sql = filter.startsWith(SQL);
        if (!sql && !filter.startsWith(TAG) || filter.length() == (sql ? SQL : TAG).length()
                || filter.substring((sql ? SQL : TAG).length()).isBlank()) {
            throw new BrokerException("The source '" + source + "' has a filter RocketMQ cannot take: after '?' write"
                    + " tag=<tag expression> (paid||shipped) or sql=<SQL92 expression> (amount > 100)", false);
        }
        return new Source(topic, sql, filter.substring((sql ? SQL : TAG).length()).trim());
    }

    /** The topic of a destination to publish to: the filter part of a source, if any, does not apply. */
    static String topicOf(String destination) {
        int question = destination.indexOf('?');
        return question < 0 ? destination : destination.substring(0, question);
    }

    MessageSelector selector() {
        return sql ? MessageSelector.bySql(expression) : MessageSelector.byTag(expression);
    }
}
