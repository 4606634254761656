package dev.idem.runtime.plugin;

import dev.idem.spi.Backlog;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.DeliveryListener;
import dev.idem.spi.OutboundMessage;
import dev.idem.spi.Subscription;
import dev.idem.spi.SubscriptionRequest;
import java.util.Optional;

/**
 * A broker adapter whose calls, and those on its subscriptions, run in its plugin's context. The listener is
 * the runtime's and is called from the adapter's threads as it is. Deliveries are not wrapped, which would
 * cost an object per message: the pipeline's workers settle them with the handler's loader as context.
 */
final class BoundBrokerAdapter implements BrokerAdapter, PluginContext.Bound {

    private final BrokerAdapter adapter;
    private final ClassLoader loader;

    BoundBrokerAdapter(BrokerAdapter adapter, ClassLoader loader) {
        this.adapter = adapter;
        this.loader = loader;
    }

    @Override
    public Object plugin() {
        return adapter;
    }

    @Override
    public Subscription subscribe(SubscriptionRequest request, DeliveryListener listener) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return new BoundSubscription(adapter.subscribe(request, listener), loader);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public void publish(String destination, OutboundMessage message) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            adapter.publish(destination, message);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public void checkHealth() {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            adapter.checkHealth();
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public String defaultDeadLetterDestination(String source) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return adapter.defaultDeadLetterDestination(source);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public Subscription subscribeDeadLetters(SubscriptionRequest request, DeliveryListener listener) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return new BoundSubscription(adapter.subscribeDeadLetters(request, listener), loader);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public Optional<Backlog> backlog(SubscriptionRequest request) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return adapter.backlog(request);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public void close() {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            adapter.close();
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public String toString() {
        return adapter.toString();
    }

    private static final class BoundSubscription implements Subscription, PluginContext.Bound {

        private final Subscription subscription;
        private final ClassLoader loader;

        BoundSubscription(Subscription subscription, ClassLoader loader) {
            this.subscription = subscription;
            this.loader = loader;
        }

        @Override
        public Object plugin() {
            return subscription;
        }

        @Override
        public void stop() {
            ClassLoader previous = PluginContext.enter(loader);
            try {
                subscription.stop();
            } finally {
                PluginContext.leave(previous);
            }
        }

        @Override
        public void close() {
            ClassLoader previous = PluginContext.enter(loader);
            try {
                subscription.close();
            } finally {
                PluginContext.leave(previous);
            }
        }

        @Override
        public java.util.Map<String, Long> backlog() {
            ClassLoader previous = PluginContext.enter(loader);
            try {
                return subscription.backlog();
            } finally {
                PluginContext.leave(previous);
            }
        }

        @Override
        public String toString() {
            return subscription.toString();
        }
    }
}
