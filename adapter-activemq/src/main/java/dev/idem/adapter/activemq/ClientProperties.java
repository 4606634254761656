package dev.idem.adapter.activemq;

import dev.idem.spi.ConfigProblem;
import java.util.List;
import java.util.Map;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.util.IntrospectionSupport;

/**
 * Applies {@code broker.activemq.client.*} to an {@link ActiveMQConnectionFactory}: each entry is a bean
 * property of the factory ({@code sendTimeout}), or of one of its policies ({@code redeliveryPolicy.*},
 * {@code blobTransferPolicy.*}). Stateless.
 */
final class ClientProperties {

    /** Settings the adapter owns, with where to set them instead. */
    private static final Map<String, String> OWNED = Map.of(
            "prefetchPolicy", "prefetch (the adapter bounds each consumer's prefetch)",
            "brokerURL", "url",
            "userName", "username",
            "password", "password",
            "useAsyncSend", "nothing: publishing and dead-lettering must be confirmed by the broker",
            "alwaysSyncSend", "nothing: publishing and dead-lettering must be confirmed by the broker",
            "clientID", "nothing: topic subscriptions set their own client id",
            "checkForDuplicates", "nothing: the client's audit would dead-letter legitimate redeliveries; the "
                    + "runtime's store recognises duplicates");

    private ClientProperties() {
    }

    /**
     * Sets each entry on the factory; adds to {@code problems} every entry that is not a property of the factory
     * or cannot take its value.
     *
     * @param path the config path ({@code broker.activemq}) for messages
     */
    static void apply(ActiveMQConnectionFactory factory, Map<String, String> client, String path,
            List<ConfigProblem> problems) {
        for (Map.Entry<String, String> e : client.entrySet()) {
            String name = e.getKey();
            String where = path + ".client." + name;
            String root = name.contains(".") ? name.substring(0, name.indexOf('.')) : name;
            if (OWNED.containsKey(root)) {
                problems.add(new ConfigProblem(where, where + " is set by the adapter; use " + OWNED.get(root)));
                continue;
            }
            Object target = factory;
            String property = name;
            if (name.startsWith("redeliveryPolicy.")) {
                target = factory.getRedeliveryPolicy();
                property = name.substring("redeliveryPolicy.".length());
            } else if (name.startsWith("blobTransferPolicy.")) {
                target = factory.getBlobTransferPolicy();
                property = name.substring("blobTransferPolicy.".length());
            }
            if (IntrospectionSupport.findSetterMethod(target.getClass(), property) == null) {
                problems.add(new ConfigProblem(where, "Unknown key " + where + ": not a property of "
                        + target.getClass().getSimpleName() + " (see the ActiveMQ connection factory's properties,"
                        + " e.g. sendTimeout, closeTimeout, optimizeAcknowledge,"
                        + " redeliveryPolicy.useExponentialBackOff)"));
            } else if (!IntrospectionSupport.setProperty(target, property, e.getValue())) {
                problems.add(ConfigProblem.invalid(where, e.getValue(), "the property "
                        + target.getClass().getSimpleName() + "." + property + " does not accept it"));
            }
        }
    }
}
