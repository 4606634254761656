package dev.idem.adapter.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.idem.spi.BrokerAdapter;
import dev.idem.testkit.ExternalService;
import dev.idem.testkit.TestPluginConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The shared RabbitMQ the suites run against ({@code IDEM_TEST_RABBITMQ_URL}, else 127.0.0.1:5672, else a
 * container when Docker is available; otherwise the suite is skipped, or fails under {@code CI=true}), and
 * what tests do to it besides the adapter: declare, inspect and delete queues, force-close connections.
 */
final class RabbitMqTestBroker {

    private static String url;
    private static Connection admin;

    private RabbitMqTestBroker() {
    }

    static synchronized String url() {
        if (url == null) {
            url = ExternalService.locate("RabbitMQ", "IDEM_TEST_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F",
                    "Start one with: rabbitmq-server -detached (as root), or point IDEM_TEST_RABBITMQ_URL at one.",
                    RabbitMqContainer::start);
        }
        return url;
    }

    /** The adapter's config with defaults, on the test broker, under a connection name of its own. */
    static TestPluginConfig config() {
        return TestPluginConfig.defaults("broker.rabbitmq", new RabbitMqAdapterProvider().configSpec())
                .with("uri", url())
                .with("connection-name", "idem-test-" + UUID.randomUUID().toString().substring(0, 8));
    }

    static BrokerAdapter adapter(TestPluginConfig config) {
        return new RabbitMqAdapterProvider().create(config);
    }

    static String uniqueQueue(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    private static synchronized Connection admin() {
        try {
            if (admin == null || !admin.isOpen()) {
                ConnectionFactory factory = new ConnectionFactory();
                factory.setUri(url());
                admin = factory.newConnection("idem-test-admin");
            }
            return admin;
        } catch (Exception e) {
            throw new IllegalStateException("Cannot open the admin connection to " + url(), e);
        }
    }

    interface ChannelWork<T> {
        T run(Channel channel) throws IOException;
    }

    static <T> T onChannel(ChannelWork<T> work) {
        try (Channel channel = admin().createChannel()) {
            return work.run(channel);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (TimeoutException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Declares a durable classic queue, as the adapter would. */
    static void declare(String queue) {
        onChannel(ch -> ch.queueDeclare(queue, true, false, false, null));
    }

    static void delete(String queue) {
        onChannel(ch -> ch.queueDelete(queue));
    }

    /** Messages ready in {@code queue} (not counting those delivered and unacknowledged). */
    static long ready(String queue) {
        return onChannel(ch -> ch.queueDeclarePassive(queue).getMessageCount());
    }

    /** Takes the next message of {@code queue} with basic.get, acked; null if none is ready. */
    static GetResponse get(String queue) {
        return onChannel(ch -> ch.basicGet(queue, true));
    }

    /** Publishes a plain message through the raw client, with a message-id property when given. */
    static void publishRaw(String queue, String messageId, Map<String, Object> headers, String body) {
        onChannel(ch -> {
            ch.confirmSelect();
            ch.basicPublish("", queue, new AMQP.BasicProperties.Builder().messageId(messageId)
                    .headers(headers).deliveryMode(2).build(), body.getBytes(StandardCharsets.UTF_8));
            try {
                ch.waitForConfirmsOrDie(10_000);
            } catch (InterruptedException | TimeoutException e) {
                throw new IOException(e);
            }
            return null;
        });
    }

    /**
     * Closes, from the server side, every connection whose client named it {@code name} (rabbitmqctl
     * close_connection), as a broker restart or a network failure would end it.
     *
     * @return how many were closed
     */
    static int closeConnectionsNamed(String name) throws IOException, InterruptedException {
        String listing = rabbitmqctl("list_connections", "pid", "client_properties", "-q", "--no-table-headers");
        List<String> pids = new ArrayList<>();
        for (String line : listing.split("\n")) {
            if (line.contains("{\"connection_name\",\"" + name + "\"}")) {
                pids.add(line.substring(0, line.indexOf('\t')));
            }
        }
        for (String pid : pids) {
            rabbitmqctl("close_connection", pid, "closed by an Idem test");
        }
        return pids.size();
    }

    private static String rabbitmqctl(String... args) throws IOException, InterruptedException {
        if (RabbitMqContainer.running()) {
            return RabbitMqContainer.rabbitmqctl(args);
        }
        List<String> command = new ArrayList<>();
        command.add("rabbitmqctl");
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(false).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new IOException("rabbitmqctl " + String.join(" ", args) + " failed (run the tests as a user that "
                    + "may use rabbitmqctl, e.g. root): " + err);
        }
        return out;
    }
}
