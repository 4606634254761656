package dev.idem.adapter.rocketmq;

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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;

/**
 * The checks, before the adapter starts a RocketMQ client (its producer, each subscription's consumer), that the
 * cluster can be reached at all, so that unreachable name servers give one error naming them within
 * {@code connect-timeout} instead of the client's route lookups failing quietly every 30 seconds (a consumer of an
 * unreachable cluster just never receives anything) or its sends waiting out their timeouts.
 *
 * <p>{@link #awaitReachable} runs before any client starts: until a name server accepts a TCP connection (each tried
 * in turn, every address its name resolves to, again and again until the deadline). {@link #awaitDescribed} then asks
 * the name servers, through a started client, for the cluster's brokers, which checks that it is a RocketMQ name
 * server speaking the same protocol (TLS or not). Stateless.
 */
final class NameServerProbe {

    private static final long ROUND_PAUSE_MS = 250;
    private static final int ATTEMPT_TIMEOUT_MS = 5_000;
    private static final int MIN_ATTEMPT_MS = 100;
    /** The least time the cluster query gets, even when a server answered just before the deadline. */
    private static final long MIN_DESCRIBE_MS = 1_000;

    private NameServerProbe() {
    }

    /**
     * Returns once a name server accepted a TCP connection; starts no client.
     *
     * @return the {@link System#nanoTime()} deadline of the whole check, {@code connect-timeout} after the start, for
     *         {@link #awaitDescribed}
     * @throws BrokerException (retriable) if no name server accepted a connection within {@code connect-timeout}
     */
    static long awaitReachable(RocketMqSettings settings) throws InterruptedException {
        Duration timeout = settings.connectTimeout();
        long deadline = System.nanoTime() + timeout.toNanos();
        Map<String, String> failures = awaitConnection(settings.nameServers(), deadline);
        if (failures != null) {
            List<String> each = new ArrayList<>();
            failures.forEach((server, failure) -> each.add(server + ": " + failure));
            throw new BrokerException("Cannot reach RocketMQ: none of the name servers [" + String.join(", ",
                    failures.keySet()) + "] (" + serversKey(settings) + ") accepted a connection within "
                    + ConfigKey.formatDuration(timeout) + " (" + timeoutKey(settings) + "): " + String.join("; ", each)
                    + ". Check that the name servers run and that the hosts and ports are right", true);
        }
        return deadline;
    }

    /**
     * Returns once a name server described the cluster, by {@code deadline} (or within a second, if it is nearer).
     *
     * @param client the remoting client of a started producer
     * @throws BrokerException (retriable) if none described the cluster in time
     */
    static void awaitDescribed(RocketMqSettings settings, MQClientAPIImpl client, long deadline)
            throws InterruptedException {
        long left = Math.max(MIN_DESCRIBE_MS, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
        try {
            client.getBrokerClusterInfo(left);
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            throw new BrokerException("RocketMQ name server [" + String.join(", ", settings.nameServers()) + "] ("
                    + serversKey(settings) + ") accepted a connection but did not describe the cluster within "
                    + ConfigKey.formatDuration(settings.connectTimeout()) + " (" + timeoutKey(settings) + "): "
                    + RocketMqAdapter.describe(e) + ". Check that it is a RocketMQ name server and that "
                    + settings.path() + ".tls matches its listener", true, e);
        }
    }

    private static String serversKey(RocketMqSettings settings) {
        return settings.path() + "." + RocketMqAdapterProvider.NAME_SERVER.name();
    }

    private static String timeoutKey(RocketMqSettings settings) {
        return settings.path() + "." + RocketMqAdapterProvider.CONNECT_TIMEOUT.name();
    }

    /** @return {@code null} once a server accepted a connection, else each server's last failure */
    private static Map<String, String> awaitConnection(List<String> servers, long deadline)
            throws InterruptedException {
        Map<String, String> failures = new LinkedHashMap<>();
        while (true) {
            for (String server : servers) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left < MIN_ATTEMPT_MS && failures.containsKey(server)) {
                    continue;
                }
                String failure = connect(server, (int) Math.max(MIN_ATTEMPT_MS, Math.min(left, ATTEMPT_TIMEOUT_MS)));
                if (failure == null) {
                    return null;
                }
                failures.put(server, failure);
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
}
