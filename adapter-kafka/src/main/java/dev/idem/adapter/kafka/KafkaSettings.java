package dev.idem.adapter.kafka;

import static dev.idem.adapter.kafka.KafkaAdapterProvider.*;

import dev.idem.spi.ConfigException;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.Secret;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The validated {@code broker.kafka} section, turned into kafka-clients properties. Immutable.
 *
 * @param path where the section lives in the user's file, for messages
 * @param common settings every client gets (servers, security)
 * @param client the user's native settings, applied last
 * @param groupInstanceId {@code group-instance-id}, or {@code null} for dynamic membership
 */
record KafkaSettings(String path, Map<String, Object> common, Map<String, String> client, String groupIdPrefix,
        String groupInstanceId, Duration commitInterval, Duration pollTimeout, Duration revokeTimeout,
        String deadLetterSuffix, String acks, Duration deliveryTimeout) {

    /** Native keys the adapter sets itself; a user value would break its guarantees. */
    private static final Set<String> OWNED = Set.of(ConsumerConfig.GROUP_ID_CONFIG,
            ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
            ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
            ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
            ProducerConfig.TRANSACTIONAL_ID_CONFIG);

    /** The largest poll when neither maxInFlight nor the user says less. */
    static final int MAX_POLL_RECORDS = 2000;

    /**
     * @throws ConfigException with every contradiction {@link #problems} finds
     */
    static KafkaSettings from(PluginConfig config) {
        List<ConfigProblem> problems = new ArrayList<>();
        KafkaSettings settings = build(config, problems);
        ConfigProblem.throwIfAny(problems);
        return settings;
    }

    /** Every contradiction between the keys, without contacting Kafka. */
    static List<ConfigProblem> problems(PluginConfig config) {
        List<ConfigProblem> problems = new ArrayList<>();
        build(config, problems);
        return problems;
    }

    /** The settings, or {@code null} when anything was added to {@code problems}. */
    private static KafkaSettings build(PluginConfig config, List<ConfigProblem> problems) {
        String path = config.path();
        Map<String, Object> common = new HashMap<>();
        common.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, String.join(",", config.get(BOOTSTRAP_SERVERS)));
        String protocol = config.get(SECURITY_PROTOCOL);
        common.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, protocol.toUpperCase(Locale.ROOT).replace('-', '_'));
        sasl(config, protocol.startsWith("sasl"), common, problems);
        tls(config, protocol.endsWith("ssl"), common, problems);

        Map<String, String> client = config.get(CLIENT);
        for (String key : client.keySet()) {
            String where = path + ".client." + key;
            if (OWNED.contains(key)) {
                problems.add(new ConfigProblem(where, where + " cannot be set: the adapter sets it itself"
                        + (key.equals(ConsumerConfig.GROUP_ID_CONFIG) ? " (the pipeline's name after "
                        + path + "." + GROUP_ID_PREFIX.name() + ")" : "")
                        + (key.equals(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG) ? "; use " + path + "."
                        + GROUP_INSTANCE_ID.name() + ", which gives each pipeline's consumer its own id" : "")
                        + (key.equals(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG) ? " (offsets are committed only"
                        + " after the pipeline acknowledged them)" : "")));
            } else if (!ConsumerConfig.configNames().contains(key) && !ProducerConfig.configNames().contains(key)
                    && !AdminClientConfig.configNames().contains(key)) {
                problems.add(new ConfigProblem(where, where + " is not a kafka-clients consumer or producer setting;"
                        + " see https://kafka.apache.org/documentation/#consumerconfigs"));
            }
        }
        String acks = config.get(PRODUCER_ACKS);
        if (acks.equals("1") && "true".equals(client.get(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG))) {
            problems.add(new ConfigProblem(path + "." + PRODUCER_ACKS.name(), path + ".producer.acks is 1 but"
                    + " client.enable.idempotence is true: an idempotent producer needs producer.acks: all"));
        }
        if (!problems.isEmpty()) {
            return null;
        }
        return new KafkaSettings(path, Map.copyOf(common), Map.copyOf(client), config.get(GROUP_ID_PREFIX),
                config.get(GROUP_INSTANCE_ID), config.get(COMMIT_INTERVAL), config.get(POLL_TIMEOUT),
                config.get(REVOKE_TIMEOUT), config.get(DEAD_LETTER_SUFFIX), acks,
                config.get(PRODUCER_DELIVERY_TIMEOUT));
    }

    private static void sasl(PluginConfig config, boolean enabled, Map<String, Object> common,
            List<ConfigProblem> problems) {
        String path = config.path();
        String user = config.get(SASL_USERNAME);
        Secret password = config.get(SASL_PASSWORD);
        if (user == null && password == null) {
            return;
        }
        if (!enabled) {
            problems.add(new ConfigProblem(path + "." + SECURITY_PROTOCOL.name(), path + ".sasl.username/sasl.password"
                    + " are set but " + path + ".security.protocol is '" + config.get(SECURITY_PROTOCOL) + "': use"
                    + " sasl-ssl (or sasl-plaintext) to authenticate"));
            return;
        }
        if (user == null || password == null) {
            problems.add(new ConfigProblem(path + "." + (user == null ? SASL_USERNAME : SASL_PASSWORD).name(),
                    path + ".sasl.username and " + path + ".sasl.password go together: give both"));
            return;
        }
        String mechanism = config.get(SASL_MECHANISM).toUpperCase(Locale.ROOT);
        String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        common.put(SaslConfigs.SASL_MECHANISM, mechanism);
        common.put(SaslConfigs.SASL_JAAS_CONFIG, module + " required username=\"" + escape(user)
                + "\" password=\"" + escape(password.reveal()) + "\";");
    }

    private static void tls(PluginConfig config, boolean enabled, Map<String, Object> common,
            List<ConfigProblem> problems) {
        String path = config.path();
        String truststore = config.get(TLS_TRUSTSTORE);
        String keystore = config.get(TLS_KEYSTORE);
        if (!enabled) {
            if (truststore != null || keystore != null) {
                problems.add(new ConfigProblem(path + "." + SECURITY_PROTOCOL.name(), path + ".tls.* is set but "
                        + path + ".security.protocol is '" + config.get(SECURITY_PROTOCOL) + "': use ssl or sasl-ssl"
                        + " to connect with TLS"));
            }
            return;
        }
        String type = config.get(TLS_STORE_TYPE).toUpperCase(Locale.ROOT);
        if (truststore != null) {
            common.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, truststore);
            common.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, type);
            reveal(config.get(TLS_TRUSTSTORE_PASSWORD), SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG, common);
        }
        if (keystore != null) {
            common.put(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, keystore);
            common.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, type);
            reveal(config.get(TLS_KEYSTORE_PASSWORD), SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG, common);
            reveal(config.get(TLS_KEY_PASSWORD), SslConfigs.SSL_KEY_PASSWORD_CONFIG, common);
        } else if (config.get(TLS_KEYSTORE_PASSWORD) != null || config.get(TLS_KEY_PASSWORD) != null) {
            problems.add(new ConfigProblem(path + "." + TLS_KEYSTORE.name(), path + ".tls.keystore-password/"
                    + "key-password are set but " + path + ".tls.keystore-location is not: name the key store too"));
        }
        if (!config.get(TLS_VERIFY_HOSTNAME)) {
            common.put(SslConfigs.SSL_ENDPOINT_IDENTIFICATION_ALGORITHM_CONFIG, "");
        }
    }

    private static void reveal(Secret secret, String key, Map<String, Object> into) {
        if (secret != null) {
            into.put(key, secret.reveal());
        }
    }

    private static String escape(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"");
    }

    /** The consumer group of a pipeline. */
    String groupId(String pipeline) {
        return groupIdPrefix + pipeline;
    }

    /** The consumer of one pipeline, under {@link #groupInstanceId} if set. */
    Map<String, Object> consumer(String pipeline, int maxInFlight) {
        return consumer(pipeline, maxInFlight, groupInstanceId);
    }

    /**
     * The consumer of one pipeline; {@code max.poll.records} sized from {@code maxInFlight}.
     *
     * @param instanceId its {@code group.instance.id}, or {@code null} for a dynamic member
     */
    Map<String, Object> consumer(String pipeline, int maxInFlight, String instanceId) {
        Map<String, Object> p = new HashMap<>(common);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Math.min(maxInFlight, MAX_POLL_RECORDS));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "idem-" + pipeline);
        putKnown(p, ConsumerConfig.configNames());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, groupId(pipeline));
        if (instanceId != null) {
            p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);
        }
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return p;
    }

    /** The adapter's producer, for publish and dead letters. */
    Map<String, Object> producer() {
        Map<String, Object> p = new HashMap<>(common);
        p.put(ProducerConfig.ACKS_CONFIG, acks);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, acks.equals("all"));
        p.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        int delivery = (int) Math.min(Integer.MAX_VALUE, deliveryTimeout.toMillis());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, delivery);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Math.min(delivery, 30_000));
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, delivery);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "idem-producer");
        putKnown(p, ProducerConfig.configNames());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return p;
    }

    /** The admin client for health checks. */
    Map<String, Object> admin() {
        Map<String, Object> p = new HashMap<>(common);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "idem-admin");
        putKnown(p, AdminClientConfig.configNames());
        return p;
    }

    /** The user's keys this client knows; the others belong to another client (validated in {@link #from}). */
    private void putKnown(Map<String, Object> into, Set<String> mine) {
        for (Map.Entry<String, String> e : client.entrySet()) {
            if (mine.contains(e.getKey())) {
                into.put(e.getKey(), e.getValue());
            }
        }
    }

    /** How long a caller waits for a send to be acknowledged: the delivery timeout and a margin. */
    Duration sendWait() {
        return deliveryTimeout.plusSeconds(5);
    }
}
