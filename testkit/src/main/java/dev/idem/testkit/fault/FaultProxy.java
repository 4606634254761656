package dev.idem.testkit.fault;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.UnaryOperator;

/**
 * A TCP proxy for tests that puts network faults between a client under test and a real server (a store, a
 * broker): it listens on an ephemeral port of the loopback interface and forwards every connection it accepts to
 * one target {@code host:port}, and a test switches faults on and off at any time while connections are open.
 *
 * <pre>{@code
 * try (FaultProxy proxy = FaultProxy.forUrl("redis://127.0.0.1:6379")) {
 *     String uri = proxy.proxiedUrl("redis://127.0.0.1:6379");      // redis://127.0.0.1:<proxy port>
 *     // ... start the client on uri ...
 *     proxy.blackHole();                                             // the server seems to hang
 *     proxy.normal();                                                // and comes back
 * }
 * }</pre>
 *
 * <h2>Faults</h2>
 * Each direction of a connection, {@link Direction#TO_TARGET} (what the client sends) and
 * {@link Direction#TO_CLIENT} (what the server answers), has its own settings. A setting applies at once to every
 * open connection, the bytes it holds included, and to the connections opened later, until changed:
 * <ul>
 *   <li>{@link #latency(Direction, Duration)}: each byte is forwarded no sooner than that long after the proxy read
 *       it. Bytes keep their order and the delay does not limit the throughput (a one-way delay, as a long link
 *       adds, not a stop-and-wait).</li>
 *   <li>{@link #bandwidth(Direction, long)}: at most that many bytes per second are forwarded, in slices of about
 *       20 ms worth.</li>
 *   <li>{@link #blackHole()}: nothing is forwarded in either direction, not even a close: connections stay open
 *       and new ones are still accepted (and connected to the target), as when a firewall starts dropping packets
 *       or a server hangs. The bytes sent meanwhile are held, as TCP keeps retransmitting them, up to
 *       {@value #HELD_BYTES_PER_DIRECTION} bytes per direction and connection, beyond which the sender's writes
 *       block (its socket buffers fill, as with a real partition); they are delivered once the fault is lifted,
 *       unless {@link #reset()} or {@link #close()} dropped them meanwhile. A client that gives up and closes its
 *       socket has its close held behind its bytes, so the server receives both only when the fault is lifted (as
 *       a request sent before a partition reaches the server after it heals).</li>
 *   <li>{@link #halfOpen(Direction)}: one direction is held as by a black hole while the other flows: with
 *       {@code TO_CLIENT} the server receives what the client sends but its answers do not come back.</li>
 *   <li>{@link #normal()}: every fault lifted; held bytes flow at once.</li>
 * </ul>
 * Two actions act on the connections open at the time of the call (accepted and connected to the target), and
 * not on later ones:
 * <ul>
 *   <li>{@link #reset()}: each is reset on both sides ({@code SO_LINGER} 0, then close, so the peers get a TCP
 *       RST: "connection reset"), and what it held is dropped.</li>
 *   <li>{@link #closeTowardsClients()}: each client gets end-of-stream ({@code shutdownOutput}) while what it sends
 *       is still forwarded; what the server answers afterwards is dropped.</li>
 * </ul>
 *
 * <h2>Connections</h2>
 * The proxy connects to the target when it accepts a connection (within {@value #CONNECT_TIMEOUT_MILLIS} ms); if
 * that fails, the client's connection is reset. Without faults, a close or a half-close of one side is passed on to
 * the other once the bytes before it are forwarded, and a reset of one side resets the other. Every connection uses
 * four daemon threads, named after the proxy's port; the proxy is meant for a handful of connections, as a client
 * library or a connection pool opens them.
 *
 * <p>Thread-safe: every method may be called from any thread at any time. {@link #close()} stops accepting, closes
 * every connection and ends every thread of the proxy; it is idempotent. Arguments must not be {@code null}.
 */
public final class FaultProxy implements AutoCloseable {

    /** One way of a connection. */
    public enum Direction {
        /** From the client to the target server: requests. */
        TO_TARGET,
        /** From the target server back to the client: answers. */
        TO_CLIENT
    }

    /** How many bytes a direction of one connection holds, when a fault stops or slows it, before its reads stop. */
    public static final int HELD_BYTES_PER_DIRECTION = 1 << 20;
    /** How long the proxy waits for the target to accept a connection. */
    public static final int CONNECT_TIMEOUT_MILLIS = 10_000;

