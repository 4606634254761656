package dev.idem.handlertest;

import dev.idem.api.HandlerContext;
import dev.idem.api.Message;
import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * One "process" of a crash test: a runtime of its own over the pass's broker and store, as a consumer process is, with
 * a kill switch. {@link #kill} does in process what {@code kill -9} does to a process: from then on nothing of it
 * reaches the store (every call fails, the completion about to be written included) and the broker takes back every
 * message it held unsettled and ignores what it settles later. The store keeps what it had, the claims included, whose
 * leases then run out. What runs on its threads afterwards (a handler already inside an effect) still happens, as it
 * can in a real process between the signal and its end.
 *
 * <p>The store and the handler reach the runtime through proxies: the store's implements every SPI capability the
 * store has and checks the kill switch on each call, and, in plain mode, stops the completion of a message the pass
 * kills before its completion; the handler's implements every API interface the handler does and reports each run's
 * points to the {@link Pass}. Thread-safe.
 */
final class Incarnation implements AutoCloseable {

    private final Pass pass;
    private final BrokerAdapter connection;
    private final IdemRuntime runtime;
    private volatile boolean dead;

    Incarnation(Pass pass, BrokerAdapter connection, DedupStore store, MessageHandler handler, String yaml,
            String storeId, String pipeline) {
        this.pass = pass;
        this.connection = connection;
        this.runtime = Idem.builder()
                .configYaml(yaml)
                .env(Map.of())
                .broker("memory", connection)
                .store(storeId, killable(store))
                .handler(pipeline, crashing(handler))
                .meterRegistry(new SimpleMeterRegistry())
                .start();
    }

    boolean dead() {
        return dead;
    }

    /** Kills the process: see the class comment. */
    void kill() {
        if (dead) {
            return;
        }
        dead = true;
        try {
            connection.close();
        } catch (RuntimeException ignored) {
            // The broker takes the messages back whatever the connection says.
        }
    }

    /** Whether the runtime still holds deliveries unsettled. */
    int inFlight() {
        return runtime.inFlight();
    }

    /** Stops the runtime; a dead one gives up at once, since nothing it does can reach the store or the broker. */
    @Override
    public void close() {
        runtime.stop(dead ? Duration.ZERO : Duration.ofSeconds(5));
        if (!dead) {
            connection.close();
        }
    }

    // ---------------------------------------------------------------- the store's proxy

    private DedupStore killable(DedupStore store) {
        Set<Class<?>> capabilities = new LinkedHashSet<>();
        for (Class<?> c = store.getClass(); c != null; c = c.getSuperclass()) {
            for (Class<?> i : c.getInterfaces()) {
                collect(i, capabilities);
            }
        }
        return (DedupStore) Proxy.newProxyInstance(DedupStore.class.getClassLoader(),
                capabilities.toArray(new Class<?>[0]), (proxy, method, args) -> {
                    String name = method.getName();
                    if (name.equals("close") && method.getParameterCount() == 0) {
                        return null;
                    }
                    if (dead) {
                        throw new StoreException("this process was killed by the crash test", true);
                    }
                    if (!pass.transactional && name.startsWith("complete")) {
                        List<String> keys = completing(name, args);
                        if (!keys.isEmpty() && pass.beforeCompletion(this, keys)) {
                            throw new StoreException("this process was killed by the crash test before the"
                                    + " completion of " + keys + " reached the store", true);
                        }
                    }
                    return invoke(store, method, args);
                });
    }

    /** The SPI interfaces {@code type} is or extends, public ones only. */
    private static void collect(Class<?> type, Set<Class<?>> into) {
        if (type.getPackageName().equals(DedupStore.class.getPackageName())) {
            into.add(type);
        }
        for (Class<?> parent : type.getInterfaces()) {
            collect(parent, into);
        }
    }

    /** The message keys a completion call completes. */
    private static List<String> completing(String method, Object[] args) {
        List<String> keys = new ArrayList<>();
        if (method.equals("completeAll") && args[0] instanceof List<?> requests) {
            for (Object request : requests) {
                keys.add(((CompletionRequest) request).key().id());
            }
        } else if (args != null && args.length > 0 && args[0] instanceof StoreKey key) {
            keys.add(key.id());
        }
        return keys;
    }

    // ---------------------------------------------------------------- the handler's proxy

    private MessageHandler crashing(MessageHandler handler) {
        Set<Class<?>> interfaces = new LinkedHashSet<>();
        for (Class<?> c = handler.getClass(); c != null; c = c.getSuperclass()) {
            for (Class<?> i : c.getInterfaces()) {
                if (i.getPackageName().equals(MessageHandler.class.getPackageName())) {
                    interfaces.add(i);
                }
            }
        }
        interfaces.add(MessageHandler.class);
        ClassLoader loader = handler.getClass().getClassLoader() != null ? handler.getClass().getClassLoader()
                : MessageHandler.class.getClassLoader();
        return (MessageHandler) Proxy.newProxyInstance(loader, interfaces.toArray(new Class<?>[0]),
                (proxy, method, args) -> {
                    if (method.getName().equals("handle") && method.getParameterCount() == 2
                            && method.getParameterTypes()[0] == Message.class) {
                        handle(handler, (Message) args[0], (HandlerContext) args[1]);
                        return null;
                    }
                    if (method.getDeclaringClass() == Object.class && method.getName().equals("toString")) {
                        return handler.toString();
                    }
                    return invoke(handler, method, args);
                });
    }

    private void handle(MessageHandler handler, Message message, HandlerContext context) throws Exception {
        if (dead) {
            throw new SimulatedCrash("(this process is dead)");
        }
        String key = message.idempotencyKey().orElse(null);
        Pass.Run run = new Pass.Run(pass, this, key);
        EffectRecorder.CURRENT.set(run);
        try {
            pass.reached(this, CrashPoint.Kind.BEFORE_HANDLER, 0, key);
            handler.handle(message, counting(context, run));
            pass.returned(run);
            if (pass.transactional) {
                pass.reached(this, CrashPoint.Kind.BEFORE_COMMIT, 0, key);
            }
        } finally {
            EffectRecorder.CURRENT.remove();
        }
    }

    /** The run's context, which reports each durable step that returned to the run, where the pass may kill. */
    private static HandlerContext counting(HandlerContext context, Pass.Run run) {
        return (HandlerContext) Proxy.newProxyInstance(HandlerContext.class.getClassLoader(),
                new Class<?>[] {HandlerContext.class}, (proxy, method, args) -> {
                    if (method.getName().equals("step")) {
                        String name = (String) args[0];
                        Object result;
                        if (args.length == 3) {
                            result = step(context, name, (Class<?>) args[1], (Callable<?>) args[2]);
                        } else {
                            HandlerContext.StepAction action = (HandlerContext.StepAction) args[1];
                            result = context.step(name, Void.class, () -> {
                                action.run();
                                return null;
                            });
                        }
                        run.step(name);
                        return result;
                    }
                    return invoke(context, method, args);
                });
    }

    @SuppressWarnings("unchecked")
    private static <T> Object step(HandlerContext context, String name, Class<T> type, Callable<?> action)
            throws Exception {
        return context.step(name, type, (Callable<T>) action);
    }

    private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
