package dev.idem.testkit.fault;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.testkit.fault.FaultProxy.Direction;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link FaultProxy} in front of an echo server of the test's own: each fault does what it says to connections that
 * are open when it is switched, and the proxy forwards every byte in order once the faults are lifted. Time bounds are
 * lower bounds for what a fault must delay, and upper bounds of several seconds for what must happen at all, so that
 * a loaded machine does not fail them.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class FaultProxyTest {

    /** Longer than anything here takes when it works, so "nothing arrived" is not a slow machine's fluke. */
    private static final int SILENCE_MILLIS = 700;

    private EchoServer echo;
    private FaultProxy proxy;
    private final List<Socket> clients = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws IOException {
        echo = new EchoServer();
        proxy = FaultProxy.start("127.0.0.1", echo.port());
    }

    @AfterEach
    void stop() throws IOException {
        for (Socket s : clients) {
            s.close();
        }
        proxy.close();
        echo.close();
    }

    @Test
    void forwardsBothWaysInOrderWithoutFaults() throws Exception {
        Socket client = connect();
        byte[] sent = random(200_000, 1);

        assertThat(roundTrip(client, sent)).isEqualTo(sent);
        // Counted right after each write, so possibly just after the client read the bytes.
        await().atMost(Duration.ofSeconds(5)).until(() -> proxy.forwardedBytes(Direction.TO_TARGET) == sent.length
                && proxy.forwardedBytes(Direction.TO_CLIENT) == sent.length);
        assertThat(proxy.openConnections()).isEqualTo(1);
        assertThat(proxy.acceptedConnections()).isEqualTo(1);
    }

    @Test
    void latencyDelaysEachDirectionByAtLeastItsSettingWithoutLimitingThroughput() throws Exception {
        Socket client = connect();
        assertThat(roundTrip(client, bytes("warm"))).isEqualTo(bytes("warm"));

        proxy.latency(Direction.TO_TARGET, Duration.ofMillis(300));
        assertThat(timeRoundTrip(client)).isBetween(Duration.ofMillis(300), Duration.ofSeconds(10));
        proxy.latency(Direction.TO_TARGET, Duration.ZERO).latency(Direction.TO_CLIENT, Duration.ofMillis(400));
        assertThat(timeRoundTrip(client)).isBetween(Duration.ofMillis(400), Duration.ofSeconds(10));
        proxy.latency(Duration.ofMillis(250));
        assertThat(timeRoundTrip(client)).isBetween(Duration.ofMillis(500), Duration.ofSeconds(10));

        // 40 messages in a row, each delayed 2 x 250 ms: one after another that would take 20 s; pipelined, about
        // half a second.
        long start = System.nanoTime();
        OutputStream out = client.getOutputStream();
        for (int i = 0; i < 40; i++) {
            out.write(bytes("m" + (i % 10)));
            out.flush();
        }
        assertThat(readFully(client, 80)).isEqualTo(bytes("m0m1m2m3m4m5m6m7m8m9".repeat(4)));
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(500)).isLessThan(Duration.ofSeconds(8));

        proxy.normal();
        assertThat(timeRoundTrip(client)).isLessThan(Duration.ofSeconds(5));
    }

    @Test
    void bandwidthLimitPacesTheBytes() throws Exception {
        Socket client = connect();
        proxy.bandwidth(Direction.TO_CLIENT, 32 * 1024);
        byte[] sent = random(96 * 1024, 2);

        long start = System.nanoTime();
        assertThat(roundTrip(client, sent)).isEqualTo(sent);
        Duration took = Duration.ofNanos(System.nanoTime() - start);

        // 96 KiB at 32 KiB/s: 3 s, less the first slice that goes at once.
        assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(2_500)).isLessThan(Duration.ofSeconds(30));
        proxy.bandwidth(0);
        start = System.nanoTime();
        assertThat(roundTrip(client, sent)).isEqualTo(sent);
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    }

    @Test
    void blackHoleForwardsNothingKeepsConnectionsOpenAcceptsNewOnesThenDeliversWhatItHeld() throws Exception {
        Socket before = connect();
        assertThat(roundTrip(before, bytes("up"))).isEqualTo(bytes("up"));
        long received = echo.received.get();

        proxy.blackHole();
        write(before, "held request");
        Socket during = connect();
        write(during, "new connection");

        assertSilent(before);
        assertSilent(during);
        assertThat(echo.received.get()).as("the server got nothing").isEqualTo(received);
        assertThat(proxy.openConnections()).isEqualTo(2);
        assertThat(echo.connections.get()).as("the new connection reached the server").isEqualTo(2);

        proxy.normal();
        assertThat(readFully(before, 12)).isEqualTo(bytes("held request"));
        assertThat(readFully(during, 14)).isEqualTo(bytes("new connection"));
    }

    @Test
    void blackHoleHoldsAClientsCloseUntilLifted() throws Exception {
        Socket client = connect();
        assertThat(roundTrip(client, bytes("up"))).isEqualTo(bytes("up"));
        proxy.blackHole();
        client.close();

        await().during(Duration.ofMillis(SILENCE_MILLIS)).atMost(Duration.ofSeconds(5))
                .until(() -> echo.closed.get() == 0);
        proxy.normal();
        await().atMost(Duration.ofSeconds(10)).until(() -> echo.closed.get() == 1);
        await().atMost(Duration.ofSeconds(10)).until(() -> proxy.openConnections() == 0);
    }

    @Test
    void resetSendsARstToTheOpenConnectionsAndLeavesLaterOnesAlone() throws Exception {
        Socket client = connect();
        assertThat(roundTrip(client, bytes("up"))).isEqualTo(bytes("up"));

        assertThat(proxy.reset()).isEqualTo(1);

        client.setSoTimeout(10_000);
        assertThatThrownBy(() -> {
            // A reset, not an orderly end-of-stream (-1): the read fails.
            int n;
            do {
                n = client.getInputStream().read();
            } while (n >= 0);
            throw new AssertionError("read end-of-stream instead of a reset");
        }).isInstanceOf(SocketException.class).hasMessageContaining("reset");
        await().atMost(Duration.ofSeconds(10)).until(() -> echo.resets.get() == 1);
        assertThat(proxy.openConnections()).isZero();

        Socket later = connect();
        assertThat(roundTrip(later, bytes("again"))).isEqualTo(bytes("again"));
    }

    @Test
    void halfOpenTowardsTheClientLetsRequestsThroughAndHoldsTheAnswers() throws Exception {
        Socket client = connect();
        assertThat(roundTrip(client, bytes("up"))).isEqualTo(bytes("up"));
        long received = echo.received.get();

        proxy.halfOpen(Direction.TO_CLIENT);
        write(client, "asked");

        await().atMost(Duration.ofSeconds(10)).until(() -> echo.received.get() == received + 5);
        assertSilent(client);
        proxy.normal();
        assertThat(readFully(client, 5)).isEqualTo(bytes("asked"));
    }

    @Test
    void halfOpenTowardsTheTargetHoldsRequestsOnly() throws Exception {
        Socket client = connect();
        assertThat(roundTrip(client, bytes("up"))).isEqualTo(bytes("up"));
        long received = echo.received.get();

        proxy.halfOpen(Direction.TO_TARGET);
        write(client, "held");

        assertSilent(client);
        assertThat(echo.received.get()).isEqualTo(received);
        proxy.halfOpen(Direction.TO_CLIENT);
        await().atMost(Duration.ofSeconds(10)).until(() -> echo.received.get() == received + 4);
        proxy.normal();
        assertThat(readFully(client, 4)).isEqualTo(bytes("held"));
    }

    @Test
    void closeTowardsClientsEndsTheirStreamWhileWhatTheySendStillArrives() throws Exception {
        Socket client = connect();
        assertThat(roundTrip(client, bytes("up"))).isEqualTo(bytes("up"));
        long received = echo.received.get();

        assertThat(proxy.closeTowardsClients()).isEqualTo(1);

        client.setSoTimeout(10_000);
        assertThat(client.getInputStream().read()).as("end-of-stream").isEqualTo(-1);
        write(client, "still sending");
        await().atMost(Duration.ofSeconds(10)).until(() -> echo.received.get() == received + 13);

        Socket later = connect();
        assertThat(roundTrip(later, bytes("later"))).isEqualTo(bytes("later"));
    }

    @Test
    void aClientsHalfCloseIsPassedOnAndTheConnectionEndsOnceBothSidesClosed() throws Exception {
        Socket client = connect();
        write(client, "last words");
        client.shutdownOutput();

        assertThat(readFully(client, 10)).isEqualTo(bytes("last words"));
        client.setSoTimeout(10_000);
        assertThat(client.getInputStream().read()).as("the server closed after the client's end").isEqualTo(-1);
        await().atMost(Duration.ofSeconds(10)).until(() -> proxy.openConnections() == 0);
    }

    @Test
    void aTargetThatRefusesResetsTheClient() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        try (FaultProxy nowhere = FaultProxy.start("127.0.0.1", closedPort)) {
            Socket client = new Socket();
            clients.add(client);
            // The reset may come before connect returns (a busy machine), or on the first read.
            assertThatThrownBy(() -> {
                client.connect(new InetSocketAddress(nowhere.host(), nowhere.port()), 5_000);
                client.setSoTimeout(10_000);
                int n;
                do {
                    n = client.getInputStream().read();
                } while (n >= 0);
                throw new AssertionError("read end-of-stream instead of a reset");
            }).isInstanceOf(SocketException.class);
            assertThat(nowhere.openConnections()).isZero();
        }
    }

    @Test
    void everyByteArrivesInOrderWhileFaultsChangeUnderManyConnections() throws Exception {
        int connections = 6;
        int size = 300_000;
        ExecutorService pool = Executors.newFixedThreadPool(connections * 2);
        AtomicBoolean toggling = new AtomicBoolean(true);
        Thread toggler = new Thread(() -> {
            Random random = new Random(3);
            while (toggling.get()) {
                switch (random.nextInt(5)) {
                    case 0 -> proxy.blackHole();
                    case 1 -> proxy.latency(Duration.ofMillis(random.nextInt(30)));
                    case 2 -> proxy.bandwidth(200_000 + random.nextInt(1_000_000));
                    case 3 -> proxy.halfOpen(random.nextBoolean() ? Direction.TO_CLIENT : Direction.TO_TARGET);
                    default -> proxy.normal();
                }
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "toggler");
        try {
            List<Future<byte[]>> echoed = new ArrayList<>();
            List<byte[]> sent = new ArrayList<>();
            toggler.start();
            for (int c = 0; c < connections; c++) {
                Socket client = connect();
                byte[] data = random(size, 10 + c);
                sent.add(data);
                pool.submit(() -> {
                    OutputStream out = client.getOutputStream();
                    for (int off = 0; off < data.length; off += 7_919) {
                        out.write(data, off, Math.min(7_919, data.length - off));
                    }
                    out.flush();
                    return null;
                });
                echoed.add(pool.submit(() -> readFully(client, size)));
            }
            // Faults keep changing until half of every byte went there and back.
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> proxy.forwardedBytes(Direction.TO_CLIENT) >= (long) connections * size / 2);
            toggling.set(false);
            toggler.join();
            proxy.normal();
            for (int c = 0; c < connections; c++) {
                assertThat(echoed.get(c).get(60, TimeUnit.SECONDS)).as("connection %d", c).isEqualTo(sent.get(c));
            }
        } finally {
            toggling.set(false);
            pool.shutdownNow();
        }
    }

    @Test
    void closeEndsEveryConnectionAndStopsListening() throws Exception {
        Socket client = connect();
        assertThat(roundTrip(client, bytes("up"))).isEqualTo(bytes("up"));
        int port = proxy.port();
        long accepted = proxy.acceptedConnections();

        proxy.close();
        proxy.close();

        client.setSoTimeout(10_000);
        int n;
        try {
            n = client.getInputStream().read();
        } catch (SocketException reset) {
            n = -1;
        }
        assertThat(n).as("the client's connection ended").isEqualTo(-1);
        // Nothing listens for the proxy any more: a new connection is refused, or, should another socket of this
        // machine have taken the freed port meanwhile, it is not the proxy's.
        try (Socket late = new Socket()) {
            late.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 5_000);
            late.setSoTimeout(500);
            late.getOutputStream().write(bytes("late"));
            late.getInputStream().read();
        } catch (IOException refusedOrNotServed) {
            // refused (nothing listens), or the port's new owner did not answer
        }
        assertThat(proxy.acceptedConnections()).as("connections the closed proxy accepted").isEqualTo(accepted);
        assertThat(proxy.openConnections()).as("connections open on the closed proxy").isZero();
    }

    @Test
    void proxiedUrlPutsTheProxyInPlaceOfTheServerAndKeepsTheRest() {
        String host = proxy.host() + ":" + proxy.port();
        assertThat(proxy.proxiedUrl("jdbc:postgresql://db.example:5432/test?user=x"))
                .isEqualTo("jdbc:postgresql://" + host + "/test?user=x");
        assertThat(proxy.proxiedUrl("amqp://guest:guest@127.0.0.1:5672/%2F"))
                .isEqualTo("amqp://guest:guest@" + host + "/%2F");
        assertThat(proxy.proxiedUrl("redis://127.0.0.1:6379")).isEqualTo("redis://" + host);
        assertThatThrownBy(() -> proxy.proxiedUrl("no-authority")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void forUrlTargetsTheServerTheUrlNames() {
        try (FaultProxy a = FaultProxy.forUrl("amqp://guest:guest@127.0.0.1/%2F");
                FaultProxy b = FaultProxy.forUrl("jdbc:postgresql://[::1]:6543/test")) {
            assertThat(a.target().getHostString()).isEqualTo("127.0.0.1");
            assertThat(a.target().getPort()).isEqualTo(5672);
            assertThat(b.target().getHostString()).isEqualTo("::1");
            assertThat(b.target().getPort()).isEqualTo(6543);
        }
        assertThatThrownBy(() -> FaultProxy.forUrl("http://example/")).isInstanceOf(IllegalArgumentException.class);
    }

    // --- helpers

    private Socket connect() throws IOException {
        Socket s = new Socket();
        clients.add(s);
        s.connect(new InetSocketAddress(proxy.host(), proxy.port()), 5_000);
        s.setTcpNoDelay(true);
        return s;
    }

    private static byte[] roundTrip(Socket client, byte[] data) throws Exception {
        ExecutorService writer = Executors.newSingleThreadExecutor();
        try {
            Future<?> written = writer.submit(() -> {
                client.getOutputStream().write(data);
                client.getOutputStream().flush();
                return null;
            });
            byte[] back = readFully(client, data.length);
            written.get(30, TimeUnit.SECONDS);
            return back;
        } finally {
            writer.shutdownNow();
        }
    }

    private static Duration timeRoundTrip(Socket client) throws Exception {
        long start = System.nanoTime();
        assertThat(roundTrip(client, bytes("ping"))).isEqualTo(bytes("ping"));
        return Duration.ofNanos(System.nanoTime() - start);
    }

    private static byte[] readFully(Socket client, int length) throws IOException {
        client.setSoTimeout(30_000);
        InputStream in = client.getInputStream();
        ByteArrayOutputStream out = new ByteArrayOutputStream(length);
        byte[] buffer = new byte[8192];
        while (out.size() < length) {
            int n = in.read(buffer, 0, Math.min(buffer.length, length - out.size()));
            if (n < 0) {
                throw new IOException("end-of-stream after " + out.size() + " of " + length + " bytes");
            }
            out.write(buffer, 0, n);
        }
        return out.toByteArray();
    }

    /** Nothing arrives on {@code client} for a while, and its connection is not closed either. */
    private static void assertSilent(Socket client) throws IOException {
        client.setSoTimeout(SILENCE_MILLIS);
        assertThatThrownBy(() -> client.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
    }

    private static void write(Socket client, String text) throws IOException {
        client.getOutputStream().write(bytes(text));
        client.getOutputStream().flush();
    }

    private static byte[] bytes(String text) {
        return text.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    }

    private static byte[] random(int size, long seed) {
        byte[] data = new byte[size];
        new Random(seed).nextBytes(data);
        return data;
    }

    /**
     * Echoes every byte back on the connection it came from, counting what it received, the connections it
     * accepted, the ones that ended in order and the ones that were reset.
     */
    private static final class EchoServer implements AutoCloseable {
        final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        final AtomicLong received = new AtomicLong();
        final AtomicLong connections = new AtomicLong();
        final AtomicLong closed = new AtomicLong();
        final AtomicLong resets = new AtomicLong();
        final List<Socket> sockets = new CopyOnWriteArrayList<>();

        EchoServer() throws IOException {
            Thread acceptor = new Thread(() -> {
                try {
                    while (true) {
                        Socket s = server.accept();
                        sockets.add(s);
                        connections.incrementAndGet();
                        Thread t = new Thread(() -> serve(s), "echo-" + s.getPort());
                        t.setDaemon(true);
                        t.start();
                    }
                } catch (IOException closedServer) {
                    // The test is over.
                }
            }, "echo-accept");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        int port() {
            return server.getLocalPort();
        }

        private void serve(Socket s) {
            byte[] buffer = new byte[8192];
            try (s) {
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream();
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    received.addAndGet(n);
                    out.write(buffer, 0, n);
                    out.flush();
                }
                closed.incrementAndGet();
            } catch (SocketException e) {
                if (String.valueOf(e.getMessage()).contains("reset")) {
                    resets.incrementAndGet();
                }
            } catch (IOException e) {
                // Counted as neither.
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket s : sockets) {
                s.close();
            }
        }

        @Override
        public String toString() {
            return "EchoServer" + Arrays.asList(received, connections, closed, resets);
        }
    }
}