    private static final int READ_BUFFER = 16 * 1024;
    /** The share of a second one slice of a limited bandwidth is worth: 20 ms. */
    private static final int SLICES_PER_SECOND = 50;

    /** What one direction does now; immutable. */
    private record Flow(long latencyNanos, long bytesPerSecond, boolean held) {
        static final Flow NORMAL = new Flow(0, 0, false);
    }

    /** Both directions' settings; replaced whole, so that a reader sees one consistent state. */
    private record Faults(Flow toTarget, Flow toClient) {
        Flow of(Direction direction) {
            return direction == Direction.TO_TARGET ? toTarget : toClient;
        }

        Faults with(Direction direction, Flow flow) {
            return direction == Direction.TO_TARGET ? new Faults(flow, toClient) : new Faults(toTarget, flow);
        }
    }

    private final InetSocketAddress target;
    private final ServerSocket listener;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private final AtomicLong accepted = new AtomicLong();
    private final Map<Direction, LongAdder> forwarded = new EnumMap<>(Direction.class);
    private final Object settings = new Object();
    private volatile Faults faults = new Faults(Flow.NORMAL, Flow.NORMAL);
    private volatile boolean closed;

    private FaultProxy(InetSocketAddress target, ServerSocket listener) {
        this.target = target;
        this.listener = listener;
        for (Direction d : Direction.values()) {
            forwarded.put(d, new LongAdder());
        }
    }

    /**
     * Starts a proxy to {@code host:port}, listening on an ephemeral port of the loopback interface. The target
     * need not listen yet: it is connected to for each accepted connection.
     *
     * @throws UncheckedIOException if no port could be bound
     * @throws IllegalArgumentException if the port is out of range
     */
    public static FaultProxy start(String host, int port) {
        Objects.requireNonNull(host, "host");
        InetSocketAddress target = InetSocketAddress.createUnresolved(host, port);
        ServerSocket listener = null;
        try {
            listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            FaultProxy proxy = new FaultProxy(target, listener);
            Thread acceptor = new Thread(proxy::acceptLoop, "fault-proxy-" + listener.getLocalPort() + "-accept");
            acceptor.setDaemon(true);
            acceptor.start();
            return proxy;
        } catch (IOException e) {
            closeQuietly(listener);
            throw new UncheckedIOException("Cannot listen for a fault proxy to " + host + ":" + port, e);
        }
    }

    /**
     * Starts a proxy to the server {@code url} names: its host and port ({@code redis://h:6379},
     * {@code jdbc:postgresql://h:5432/db}, {@code amqp://user:pass@h:5672/%2F}); without a port, the scheme's usual
     * one (redis 6379, rediss 6380, postgresql 5432, mariadb and mysql 3306, amqp 5672, amqps 5671).
     *
     * @throws IllegalArgumentException if the URL names no host, or no port and a scheme without a known one
     */
    public static FaultProxy forUrl(String url) {
        Authority authority = Authority.of(url);
        String host = authority.hostPort;
        int port;
        int colon = host.lastIndexOf(':');
        if (colon > host.lastIndexOf(']')) {
            port = Integer.parseInt(host.substring(colon + 1));
            host = host.substring(0, colon);
        } else {
            port = defaultPort(url);
        }
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        if (host.isEmpty()) {
            throw new IllegalArgumentException("The URL " + url + " names no host");
        }
        return start(host, port);
    }

    /** The proxy's host: the loopback address, as a literal. */
    public String host() {
        return listener.getInetAddress().getHostAddress();
    }

    /** The port the proxy listens on. */
    public int port() {
        return listener.getLocalPort();
    }

    /** Where the proxy forwards to (unresolved: resolved for each connection). */
    public InetSocketAddress target() {
        return target;
    }

    /**
     * {@code url} with the proxy's host and port in place of the host and port it names (its user information,
     * path and parameters kept), for the client under test: {@code jdbc:postgresql://db:5432/test?x=y} becomes
     * {@code jdbc:postgresql://127.0.0.1:<port>/test?x=y}.
     *
     * @throws IllegalArgumentException if {@code url} has no {@code //authority}
     */
    public String proxiedUrl(String url) {
        Authority authority = Authority.of(url);
        return url.substring(0, authority.start) + authority.userInfo + host() + ":" + port()
                + url.substring(authority.end);
    }

