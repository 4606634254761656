package dev.idem.runtime.plugin;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.KeyFilter;
import dev.idem.spi.KeyPage;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PurgeBatch;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import dev.idem.spi.TransactionalDedupStore;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * A dedup store whose calls run in its plugin's context. {@link #of} picks the subclass that implements the
 * same optional capabilities as the store, since the runtime and the CLI find them with {@code instanceof};
 * the capability methods live here and are reachable only through those subclasses.
 */
class BoundDedupStore implements DedupStore, PluginContext.Bound {

    private final DedupStore store;
    private final ClassLoader loader;

    private BoundDedupStore(DedupStore store, ClassLoader loader) {
        this.store = store;
        this.loader = loader;
    }

    static DedupStore of(DedupStore store, ClassLoader loader) {
        if (store instanceof SequencedDedupStore || store instanceof OutboxStore) {
            return CapabilityProxy.of(store, loader);
        }
        boolean inspectable = store instanceof InspectableDedupStore;
        boolean transactional = store instanceof TransactionalDedupStore;
        if (inspectable && transactional) {
            return new InspectableTransactional(store, loader);
        }
        if (inspectable) {
            return new Inspectable(store, loader);
        }
        if (transactional) {
            return new Transactional(store, loader);
        }
        return new BoundDedupStore(store, loader);
    }

    @Override
    public Object plugin() {
        return store;
    }

    @Override
    public List<ClaimResult> claim(List<ClaimRequest> requests) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return store.claim(requests);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public boolean complete(StoreKey key, long token, Duration retention) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return store.complete(key, token, retention);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public List<CompletionResult> completeAll(List<CompletionRequest> requests) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return store.completeAll(requests);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public boolean release(StoreKey key, long token) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return store.release(key, token);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public boolean renew(StoreKey key, long token, Duration lease) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return store.renew(key, token, lease);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public int recordStart(StoreKey key, long token) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return store.recordStart(key, token);
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public void checkHealth() {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            store.checkHealth();
        } finally {
            PluginContext.leave(previous);
        }
    }

    @Override
    public void close() {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            store.close();
        } finally {
            PluginContext.leave(previous);
        }
    }

    // InspectableDedupStore

    public Optional<StoredKey> inspect(StoreKey key) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return ((InspectableDedupStore) store).inspect(key);
        } finally {
            PluginContext.leave(previous);
        }
    }

    public boolean delete(StoreKey key) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return ((InspectableDedupStore) store).delete(key);
        } finally {
            PluginContext.leave(previous);
        }
    }

    public StoreStats stats() {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return ((InspectableDedupStore) store).stats();
        } finally {
            PluginContext.leave(previous);
        }
    }

    public KeyPage list(String namespace, KeyFilter filter, String cursor, int limit) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return ((InspectableDedupStore) store).list(namespace, filter, cursor, limit);
        } finally {
            PluginContext.leave(previous);
        }
    }

    public PurgeBatch purge(String namespace, Instant expiringBefore, String cursor, int limit) {
        ClassLoader previous = PluginContext.enter(loader);
        try {
            return ((InspectableDedupStore) store).purge(namespace, expiringBefore, cursor, limit);
        } finally {
            PluginContext.leave(previous);
        }
    }

    // TransactionalDedupStore

    /** The work, the handler's part, runs in the caller's context again: the store's is only around it. */
    public TransactionalDedupStore.Outcome runOnce(StoreKey key, String fingerprint, Duration retention,
            TransactionalDedupStore.Work work) throws Exception {
        ClassLoader caller = PluginContext.enter(loader);
        try {
            return ((TransactionalDedupStore) store).runOnce(key, fingerprint, retention, inCaller(work, caller));
        } finally {
            PluginContext.leave(caller);
        }
    }

    public TransactionalDedupStore.Outcome runOnce(StoreKey key, String fingerprint, Duration retention,
            SequenceAdvance advance, boolean waitForGaps, TransactionalDedupStore.Work work) throws Exception {
        ClassLoader caller = PluginContext.enter(loader);
        try {
            return ((TransactionalDedupStore) store).runOnce(key, fingerprint, retention, advance, waitForGaps,
                    inCaller(work, caller));
        } finally {
            PluginContext.leave(caller);
        }
    }

    public List<TransactionalDedupStore.GroupResult> runGroup(List<TransactionalDedupStore.GroupMember> members) {
        return runGroup(members, TransactionalDedupStore.Savepoints.PER_MESSAGE);
    }

    public List<TransactionalDedupStore.GroupResult> runGroup(List<TransactionalDedupStore.GroupMember> members,
            TransactionalDedupStore.Savepoints savepoints) {
        ClassLoader caller = PluginContext.enter(loader);
        try {
            return ((TransactionalDedupStore) store).runGroup(inCaller(members, caller), savepoints);
        } finally {
            PluginContext.leave(caller);
        }
    }

    /** The members with their works run in the caller's context (the handler's), not the store's. */
    static List<TransactionalDedupStore.GroupMember> inCaller(List<TransactionalDedupStore.GroupMember> members,
            ClassLoader caller) {
        List<TransactionalDedupStore.GroupMember> out = new java.util.ArrayList<>(members.size());
        for (TransactionalDedupStore.GroupMember m : members) {
            out.add(new TransactionalDedupStore.GroupMember(m.key(), m.fingerprint(), m.retention(), m.advance(),
                    m.waitForGaps(), inCaller(m.work(), caller)));
        }
        return out;
    }

    /** {@code work}, run back in the caller's context when the store calls it. */
    static TransactionalDedupStore.Work inCaller(TransactionalDedupStore.Work work, ClassLoader caller) {
        return transaction -> {
            ClassLoader inStore = PluginContext.enter(caller);
            try {
                work.run(transaction);
            } finally {
                PluginContext.leave(inStore);
            }
        };
    }

    @Override
    public String toString() {
        return store.toString();
    }

    private static final class Inspectable extends BoundDedupStore implements InspectableDedupStore {
        Inspectable(DedupStore store, ClassLoader loader) {
            super(store, loader);
        }
    }

    private static final class Transactional extends BoundDedupStore implements TransactionalDedupStore {
        Transactional(DedupStore store, ClassLoader loader) {
            super(store, loader);
        }
    }

    private static final class InspectableTransactional extends BoundDedupStore
            implements InspectableDedupStore, TransactionalDedupStore {
        InspectableTransactional(DedupStore store, ClassLoader loader) {
            super(store, loader);
        }
    }
}
