package dev.idem.adapter.rocketmq;

import dev.idem.spi.BrokerException;
import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.InboundMessage;
import dev.idem.spi.OutboundMessage;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * How RocketMQ messages and the runtime's messages map onto each other. Stateless.
 *
 * <ul>
 *   <li>Headers are the user properties, plus {@code KEYS} and {@code TAGS} when set (so that the {@code header}
 *       extractor reads them, and a replayed dead letter keeps its tag, which a tag filter may need).</li>
 *   <li>The key is {@code KEYS} as written (RocketMQ separates several keys with a space); the ordering key the
 *       sharding key of a FIFO message, else the first key.</li>
 *   <li>The broker message ID is the client's {@code UNIQ_KEY}, which stays with the message when it is consumed
 *       again; the broker's offset message ID changes with every copy and is not used.</li>
 * </ul>
 *
 * RocketMQ stores properties as text separated by the characters U+0001 and U+0002; those are replaced by spaces in
 * names and values the adapter writes, so that no value can forge another property.
 */
final class Messages {

    /** The header {@link OutboundMessage#messageId()} travels in, as on the other brokers. */
    static final String MESSAGE_ID_HEADER = "message-id";
    private static final byte[] EMPTY = new byte[0];

    private Messages() {
    }

    /** The runtime's view of a consumed message, delivered {@code deliveries} times. */
    static InboundMessage inbound(MessageExt m, String queueName, int deliveries) {
        Map<String, String> headers = new LinkedHashMap<>();
        m.getProperties().forEach((name, value) -> {
            if (!MessageConst.STRING_HASH_SET.contains(name)) {
                headers.put(name, value);
            }
        });
        String keys = blankToNull(m.getKeys());
        String tags = blankToNull(m.getTags());
        if (keys != null) {
            headers.put(MessageConst.PROPERTY_KEYS, keys);
        }
        if (tags != null) {
            headers.put(MessageConst.PROPERTY_TAGS, tags);
        }
        String uniq = MessageClientIDSetter.getUniqID(m);
        String shardingKey = blankToNull(m.getProperty(MessageConst.PROPERTY_SHARDING_KEY));
        String ordering = shardingKey != null ? shardingKey : firstKey(keys);
        return new InboundMessage(m.getTopic(), queueName, keys, headers, m.getBody() == null ? EMPTY : m.getBody(),
                uniq != null ? uniq : m.getMsgId(), deliveries > 1, deliveries, ordering);
    }

    private static String firstKey(String keys) {
        if (keys == null) {
            return null;
        }
        for (String key : keys.split(MessageConst.KEY_SEPARATOR)) {
            if (!key.isEmpty()) {
                return key;
            }
        }
        return null;
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s;
    }

    /**
     * The copy of {@code original} to dead-letter: body, keys, tag and user properties, plus the reason's headers and
     * the origin (topic, queue, queue offset, {@code UNIQ_KEY}).
     */
    static Message deadLetterCopy(MessageExt original, String topic, String queueName, DeadLetterReason reason,
            String messageId) {
        Message copy = new Message(topic, original.getBody() == null ? EMPTY : original.getBody());
        if (blankToNull(original.getKeys()) != null) {
            copy.setKeys(original.getKeys());
        }
        if (blankToNull(original.getTags()) != null) {
            copy.setTags(original.getTags());
        }
        String shardingKey = original.getProperty(MessageConst.PROPERTY_SHARDING_KEY);
        if (blankToNull(shardingKey) != null) {
            MessageAccessor.putProperty(copy, MessageConst.PROPERTY_SHARDING_KEY, shardingKey);
        }
        original.getProperties().forEach((name, value) -> {
            if (!MessageConst.STRING_HASH_SET.contains(name)) {
                put(copy, name, value);
            }
        });
        reason.toHeaders().forEach((name, value) -> put(copy, name, value));
        put(copy, DeadLetterReason.ORIGIN_SOURCE, original.getTopic());
        put(copy, DeadLetterReason.ORIGIN_PARTITION, queueName);
        put(copy, DeadLetterReason.ORIGIN_OFFSET, Long.toString(original.getQueueOffset()));
        put(copy, DeadLetterReason.ORIGIN_MESSAGE_ID, messageId);
        return copy;
    }

    /**
     * The message to send for {@link dev.idem.spi.BrokerAdapter#publish}: the key as {@code KEYS}, the message ID in
     * {@value #MESSAGE_ID_HEADER}, the headers as user properties, except {@code KEYS} (the keys, unless the message
     * has a key), {@code TAGS} (the tag) and {@code DELAY} (the delay level).
     *
     * @throws BrokerException (not retriable) for another RocketMQ system property as a header, or a delay level that
     *         is not a number from 1
     */
    static Message outbound(String topic, OutboundMessage message) {
        Message m = new Message(topic, message.payload());
        if (message.key() != null && !message.key().isBlank()) {
            m.setKeys(message.key());
        }
        for (Map.Entry<String, String> h : message.headers().entrySet()) {
            String name = h.getKey();
            String value = h.getValue();
            if (name.equals(MESSAGE_ID_HEADER) && message.messageId() != null) {
                continue;
            }
            switch (name) {
                case MessageConst.PROPERTY_KEYS -> {
                    if (m.getKeys() == null && value != null && !value.isBlank()) {
                        m.setKeys(value);
                    }
                }
                case MessageConst.PROPERTY_TAGS -> {
                    if (value != null && !value.isBlank()) {
                        m.setTags(value);
                    }
                }
                case MessageConst.PROPERTY_DELAY_TIME_LEVEL -> m.setDelayTimeLevel(delayLevel(value));
                default -> {
                    if (MessageConst.STRING_HASH_SET.contains(name)) {
                        throw new BrokerException("Cannot publish to '" + topic + "': the header '" + name + "' is a"
                                + " RocketMQ system property; the headers KEYS, TAGS and DELAY (a delay level) are"
                                + " taken as such, other system properties cannot be set", false);
                    }
                    put(m, name, value);
                }
            }
        }
        if (message.messageId() != null) {
            put(m, MESSAGE_ID_HEADER, message.messageId());
        }
        return m;
    }

    private static int delayLevel(String value) {
        try {
            int level = Integer.parseInt(value == null ? "" : value.trim());
            if (level >= 1) {
                return level;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new BrokerException("The header DELAY is '" + value + "': it must be a RocketMQ delay level, a number from"
                + " 1 (1s, 5s, 10s, 30s, 1m, ... 2h with the broker's default messageDelayLevel)", false);
    }

    /** Sets a user property as given, empty values included, without the separators RocketMQ stores properties with. */
    private static void put(Message m, String name, String value) {
        MessageAccessor.putProperty(m, clean(name), clean(value == null ? "" : value));
    }

    private static String clean(String s) {
        return s.indexOf('\u0001') < 0 && s.indexOf('\u0002') < 0 ? s : s.replace('\u0001', ' ').replace('\u0002', ' ');
    }
}
