package dev.idem.runtime.internal.plugin;

import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.Subscription;
import dev.idem.spi.TransactionalDedupStore;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The wrapper that binds a broker adapter or a dedup store (an ID extractor has {@link BoundIdExtractor}) to its
 * plugin's context: a proxy that implements every {@code dev.idem.spi} interface the instance's class implements, so that
 * the runtime and the CLI still find optional capabilities ({@code TransactionalDedupStore},
 * {@code SequencedDedupStore}, {@code OutboxStore}, {@code InspectableDedupStore}, ...) with {@code instanceof}.
 * Each call enters the plugin's context and rethrows what the plugin threw. What a call hands back into the
 * plugin's hands is bound too: a {@link Subscription} it returns runs its calls in the plugin's context, and the
 * runtime's callbacks it gets (a transactional {@link TransactionalDedupStore.Work} or batch work, the members of a
 * group, the outbox relay's {@link OutboxStore.Publisher}) run in the caller's context when the plugin calls them. The
 * adapter's {@code DeliveryListener} is the runtime's and is called as it is; deliveries are not wrapped, which
 * would cost an object per message.
 */
final class PluginProxy implements InvocationHandler {

    private static final String SPI_PACKAGE = DedupStore.class.getPackageName();

    private final Object plugin;
    private final ClassLoader loader;

    private PluginProxy(Object plugin, ClassLoader loader) {
        this.plugin = plugin;
        this.loader = loader;
    }

    /** {@code plugin} as an instance of {@code type} whose every call runs in {@code loader}'s context. */
    static <T> T bind(Class<T> type, T plugin, ClassLoader loader) {
        Set<Class<?>> interfaces = new LinkedHashSet<>();
        interfaces.add(type);
        collectSpiInterfaces(plugin.getClass(), interfaces);
        interfaces.add(PluginContext.Bound.class);
        return type.cast(Proxy.newProxyInstance(PluginProxy.class.getClassLoader(),
                interfaces.toArray(new Class<?>[0]), new PluginProxy(plugin, loader)));
    }

    private static void collectSpiInterfaces(Class<?> type, Set<Class<?>> out) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            for (Class<?> i : c.getInterfaces()) {
                if (i.getPackageName().equals(SPI_PACKAGE)) {
                    out.add(i);
                }
                collectSpiInterfaces(i, out);
            }
        }
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        if (method.getDeclaringClass() == PluginContext.Bound.class) {
            return plugin;
        }
        if (method.getDeclaringClass() == Object.class) {
            return switch (method.getName()) {
                case "equals" -> proxy == args[0];
                case "hashCode" -> System.identityHashCode(proxy);
                default -> plugin.toString();
            };
        }
        ClassLoader caller = PluginContext.enter(loader);
        try {
            if (args != null) {
                for (int i = 0; i < args.length; i++) {
                    args[i] = inCaller(args[i], caller);
                }
            }
            Object result = method.invoke(plugin, args);
            return result instanceof Subscription subscription && !(result instanceof PluginContext.Bound)
                    ? bind(Subscription.class, subscription, loader) : result;
        } catch (InvocationTargetException e) {
            throw e.getCause();
        } finally {
            PluginContext.leave(caller);
        }
    }

    /** A callback the plugin makes (a transactional work, a relay's publisher) runs in the caller's context. */
    @SuppressWarnings("unchecked")
    private static Object inCaller(Object arg, ClassLoader caller) {
        if (arg instanceof TransactionalDedupStore.Work work) {
            return inCaller(work, caller);
        }
        if (arg instanceof TransactionalDedupStore.BatchWork work) {
            return (TransactionalDedupStore.BatchWork) (transaction, running) -> {
                ClassLoader inPlugin = PluginContext.enter(caller);
                try {
                    work.run(transaction, running);
                } finally {
                    PluginContext.leave(inPlugin);
                }
            };
        }
        if (arg instanceof OutboxStore.Publisher publisher) {
            return (OutboxStore.Publisher) record -> {
                ClassLoader inPlugin = PluginContext.enter(caller);
                try {
                    publisher.publish(record);
                } finally {
                    PluginContext.leave(inPlugin);
                }
            };
        }
        if (arg instanceof List<?> list && !list.isEmpty()
                && list.get(0) instanceof TransactionalDedupStore.GroupMember) {
            List<TransactionalDedupStore.GroupMember> members = (List<TransactionalDedupStore.GroupMember>) list;
            List<TransactionalDedupStore.GroupMember> out = new ArrayList<>(members.size());
            for (TransactionalDedupStore.GroupMember m : members) {
                out.add(new TransactionalDedupStore.GroupMember(m.key(), m.fingerprint(), m.retention(), m.advance(),
                        m.waitForGaps(), inCaller(m.work(), caller)));
            }
            return out;
        }
        return arg;
    }

    private static TransactionalDedupStore.Work inCaller(TransactionalDedupStore.Work work, ClassLoader caller) {
        return transaction -> {
            ClassLoader inPlugin = PluginContext.enter(caller);
            try {
                work.run(transaction);
            } finally {
                PluginContext.leave(inPlugin);
            }
        };
    }
}
