package dev.idem.adapter.rabbitmq;

import java.io.IOException;
import org.testcontainers.containers.Container;
import org.testcontainers.rabbitmq.RabbitMQContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * A RabbitMQ container for machines without a local broker; its own class, so that Testcontainers is loaded
 * only when a container is really needed. Testcontainers removes the container when the JVM exits.
 */
final class RabbitMqContainer {

    private static RabbitMQContainer container;

    private RabbitMqContainer() {
    }

    @SuppressWarnings("resource")
    static synchronized String start() {
        if (container == null) {
            RabbitMQContainer rabbit = new RabbitMQContainer(DockerImageName.parse("rabbitmq:3.13"));
            rabbit.start();
            container = rabbit;
        }
        return "amqp://guest:guest@" + container.getHost() + ":" + container.getAmqpPort() + "/%2F";
    }

    static synchronized boolean running() {
        return container != null;
    }

    /** Runs {@code rabbitmqctl} inside the container; its standard output. */
    static synchronized String rabbitmqctl(String... args) throws IOException, InterruptedException {
        String[] command = new String[args.length + 1];
        command[0] = "rabbitmqctl";
        System.arraycopy(args, 0, command, 1, args.length);
        Container.ExecResult result = container.execInContainer(command);
        if (result.getExitCode() != 0) {
            throw new IOException("rabbitmqctl failed in the container: " + result.getStderr());
        }
        return result.getStdout();
    }
}