    /**
     * Delays each byte going {@code direction} by {@code delay} from when the proxy read it; {@link Duration#ZERO}
     * for none. Bytes already held get the new delay too.
     *
     * @return this proxy
     * @throws IllegalArgumentException if {@code delay} is negative
     */
    public FaultProxy latency(Direction direction, Duration delay) {
        Objects.requireNonNull(direction, "direction");
        if (delay.isNegative()) {
            throw new IllegalArgumentException("A latency cannot be negative: " + delay);
        }
        return change(f -> f.with(direction, new Flow(delay.toNanos(), f.of(direction).bytesPerSecond(),
                f.of(direction).held())));
    }

    /** The same {@code delay} in both directions: a round trip gains twice {@code delay}. */
    public FaultProxy latency(Duration delay) {
        latency(Direction.TO_TARGET, delay);
        return latency(Direction.TO_CLIENT, delay);
    }

    /**
     * Forwards at most {@code bytesPerSecond} going {@code direction}; 0 for no limit.
     *
     * @return this proxy
     * @throws IllegalArgumentException if {@code bytesPerSecond} is negative
     */
    public FaultProxy bandwidth(Direction direction, long bytesPerSecond) {
        Objects.requireNonNull(direction, "direction");
        if (bytesPerSecond < 0) {
            throw new IllegalArgumentException("A bandwidth cannot be negative: " + bytesPerSecond);
        }
        return change(f -> f.with(direction, new Flow(f.of(direction).latencyNanos(), bytesPerSecond,
                f.of(direction).held())));
    }

    /** The same limit in both directions; 0 for none. */
    public FaultProxy bandwidth(long bytesPerSecond) {
        bandwidth(Direction.TO_TARGET, bytesPerSecond);
        return bandwidth(Direction.TO_CLIENT, bytesPerSecond);
    }

    /**
     * Forwards nothing in either direction until {@link #normal()} (or {@link #halfOpen}): bytes and closes are
     * held, connections stay open, new ones are accepted. Latency and bandwidth settings are kept.
     *
     * @return this proxy
     */
    public FaultProxy blackHole() {
        return change(f -> new Faults(held(f.toTarget(), true), held(f.toClient(), true)));
    }

    /**
     * Holds {@code silent} as {@link #blackHole()} does and lets the other direction flow: with
     * {@link Direction#TO_CLIENT} the target keeps receiving what clients send and its answers stay away.
     *
     * @return this proxy
     */
    public FaultProxy halfOpen(Direction silent) {
        Objects.requireNonNull(silent, "silent");
        return change(f -> f.with(silent, held(f.of(silent), true))
                .with(other(silent), held(f.of(other(silent)), false)));
    }

    /**
     * Lifts every fault: no latency, no bandwidth limit, nothing held. What was held flows at once, in order.
     *
     * @return this proxy
     */
    public FaultProxy normal() {
        return change(f -> new Faults(Flow.NORMAL, Flow.NORMAL));
    }

    /**
     * Resets every connection open now on both sides: {@code SO_LINGER} 0 and close, so that the client and the
     * target get a TCP RST ("connection reset by peer"). What they held is dropped. Later connections are not
     * affected.
     *
     * @return how many connections were reset
     */
    public int reset() {
        int n = 0;
        for (Connection c : List.copyOf(connections)) {
            if (c.reset()) {
                n++;
            }
        }
        return n;
    }

    /**
     * Half-closes every connection open now towards its client: the client reads end-of-stream
     * ({@code shutdownOutput}) while what it sends is still forwarded to the target, whose answers from then on
     * are dropped. Later connections are not affected.
     *
     * @return how many connections were half-closed
     */
    public int closeTowardsClients() {
        int n = 0;
        for (Connection c : List.copyOf(connections)) {
            if (c.closeTowardsClient()) {
                n++;
            }
        }
        return n;
    }

    /** How many connections are open now (accepted and neither closed nor reset). */
    public int openConnections() {
        return connections.size();
    }

    /** How many connections the proxy has accepted since it started. */
    public long acceptedConnections() {
        return accepted.get();
    }

    /** How many bytes the proxy has forwarded going {@code direction}, over all connections. */
    public long forwardedBytes(Direction direction) {
        return forwarded.get(Objects.requireNonNull(direction, "direction")).sum();
    }

    /** Stops accepting, closes every connection (dropping what they held) and ends the proxy's threads. */
    @Override
    public void close() {
        closed = true;
        closeQuietly(listener);
        for (Connection c : List.copyOf(connections)) {
            c.close();
        }
    }

