package dev.idem.adapter.kafka;

import dev.idem.spi.BrokerException;
import dev.idem.spi.ConfigKey;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.RetriableException;

/**
 * The check, before the adapter's first consumer or producer talks to the cluster, that it can be reached at
 * all, so that unreachable bootstrap servers give one error naming them instead of the clients' endless
 * reconnect warnings and, much later, "Topic … not present in metadata".
 *
 * <p>Two steps within one deadline: until a bootstrap server accepts a TCP connection (each tried in turn, every
 * address its name resolves to, again and again until the deadline); then an admin client describes the cluster
 * through it, which checks the security protocol and credentials too. Its reconnect back-off is raised (unless the
 * user's {@code client} map sets it), so a cluster that accepts connections and then drops them logs a few
 * warnings rather than dozens. Stateless.
 */
final class BootstrapProbe {

    /** The pause between two rounds of connection attempts. */
    private static final long ROUND_PAUSE_MS = 250;
    /** The longest one TCP connection attempt waits. */
    private static final int ATTEMPT_TIMEOUT_MS = 5_000;
    /** The shortest connection attempt worth making. */
    private static final int MIN_ATTEMPT_MS = 100;
    /** The least time describing the cluster gets, even when a server answered just before the deadline. */
    private static final Duration MIN_DESCRIBE = Duration.ofSeconds(1);

    private BootstrapProbe() {
    }

    /**
     * Returns once the cluster described itself.
     *
     * @param timeoutKey the config path of {@code timeout}, for messages
     * @throws BrokerException if no server accepted a connection (retriable), the cluster did not describe itself
     *         in time (retriable), or refused to (retriable where Kafka says so)
     */
    static void check(KafkaSettings settings, Duration timeout, String timeoutKey) throws InterruptedException {
        String servers = String.valueOf(settings.common().get(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG));
        String serversKey = settings.path() + "." + KafkaAdapterProvider.BOOTSTRAP_SERVERS.name();
        long deadline = System.nanoTime() + timeout.toNanos();
        Map<String, String> failures = awaitConnection(List.of(servers.split(",")), deadline);
        if (failures != null) {
            List<String> each = new ArrayList<>();
            failures.forEach((server, failure) -> each.add(server + ": " + failure));
            throw new BrokerException("Cannot reach Kafka: none of the bootstrap servers [" + String.join(", ",
                    failures.keySet()) + "] (" + serversKey + ") accepted a connection within "
                    + ConfigKey.formatDuration(timeout) + " (" + timeoutKey + "): " + String.join("; ", each)
                    + ". Check that the brokers run and that the hosts and ports are right", true);
        }
        describe(settings, servers, serversKey, timeout, timeoutKey, deadline);
    }

    /** @return {@code null} once a server accepted a connection, else each server's last failure */
    private static Map<String, String> awaitConnection(List<String> servers, long deadline)
            throws InterruptedException {
        Map<String, String> failures = new LinkedHashMap<>();
        while (true) {
            for (String server : servers) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left < MIN_ATTEMPT_MS && failures.containsKey(server.trim())) {
                    // Too short to tell anything: keep what the last full attempt said.
                    continue;
                }
                String failure = connect(server.trim(), (int) Math.max(MIN_ATTEMPT_MS, Math.min(left,
                        ATTEMPT_TIMEOUT_MS)));
                if (failure == null) {
                    return null;
                }
                failures.put(server.trim(), failure);
            }
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                return failures;
            }
            Thread.sleep(Math.min(left, ROUND_PAUSE_MS));
        }
    }

    /** @return {@code null} if one of the server's addresses accepted a connection, else why none did */
    private static String connect(String server, int timeoutMs) {
        int colon = server.lastIndexOf(':');
        String host = server.substring(0, colon);
        int port = Integer.parseInt(server.substring(colon + 1));
        InetAddress[] addresses;
        try {
            addresses = InetAddress.getAllByName(host);
        } catch (UnknownHostException e) {
            return "unknown host";
        }
        String failure = null;
        for (InetAddress address : addresses) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(address, port), timeoutMs);
                return null;
            } catch (SocketTimeoutException e) {
                failure = "no answer to the connection attempt (" + address.getHostAddress() + ")";
            } catch (IOException e) {
                failure = e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
            }
        }
        return failure;
    }

    private static void describe(KafkaSettings settings, String servers, String serversKey, Duration timeout,
            String timeoutKey, long deadline) throws InterruptedException {
        Map<String, Object> config = new HashMap<>(settings.admin());
        config.putIfAbsent(CommonClientConfigs.RECONNECT_BACKOFF_MS_CONFIG, 1_000);
        config.putIfAbsent(CommonClientConfigs.RECONNECT_BACKOFF_MAX_MS_CONFIG, 10_000);
        config.put(CommonClientConfigs.CLIENT_ID_CONFIG, "idem-probe");
        long left = Math.max(MIN_DESCRIBE.toMillis(), TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
        Admin admin;
        try {
            admin = Admin.create(config);
        } catch (KafkaException e) {
            throw new BrokerException("Cannot create the Kafka admin client for " + settings.path() + ": "
                    + e.getMessage() + " (check " + settings.path() + ".client and the security settings)", false, e);
        }
        try {
            admin.describeCluster(new DescribeClusterOptions().timeoutMs((int) Math.min(Integer.MAX_VALUE, left)))
                    .clusterId().get(left + 1_000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException | KafkaException e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            boolean retriable = cause instanceof RetriableException || cause instanceof TimeoutException;
            throw new BrokerException("Kafka at [" + servers.replace(",", ", ") + "] (" + serversKey + ") accepted a "
                    + "connection but did not describe the cluster within " + ConfigKey.formatDuration(timeout)
                    + " (" + timeoutKey + "): " + cause.getMessage() + ". Check that " + settings.path()
                    + ".security.protocol and the TLS/SASL settings match the broker's listener, and that the "
                    + "brokers' advertised listeners can be reached from here", retriable, cause);
        } finally {
            admin.close(Duration.ofSeconds(1));
        }
    }
}
