package dev.idem.adapter.rabbitmq;

import com.rabbitmq.client.ConnectionFactory;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigProblem;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * Applies the {@code client} pass-through map to a {@link ConnectionFactory}. Only settings that make sense
 * under the adapter are accepted: it owns recovery, TLS, credentials and the connection name itself.
 */
final class ClientSettings {

    private enum Kind { DURATION_MS, DURATION_S, COUNT }

    private record Setting(String name, Kind kind, BiConsumer<ConnectionFactory, Integer> apply) {
    }

    private static final List<Setting> SETTINGS = List.of(
            new Setting("requested-heartbeat", Kind.DURATION_S, ConnectionFactory::setRequestedHeartbeat),
            new Setting("connection-timeout", Kind.DURATION_MS, ConnectionFactory::setConnectionTimeout),
            new Setting("handshake-timeout", Kind.DURATION_MS, ConnectionFactory::setHandshakeTimeout),
            new Setting("shutdown-timeout", Kind.DURATION_MS, ConnectionFactory::setShutdownTimeout),
            new Setting("channel-rpc-timeout", Kind.DURATION_MS, ConnectionFactory::setChannelRpcTimeout),
            new Setting("requested-channel-max", Kind.COUNT, ConnectionFactory::setRequestedChannelMax),
            new Setting("requested-frame-max", Kind.COUNT, ConnectionFactory::setRequestedFrameMax));

    /** The accepted names, for docs and error messages. */
    static final List<String> ACCEPTED = SETTINGS.stream().map(Setting::name).toList();

    private ClientSettings() {
    }

    /**
     * Applies {@code values} to {@code factory}, adding one problem per unknown or invalid setting.
     *
     * @param path the map's config path, e.g. {@code broker.rabbitmq.client}
     */
    static void apply(Map<String, String> values, ConnectionFactory factory, String path,
            List<ConfigProblem> problems) {
        for (Map.Entry<String, String> e : values.entrySet()) {
            Setting setting = SETTINGS.stream().filter(s -> s.name().equals(e.getKey())).findFirst().orElse(null);
            String where = path + "." + e.getKey();
            if (setting == null) {
                problems.add(new ConfigProblem(where, "Unknown key " + where + ": the RabbitMQ client settings"
                        + " accepted here are " + ACCEPTED));
                continue;
            }
            try {
                setting.apply().accept(factory, parse(setting.kind(), e.getValue()));
            } catch (IllegalArgumentException ex) {
                problems.add(ConfigProblem.invalid(where, e.getValue(), ex.getMessage()));
            }
        }
    }

    private static int parse(Kind kind, String text) {
        if (kind == Kind.COUNT) {
            try {
                int n = Integer.parseInt(text.trim());
                if (n < 0) {
                    throw new IllegalArgumentException("must be at least 0 (0 = no limit)");
                }
                return n;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("must be an integer");
            }
        }
        Duration d = ConfigKey.parseDuration(text);
        if (d.isNegative()) {
            throw new IllegalArgumentException("must not be negative");
        }
        long amount = kind == Kind.DURATION_S ? (d.toMillis() + 999) / 1000 : d.toMillis();
        if (amount > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("is too long");
        }
        return (int) amount;
    }
}