    @Override
    public String toString() {
        Faults f = faults;
        return "FaultProxy[" + host() + ":" + port() + " -> " + target.getHostString() + ":" + target.getPort()
                + ", to target " + describe(f.toTarget()) + ", to client " + describe(f.toClient()) + ", "
                + openConnections() + " open]";
    }

    private static String describe(Flow flow) {
        if (flow.equals(Flow.NORMAL)) {
            return "normal";
        }
        List<String> parts = new ArrayList<>();
        if (flow.held()) {
            parts.add("held");
        }
        if (flow.latencyNanos() > 0) {
            parts.add("latency " + TimeUnit.NANOSECONDS.toMillis(flow.latencyNanos()) + "ms");
        }
        if (flow.bytesPerSecond() > 0) {
            parts.add(flow.bytesPerSecond() + " B/s");
        }
        return String.join(" ", parts);
    }

    private static Flow held(Flow flow, boolean held) {
        return new Flow(flow.latencyNanos(), flow.bytesPerSecond(), held);
    }

    private static Direction other(Direction d) {
        return d == Direction.TO_TARGET ? Direction.TO_CLIENT : Direction.TO_TARGET;
    }

    private FaultProxy change(UnaryOperator<Faults> change) {
        synchronized (settings) {
            faults = change.apply(faults);
        }
        // Every waiting writer looks at the new settings: a held direction may flow, a delay may have shrunk.
        for (Connection c : List.copyOf(connections)) {
            c.wake();
        }
        return this;
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                // Out of file descriptors, say: do not spin; the listener may accept again shortly.
                try {
                    Thread.sleep(10);
                } catch (InterruptedException interrupted) {
                    return;
                }
                continue;
            }
            if (closed) {
                // The listener closes only once this thread leaves accept: what it accepted meanwhile goes.
                closeQuietly(client);
                return;
            }
            accepted.incrementAndGet();
            long number = accepted.get();
            Thread setup = new Thread(() -> open(client, number), "fault-proxy-" + port() + "-c" + number + "-connect");
            setup.setDaemon(true);
            setup.start();
        }
    }

    /** Connects to the target for {@code client}, then forwards; runs on the connection's first thread. */
    private void open(Socket client, long number) {
        Socket server = new Socket();
        try {
            client.setTcpNoDelay(true);
            server.setTcpNoDelay(true);
            server.connect(new InetSocketAddress(target.getHostString(), target.getPort()), CONNECT_TIMEOUT_MILLIS);
        } catch (IOException e) {
            resetQuietly(client);
            closeQuietly(server);
            return;
        }
        Connection c = new Connection(client, server, "fault-proxy-" + port() + "-c" + number);
        connections.add(c);
        if (closed) {
            c.close();
            return;
        }
        c.start();
    }

    /** One accepted connection and its connection to the target, with a {@link Pipe} each way. */
    private final class Connection {
        private final Socket client;
        private final Socket server;
        private final Pipe toTarget;
        private final Pipe toClient;
        private final String name;
        private final ReentrantLock lock = new ReentrantLock();
        private boolean ended;
        private int finishedWriters;

        Connection(Socket client, Socket server, String name) {
            this.client = client;
            this.server = server;
            this.name = name;
            this.toTarget = new Pipe(this, Direction.TO_TARGET, client, server);
            this.toClient = new Pipe(this, Direction.TO_CLIENT, server, client);
        }

        void start() {
            for (Pipe p : List.of(toTarget, toClient)) {
                String way = name + "-" + p.direction.name().toLowerCase(Locale.ROOT);
                Thread reader = new Thread(p::readLoop, way + "-read");
                Thread writer = new Thread(p::writeLoop, way + "-write");
                reader.setDaemon(true);
                writer.setDaemon(true);
                reader.start();
                writer.start();
            }
        }

        void wake() {
            toTarget.wake();
            toClient.wake();
        }

        /** A writer passed on its side's end-of-stream; the connection ends once both did. */
        void writerFinished() {
            boolean both;
            lock.lock();
            try {
                both = ++finishedWriters == 2;
            } finally {
                lock.unlock();
            }
            if (both) {
                close();
            }
        }

        boolean reset() {
            if (!end()) {
                return false;
            }
            resetQuietly(client);
            resetQuietly(server);
            return true;
        }

        void close() {
            if (end()) {
                closeQuietly(client);
                closeQuietly(server);
            }
        }

        boolean closeTowardsClient() {
            lock.lock();
            try {
                if (ended) {
                    return false;
                }
            } finally {
                lock.unlock();
            }
            return toClient.finishNow();
        }

        /** Marks the connection ended, once; true for the call that did. */
        private boolean end() {
            lock.lock();
            try {
                if (ended) {
                    return false;
                }
                ended = true;
            } finally {
                lock.unlock();
            }
            connections.remove(this);
            toTarget.stop();
            toClient.stop();
            return true;
        }
    }

    /** A chunk of bytes read, and when. */
    private static final class Chunk {
        final long readAt;
        final byte[] bytes;
        int offset;

        Chunk(long readAt, byte[] bytes) {
            this.readAt = readAt;
            this.bytes = bytes;
        }

        int remaining() {
            return bytes.length - offset;
        }
    }

    /**
     * One direction of a connection: a reader thread takes bytes from one socket into a bounded queue as they come;
     * a writer thread passes them on to the other socket when the direction's settings allow (not held, delay over,
     * bandwidth left), and then passes on the end-of-stream or reset that came after them.
     */
    private final class Pipe {
        private final Connection connection;
        private final Direction direction;
        private final Socket from;
        private final Socket to;
        private final ReentrantLock lock = new ReentrantLock();
        private final Condition changed = lock.newCondition();
        private final ArrayDeque<Chunk> queue = new ArrayDeque<>();
        private int queuedBytes;
        /** The reader saw end-of-stream (after the queued bytes). */
        private boolean eof;
        /** The reader's socket was reset or failed (after the queued bytes). */
        private boolean failed;
        /** The connection ended: both threads stop. */
        private boolean stopped;
        /** {@link #finishNow()} shut this direction: what is read is dropped. */
        private boolean dropping;
        /** The writer passed on the end of this direction (or half-closed it for {@link #finishNow()}). */
        private boolean writerDone;
        /** The earliest time the next slice may go under a bandwidth limit. */
        private long nextSliceAt = Long.MIN_VALUE;

        Pipe(Connection connection, Direction direction, Socket from, Socket to) {
            this.connection = connection;
            this.direction = direction;
            this.from = from;
            this.to = to;
        }

        void wake() {
            lock.lock();
            try {
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }

        void stop() {
            lock.lock();
            try {
                stopped = true;
                queue.clear();
                queuedBytes = 0;
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }

        /**
         * Ends this direction towards its destination now: what it holds and reads from then on is dropped, and its
         * writer half-closes the destination; false if the direction had ended already.
         */
        boolean finishNow() {
            lock.lock();
            try {
                if (stopped || dropping || writerDone) {
                    return false;
                }
                dropping = true;
                queue.clear();
                queuedBytes = 0;
                changed.signalAll();
                return true;
            } finally {
                lock.unlock();
            }
        }

        void readLoop() {
            byte[] buffer = new byte[READ_BUFFER];
            InputStream in;
            try {
                in = from.getInputStream();
            } catch (IOException e) {
                markEnd(true);
                return;
            }
            while (true) {
                int n;
                try {
                    n = in.read(buffer);
                } catch (IOException e) {
                    markEnd(true);
                    return;
                }
                if (n < 0) {
                    markEnd(false);
                    return;
                }
                long now = System.nanoTime();
                lock.lock();
                try {
                    while (queuedBytes >= HELD_BYTES_PER_DIRECTION && !stopped && !dropping) {
                        changed.awaitUninterruptibly();
                    }
                    if (stopped) {
                        return;
                    }
                    if (dropping) {
                        continue;
                    }
                    byte[] bytes = new byte[n];
                    System.arraycopy(buffer, 0, bytes, 0, n);
                    queue.add(new Chunk(now, bytes));
                    queuedBytes += n;
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
            }
        }

        private void markEnd(boolean reset) {
            lock.lock();
            try {
                if (reset) {
                    failed = true;
                } else {
                    eof = true;
                }
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }

        void writeLoop() {
            OutputStream out;
            try {
                out = to.getOutputStream();
            } catch (IOException e) {
                connection.reset();
                return;
            }
            while (true) {
                byte[] slice = null;
                int offset = 0;
                int length = 0;
                boolean halfClose = false;
                lock.lock();
                try {
                    while (true) {
                        if (stopped) {
                            return;
                        }
                        if (dropping) {
                            halfClose = true;
                            break;
                        }
                        Flow flow = faults.of(direction);
                        if (flow.held()) {
                            changed.awaitUninterruptibly();
                            continue;
                        }
                        Chunk head = queue.peek();
                        if (head == null) {
                            if (failed || eof) {
                                // The end comes after the bytes before it, and under the same faults.
                                break;
                            }
                            changed.awaitUninterruptibly();
                            continue;
                        }
                        long now = System.nanoTime();
                        long due = head.readAt + flow.latencyNanos();
                        if (due - now > 0) {
                            awaitNanos(due - now);
                            continue;
                        }
                        length = head.remaining();
                        if (flow.bytesPerSecond() > 0) {
                            if (nextSliceAt != Long.MIN_VALUE && nextSliceAt - now > 0) {
                                awaitNanos(nextSliceAt - now);
                                continue;
                            }
                            length = (int) Math.min(length, Math.max(1, flow.bytesPerSecond() / SLICES_PER_SECOND));
                            long start = nextSliceAt == Long.MIN_VALUE || now - nextSliceAt > 0 ? now : nextSliceAt;
                            nextSliceAt = start + length * TimeUnit.SECONDS.toNanos(1) / flow.bytesPerSecond();
                        } else {
                            nextSliceAt = Long.MIN_VALUE;
                        }
                        slice = head.bytes;
                        offset = head.offset;
                        head.offset += length;
                        if (head.remaining() == 0) {
                            queue.poll();
                        }
                        queuedBytes -= length;
                        changed.signalAll();
                        break;
                    }
                } finally {
                    lock.unlock();
                }
                if (halfClose) {
                    passOnEnd(false);
                    return;
                }
                if (slice == null) {
                    boolean reset;
                    lock.lock();
                    try {
                        reset = failed;
                    } finally {
                        lock.unlock();
                    }
                    passOnEnd(reset);
                    return;
                }
                try {
                    out.write(slice, offset, length);
                    out.flush();
                    forwarded.get(direction).add(length);
                } catch (IOException e) {
                    // The destination is gone: reset the other side too, as a router would.
                    connection.reset();
                    return;
                }
            }
        }

        private void awaitNanos(long nanos) {
            try {
                changed.awaitNanos(nanos);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        /** Passes on the end of what the reader's side sent: a half-close, or a reset. */
        private void passOnEnd(boolean reset) {
            if (reset) {
                connection.reset();
                return;
            }
            lock.lock();
            try {
                writerDone = true;
            } finally {
                lock.unlock();
            }
            try {
                to.shutdownOutput();
            } catch (IOException e) {
                connection.reset();
                return;
            }
            connection.writerFinished();
        }
    }

    private static int defaultPort(String url) {
        String scheme = url.startsWith("jdbc:") ? url.substring(5) : url;
        int colon = scheme.indexOf(':');
        scheme = colon < 0 ? "" : scheme.substring(0, colon).toLowerCase(Locale.ROOT);
        return switch (scheme) {
            case "redis" -> 6379;
            case "rediss" -> 6380;
            case "postgresql" -> 5432;
            case "mariadb", "mysql" -> 3306;
            case "amqp" -> 5672;
            case "amqps" -> 5671;
            default -> throw new IllegalArgumentException("The URL " + url + " names no port, and the scheme '"
                    + scheme + "' has none known");
        };
    }

    /** Where a URL's authority ({@code //user@host:port}) is, and its parts. */
    private record Authority(int start, int end, String userInfo, String hostPort) {
        static Authority of(String url) {
            Objects.requireNonNull(url, "url");
            int slashes = url.indexOf("//");
            if (slashes < 0) {
                throw new IllegalArgumentException("The URL " + url + " has no //host:port");
            }
            int start = slashes + 2;
            int end = start;
            while (end < url.length() && "/?#".indexOf(url.charAt(end)) < 0) {
                end++;
            }
            String authority = url.substring(start, end);
            int at = authority.lastIndexOf('@');
            return new Authority(start, end, at < 0 ? "" : authority.substring(0, at + 1), authority.substring(at + 1));
        }
    }

    private static void resetQuietly(Socket socket) {
        try {
            socket.setSoLinger(true, 0);
        } catch (SocketException e) {
            // Already closed: nothing to reset.
        }
        closeQuietly(socket);
    }

    private static void closeQuietly(AutoCloseable closeable) {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        } catch (Exception e) {
            // Closing is best effort: the socket is gone either way.
        }
    }
}
