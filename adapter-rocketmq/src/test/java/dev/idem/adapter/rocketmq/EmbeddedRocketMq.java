package dev.idem.adapter.rocketmq;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.namesrv.NamesrvConfig;
import org.apache.rocketmq.namesrv.NamesrvController;
import org.apache.rocketmq.remoting.common.TlsMode;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.netty.TlsSystemConfig;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.GetMessageStatus;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.exception.ConsumeQueueException;

/**
 * A RocketMQ name server and one broker inside the test JVM (RocketMQ's own {@code NamesrvController} and
 * {@code BrokerController}), on ephemeral ports of 127.0.0.1, with small mapped files in a temporary directory. It
 * starts in two to three seconds but takes 10 to 20 seconds to shut down, so suites share one: {@link #shared()}
 * starts it on first use and is never shut down; a JVM shutdown hook only deletes its data directory (the JVM's end
 * stops its threads and closes its sockets and mapped files).
 *
 * <p>Two things a broker in a JVM of its own never meets: {@code rocketmq.remoting.version} must be set before the
 * first remoting command is built (the broker's startup script sets it; a command built without it carries version 0,
 * which the name server treats as a client too old for the current route format), and the broker's first registration
 * with the name server, sent while the name server's channel is still coming up, is sometimes lost, so
 * {@link #start()} waits until the name server knows the broker and registers it again if not.
 *
 * <p>Topics are created on the broker directly ({@link #createTopic}) and pushed to the name server at once; a topic
 * the adapter sends to that does not exist is created by the broker on first use ({@code autoCreateTopicEnable}),
 * with {@value #AUTO_CREATED_QUEUES} queues. SQL92 filters are enabled ({@code enablePropertyFilter}).
 *
 * <p>Test support, shared with the distribution's fault ITs and the end-to-end benchmark in {@code bench} through
 * this module's test JAR. Thread-safe.
 */
public final class EmbeddedRocketMq implements AutoCloseable {

    /** The queues of a topic the broker creates on first use. */
    public static final int AUTO_CREATED_QUEUES = 4;
    private static final String CLUSTER = "idem-cluster";
    private static final String BROKER = "idem-broker";

    private static EmbeddedRocketMq shared;

    private final Path dir;
    private final NamesrvController namesrv;
    private final BrokerController broker;
    private final String nameServer;
    /** Sends what {@link #publish} is given; started on first use. */
    private DefaultMQProducer producer;
    /** The queue of the next message without a key. */
    private int nextQueue;

    private EmbeddedRocketMq(Path dir, NamesrvController namesrv, BrokerController broker, String nameServer) {
        this.dir = dir;
        this.namesrv = namesrv;
        this.broker = broker;
        this.nameServer = nameServer;
    }

