package dev.idem.runtime.plugin;

import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.TransactionalDedupStore;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * A dedup store bound to its plugin's context that implements every SPI capability the store implements
 * ({@code dev.idem.spi} interfaces, such as {@code SequencedDedupStore} and {@code OutboxStore}), for stores
 * with more capabilities than {@link BoundDedupStore}'s fixed subclasses cover: the runtime finds capabilities
 * with {@code instanceof}. Each call enters the plugin's context and rethrows what the store threw.
 */
final class CapabilityProxy implements InvocationHandler {

    private static final String SPI_PACKAGE = DedupStore.class.getPackageName();

    private final DedupStore store;
    private final ClassLoader loader;

    private CapabilityProxy(DedupStore store, ClassLoader loader) {
        this.store = store;
        this.loader = loader;
    }

    static DedupStore of(DedupStore store, ClassLoader loader) {
        Set<Class<?>> interfaces = new LinkedHashSet<>();
        collectSpiInterfaces(store.getClass(), interfaces);
        interfaces.add(PluginContext.Bound.class);
        return (DedupStore) Proxy.newProxyInstance(CapabilityProxy.class.getClassLoader(),
                interfaces.toArray(new Class<?>[0]), new CapabilityProxy(store, loader));
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

    /** A callback the store makes (a transactional work, a relay's publisher) runs in the caller's context. */
    @SuppressWarnings("unchecked")
    private static Object inCaller(Object arg, ClassLoader caller) {
        if (arg instanceof TransactionalDedupStore.Work work) {
            return BoundDedupStore.inCaller(work, caller);
        }
        if (arg instanceof OutboxStore.Publisher publisher) {
            return (OutboxStore.Publisher) record -> {
                ClassLoader inStore = PluginContext.enter(caller);
                try {
                    publisher.publish(record);
                } finally {
                    PluginContext.leave(inStore);
                }
            };
        }
        if (arg instanceof List<?> list && !list.isEmpty() && list.get(0) instanceof TransactionalDedupStore.GroupMember) {
            return BoundDedupStore.inCaller((List<TransactionalDedupStore.GroupMember>) list, caller);
        }
        return arg;
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        if (method.getDeclaringClass() == PluginContext.Bound.class) {
            return store;
        }
        if (method.getDeclaringClass() == Object.class) {
            return switch (method.getName()) {
                case "equals" -> proxy == args[0];
                case "hashCode" -> System.identityHashCode(proxy);
                default -> store.toString();
            };
        }
        ClassLoader previous = PluginContext.enter(loader);
        try {
            if (args != null) {
                for (int i = 0; i < args.length; i++) {
                    args[i] = inCaller(args[i], previous);
                }
            }
            return method.invoke(store, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        } finally {
            PluginContext.leave(previous);
        }
    }
}