    /**
     * Runs a name server and a broker in a JVM of their own, for tests whose JVM cannot hold RocketMQ's classes (the
     * distribution's fault ITs, on another Netty). Prints {@code name-server <host:port>}, then answers one command
     * at a time on standard input, each with {@code ok} (the last line of an answer) or {@code error <why>}:
     * <ul>
     *   <li>{@code create-topic <topic> <queues>}, {@code delete-topic <topic>};</li>
     *   <li>{@code publish <topic> <n>}, followed by {@code n} lines, one message each ({@link #encode}): sends them
     *       in that order (a message with a key to the queue its key hashes to, {@link #publish}), and answers
     *       {@code ok} once the broker stored every one;</li>
     *   <li>{@code messages <topic>}: a line {@code m <payload> <name>:<value>...} per message the topic holds (all
     *       its properties, those of the client and the broker included; queue after queue, in offset order), then
     *       {@code ok} (nothing for a topic that does not exist);</li>
     *   <li>{@code backlog <group> <topic>}: {@code ok <n>}, the messages after the group's committed offsets;</li>
     *   <li>{@code exit}.</li>
     * </ul>
     * Payloads, names and values travel in URL-safe Base64 without padding. Standard input closing (the test JVM died)
     * ends it too.
     */
    public static void main(String[] args) throws IOException {
        EmbeddedRocketMq rocketMq = start();
        PrintStream out = System.out;
        out.println("name-server " + rocketMq.nameServer());
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.equals("exit")) {
            String[] words = line.trim().split(" ");
            try {
                switch (words[0]) {
                    case "create-topic" -> rocketMq.createTopic(words[1], Integer.parseInt(words[2]));
                    case "delete-topic" -> rocketMq.deleteTopic(words[1]);
                    case "publish" -> {
                        int n = Integer.parseInt(words[2]);
                        List<Outgoing> messages = new ArrayList<>(n);
                        for (int i = 0; i < n; i++) {
                            String m = in.readLine();
                            if (m == null) {
                                throw new IllegalArgumentException("standard input ended after " + i + " of " + n
                                        + " messages");
                            }
                            messages.add(decode(m));
                        }
                        rocketMq.publish(words[1], messages);
                    }
                    case "messages" -> {
                        for (MessageExt m : rocketMq.messages(words[1])) {
                            out.println(encode(m.getBody(), m.getProperties()));
                        }
                    }
                    case "backlog" -> {
                        out.println("ok " + rocketMq.backlog(words[1], words[2]));
                        out.flush();
                        continue;
                    }
                    default -> throw new IllegalArgumentException("unknown command: " + line);
                }
                out.println("ok");
            } catch (RuntimeException e) {
                out.println("error " + e.toString().replace('\n', ' '));
            }
            out.flush();
        }
        rocketMq.close();
        System.exit(0);
    }

    /**
     * A message to publish: its key ({@code KEYS}, and the queue: the key's hash picks it), or {@code null} for the
     * next queue in turn; its body; its user properties.
     */
    public record Outgoing(String key, byte[] payload, Map<String, String> properties) {
    }

    private static final Base64.Encoder BASE64 = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder UNBASE64 = Base64.getUrlDecoder();

    /** {@code m <payload> <name>:<value>...}, every part in URL-safe Base64 without padding. */
    public static String encode(byte[] payload, Map<String, String> properties) {
        StringBuilder line = new StringBuilder("m ").append(BASE64.encodeToString(payload == null ? new byte[0]
                : payload));
        properties.forEach((name, value) -> line.append(' ').append(text(name)).append(':').append(text(value)));
        return line.toString();
    }

    /**
     * A message line of {@code publish}: {@code <key> <payload> <name>:<value>...}, every part in URL-safe Base64
     * without padding, the key {@code -} for none.
     */
    static Outgoing decode(String line) {
        String[] parts = line.split(" ");
        if (parts.length < 2) {
            throw new IllegalArgumentException("a message line is <key> <payload> <name>:<value>...: " + line);
        }
        Map<String, String> properties = new LinkedHashMap<>();
        for (int i = 2; i < parts.length; i++) {
            int colon = parts[i].indexOf(':');
            properties.put(untext(parts[i].substring(0, colon)), untext(parts[i].substring(colon + 1)));
        }
        return new Outgoing(parts[0].equals("-") ? null : untext(parts[0]), UNBASE64.decode(parts[1]), properties);
    }

    private static String text(String s) {
        return BASE64.encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String untext(String s) {
        return new String(UNBASE64.decode(s), StandardCharsets.UTF_8);
    }

    /** The name server and broker of this JVM, started on first call. */
    public static synchronized EmbeddedRocketMq shared() {
        if (shared == null) {
            EmbeddedRocketMq rocketMq = start();
            Runtime.getRuntime().addShutdownHook(new Thread(rocketMq::deleteData, "embedded-rocketmq-cleanup"));
            shared = rocketMq;
        }
        return shared;
    }

    /** Starts a name server and a broker on a fresh data directory; the caller closes them. */
    public static EmbeddedRocketMq start() {
        // Before the first RemotingCommand of this JVM: the broker's startup script sets it too.
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, Integer.toString(MQVersion.CURRENT_VERSION));
        // Plain TCP only (nothing here connects with TLS): in the default mode, permissive, each of the three servers
        // (the name server's, the broker's two) first generates a self-signed certificate, about half the start.
        TlsSystemConfig.tlsMode = TlsMode.DISABLED;
        Path dir;
        try {
            dir = Files.createTempDirectory("idem-rocketmq-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        NamesrvController namesrv = startNamesrv(dir);
        String nameServer = "127.0.0.1:" + namesrv.getRemotingServer().localListenPort();
        BrokerController broker;
        try {
            broker = startBroker(dir, nameServer);
        } catch (RuntimeException e) {
            namesrv.shutdown();
            throw e;
        }
        EmbeddedRocketMq rocketMq = new EmbeddedRocketMq(dir, namesrv, broker, nameServer);
        rocketMq.awaitRegistered();
        return rocketMq;
    }

    private static NamesrvController startNamesrv(Path dir) {
        NamesrvConfig config = new NamesrvConfig();
        config.setKvConfigPath(dir.resolve("namesrv/kvConfig.json").toString());
        config.setConfigStorePath(dir.resolve("namesrv/namesrv.properties").toString());
        NettyServerConfig server = new NettyServerConfig();
        server.setListenPort(0);
        server.setServerWorkerThreads(2);
        NamesrvController namesrv = new NamesrvController(config, server);
        try {
            if (!namesrv.initialize()) {
                throw new IllegalStateException("The embedded RocketMQ name server did not initialize");
            }
            namesrv.start();
        } catch (Exception e) {
            namesrv.shutdown();
            throw new IllegalStateException("Starting the embedded RocketMQ name server failed", e);
        }
        return namesrv;
    }

    private static BrokerController startBroker(Path dir, String nameServer) {
        BrokerConfig config = new BrokerConfig();
        config.setBrokerName(BROKER);
        config.setBrokerClusterName(CLUSTER);
        config.setBrokerIP1("127.0.0.1");
        config.setNamesrvAddr(nameServer);
        config.setAutoCreateTopicEnable(true);
        config.setDefaultTopicQueueNums(AUTO_CREATED_QUEUES);
        config.setEnablePropertyFilter(true);
        config.setEnableCalcFilterBitMap(true);
        // Small thread pools: the test JVM shares two cores with everything else.
        config.setSendMessageThreadPoolNums(2);
        config.setPullMessageThreadPoolNums(4);
        config.setAdminBrokerThreadPoolNums(2);
        config.setProcessReplyMessageThreadPoolNums(2);
        config.setQueryMessageThreadPoolNums(2);
        config.setLoadBalancePollNameServerInterval(500);
        // A production broker sheds sends that waited 200 ms in its queue ("[TIMEOUT_CLEAN_QUEUE] broker busy"): on
        // a machine busy with other suites that happens to a test's publish. This one waits instead.
        config.setBrokerFastFailureEnable(false);
        config.setWaitTimeMillsInSendQueue(60_000);
        MessageStoreConfig store = new MessageStoreConfig();
        store.setStorePathRootDir(dir.resolve("store").toString());
        store.setStorePathCommitLog(dir.resolve("store/commitlog").toString());
        store.setMappedFileSizeCommitLog(64 * 1024 * 1024);
        store.setMappedFileSizeConsumeQueue(30_000 * 20);
        store.setMaxIndexNum(100_000);
        store.setMaxHashSlotNum(50_000);
        store.setHaListenPort(0);
        // Nor does it refuse a send because a write held the commit log for a second ("[PC_SYNCHRONIZED] broker busy").
        store.setOsPageCacheBusyTimeOutMills(60_000);
        // The timer wheel's files are about 120 MB; delay levels then go through the schedule service.
        store.setTimerWheelEnable(false);
        store.setMaxTransferCountOnMessageInMemory(1024);
        store.setMaxTransferCountOnMessageInDisk(1024);
        NettyServerConfig server = new NettyServerConfig();
        server.setListenPort(0);
        server.setServerWorkerThreads(4);
        BrokerController broker = new BrokerController(config, server, new NettyClientConfig(), store);
        try {
            if (!broker.initialize()) {
                throw new IllegalStateException("The embedded RocketMQ broker did not initialize");
            }
            broker.start();
        } catch (Exception e) {
            broker.shutdown();
            throw new IllegalStateException("Starting the embedded RocketMQ broker failed", e);
        }
        return broker;
    }

    /** Waits until the name server routes to the broker, registering it again if its first registration was lost. */
    private void awaitRegistered() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        long registerAgainAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
        while (!registered()) {
            if (System.nanoTime() - deadline > 0) {
                close();
                throw new IllegalStateException("The embedded RocketMQ broker did not register with its name server"
                        + " within 30s");
            }
            if (System.nanoTime() - registerAgainAt > 0) {
                broker.registerBrokerAll(true, false, true);
                registerAgainAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            }
            sleep(20);
        }
    }

    private boolean registered() {
        ClusterInfo info = namesrv.getRouteInfoManager().getAllClusterInfo();
        return info.getBrokerAddrTable().containsKey(BROKER);
    }

    /** {@code 127.0.0.1:port}, for {@code broker.rocketmq.name-server}. */
    public String nameServer() {
        return nameServer;
    }

    /** The broker's name, which message queues carry. */
    public String brokerName() {
        return BROKER;
    }

    /** The broker itself, owned by this instance: do not shut it down. */
    public BrokerController broker() {
        return broker;
    }

    /** Creates a topic of {@code queues} read and write queues and publishes its route to the name server. */
    public void createTopic(String topic, int queues) {
        TopicConfig config = new TopicConfig(topic, queues, queues, PermName.PERM_READ | PermName.PERM_WRITE);
        broker.getTopicConfigManager().updateTopicConfig(config);
        broker.registerBrokerAll(false, false, true);
    }

    /** Deletes a topic and its messages if it exists. */
    public void deleteTopic(String topic) {
        if (broker.getTopicConfigManager().selectTopicConfig(topic) == null) {
            return;
        }
        broker.getTopicConfigManager().deleteTopicConfig(topic);
        broker.getMessageStore().deleteTopics(Set.of(topic));
        broker.registerBrokerAll(false, false, true);
    }

    /** The offset a consumer group committed for one queue of a topic, or {@code -1} without commit. */
    public long committed(String group, String topic, int queueId) {
        return broker.getConsumerOffsetManager().queryOffset(group, topic, queueId);
    }

    /** The offset after the last message of one queue of a topic. */
    public long maxOffset(String topic, int queueId) {
        try {
            return broker.getMessageStore().getMaxOffsetInQueue(topic, queueId);
        } catch (ConsumeQueueException e) {
            throw new IllegalStateException("Reading the end of " + topic + " queue " + queueId + " failed", e);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Sends {@code messages} to {@code topic}, which must exist, in list order, and returns once the broker stored
     * every one ({@code SEND_OK}): a message with a key goes to the queue the key's hash picks (as the adapter's
     * publish does), so one key's messages stay in order; one without to the next queue in turn. The messages of one
     * queue go in batches, in order.
     *
     * @throws IllegalStateException if the broker did not store one
     */
    public synchronized void publish(String topic, List<Outgoing> messages) {
        try {
            DefaultMQProducer p = producer();
            List<MessageQueue> queues = new ArrayList<>(p.fetchPublishMessageQueues(topic));
            queues.sort(Comparator.comparingInt(MessageQueue::getQueueId));
            Map<MessageQueue, List<Message>> perQueue = new LinkedHashMap<>();
            for (Outgoing o : messages) {
                Message m = new Message(topic, o.payload());
                if (o.key() != null) {
                    m.setKeys(o.key());
                }
                o.properties().forEach(m::putUserProperty);
                MessageQueue queue = queues.get(o.key() != null ? Math.floorMod(o.key().hashCode(), queues.size())
                        : nextQueue++ % queues.size());
                perQueue.computeIfAbsent(queue, q -> new ArrayList<>()).add(m);
            }
            for (Map.Entry<MessageQueue, List<Message>> e : perQueue.entrySet()) {
                List<Message> all = e.getValue();
                for (int from = 0; from < all.size(); from += 128) {
                    SendResult result = p.send(all.subList(from, Math.min(all.size(), from + 128)), e.getKey(),
                            10_000);
                    if (result.getSendStatus() != SendStatus.SEND_OK) {
                        throw new IllegalStateException("The broker answered " + result.getSendStatus()
                                + " to a batch for " + e.getKey());
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (Exception e) {
            throw new IllegalStateException("Publishing " + messages.size() + " message(s) to " + topic + " failed: "
                    + e, e);
        }
    }

    private DefaultMQProducer producer() throws MQClientException {
        if (producer == null) {
            DefaultMQProducer p = new DefaultMQProducer("idem-embedded-publisher");
            p.setNamesrvAddr(nameServer);
            p.setInstanceName("idem-embedded-publisher-" + ProcessHandle.current().pid());
            p.start();
            producer = p;
        }
        return producer;
    }

    /**
     * Every message {@code topic} holds, read from the broker's store (no consumer group moves): queue after queue,
     * in offset order; none for a topic that does not exist.
     */
    public List<MessageExt> messages(String topic) {
        TopicConfig config = broker.getTopicConfigManager().selectTopicConfig(topic);
        List<MessageExt> messages = new ArrayList<>();
        if (config == null) {
            return messages;
        }
        for (int queue = 0; queue < config.getWriteQueueNums(); queue++) {
            long offset = broker.getMessageStore().getMinOffsetInQueue(topic, queue);
            long end = maxOffset(topic, queue);
            while (offset < end) {
                GetMessageResult result = broker.getMessageStore().getMessage("idem-embedded-reader", topic, queue,
                        offset, 256, null);
                try {
                    if (result == null || result.getStatus() != GetMessageStatus.FOUND) {
                        throw new IllegalStateException("Reading " + topic + " queue " + queue + " at " + offset
                                + " found " + (result == null ? "nothing" : result.getStatus()));
                    }
                    for (ByteBuffer buffer : result.getMessageBufferList()) {
                        messages.add(MessageDecoder.decode(buffer, true, true));
                    }
                    offset = result.getNextBeginOffset();
                } finally {
                    if (result != null) {
                        result.release();
                    }
                }
            }
        }
        return messages;
    }

    /**
     * The messages of {@code topic} after the offsets {@code group} committed, summed over its queues (a queue without
     * a commit counts from its first message, where a new group starts); 0 for a topic that does not exist.
     */
    public long backlog(String group, String topic) {
        TopicConfig config = broker.getTopicConfigManager().selectTopicConfig(topic);
        if (config == null) {
            return 0;
        }
        long backlog = 0;
        for (int queue = 0; queue < config.getWriteQueueNums(); queue++) {
            long committed = committed(group, topic, queue);
            long from = committed < 0 ? broker.getMessageStore().getMinOffsetInQueue(topic, queue) : committed;
            backlog += Math.max(0, maxOffset(topic, queue) - from);
        }
        return backlog;
    }

    @Override
    public void close() {
        if (producer != null) {
            producer.shutdown();
        }
        broker.shutdown();
        namesrv.shutdown();
        deleteData();
    }

    /** Deletes the data directory; files the running broker still maps stay readable to it until the JVM ends. */
    private void deleteData() {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind is harmless
        }
    }
}
