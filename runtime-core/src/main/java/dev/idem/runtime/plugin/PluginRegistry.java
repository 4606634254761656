package dev.idem.runtime.plugin;

import dev.idem.runtime.internal.Suggestions;
import dev.idem.runtime.internal.plugin.PluginContext;
import dev.idem.runtime.config.PluginSpecs;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.BrokerAdapterProvider;
import dev.idem.spi.ConfigProblem;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.DedupStore;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.IdExtractor;
import dev.idem.spi.IdExtractorProvider;
import dev.idem.spi.PluginConfig;
import dev.idem.spi.PluginException;
import dev.idem.spi.StoreContext;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The broker adapters, dedup stores and ID extractors found through {@link java.util.ServiceLoader}.
 * Being discovered is not being turned on: the configuration selects one broker, one store and each
 * pipeline's extractors by id, through the lookups here.
 *
 * <p>{@link #discover(List)} loads every provider of every kind, checks the ids and fails the start
 * with one {@link PluginException} listing every problem: a provider that fails to load (naming its
 * class, its JAR and the cause), an invalid id, two providers with one id (naming both JARs).
 *
 * <p>Immutable once built and thread-safe. The provider instances it hands out are the ones it
 * discovered; providers are stateless factories, so sharing them is safe. Create adapters, stores and
 * extractors through {@link #createBroker}, {@link #createStore} and {@link #createIdExtractor}: those run
 * in the plugin's context (see {@link PluginContext}) for their whole life, as client libraries need.
 */
public final class PluginRegistry implements PluginSpecs {

    private static final Logger LOG = LoggerFactory.getLogger(PluginRegistry.class);

    private static final Pattern VALID_ID = Pattern.compile("[a-z][a-z0-9-]*");

    private record Entry(Object provider, ConfigSpec spec, PluginDescriptor descriptor) {
    }

    private final Map<Kind, Map<String, Entry>> entries;
    private final Map<Kind, SortedSet<String>> ids;
    private final List<PluginDescriptor> plugins;

    private PluginRegistry(Map<Kind, Map<String, Entry>> entries) {
        this.entries = entries;
        Map<Kind, SortedSet<String>> idsByKind = new EnumMap<>(Kind.class);
        List<PluginDescriptor> all = new ArrayList<>();
        for (Map.Entry<Kind, Map<String, Entry>> kind : entries.entrySet()) {
            idsByKind.put(kind.getKey(), Collections.unmodifiableSortedSet(new TreeSet<>(kind.getValue().keySet())));
            kind.getValue().values().forEach(e -> all.add(e.descriptor()));
        }
        this.ids = idsByKind;
        this.plugins = List.copyOf(all);
    }

    /** Discovers the plugins visible to the runtime's own class loader: the built-ins and {@code lib/}. */
    public static PluginRegistry discover() {
        return discover(List.of(PluginRegistry.class.getClassLoader()));
    }

    /**
     * Discovers the plugins visible to each loader (typically the runtime's loader and one loader per
     * folder under {@code plugins/}). A provider seen through several loaders (a parent's, through
     * its children) counts once.
     *
     * @throws PluginException listing every provider that failed to load, every invalid id and every
     *         id claimed by two providers
     */
    public static PluginRegistry discover(List<ClassLoader> loaders) {
        Objects.requireNonNull(loaders, "loaders");
        Discovery discovery = new Discovery();
        for (Kind kind : Kind.values()) {
            for (ClassLoader loader : loaders) {
                discovery.scan(kind, Objects.requireNonNull(loader, "loader"));
            }
        }
        List<Discovery.Problem> problems = new ArrayList<>(discovery.problems());
        Map<Kind, Map<String, List<Discovery.Found>>> byId = new EnumMap<>(Kind.class);
        for (Discovery.Found found : discovery.found()) {
            PluginDescriptor d = found.descriptor();
            LOG.info("Found {} '{}' {} in {} ({})", d.kind().label(), d.id(), d.version(), d.location(), d.className());
            if (!VALID_ID.matcher(d.id()).matches()) {
                problems.add(new Discovery.Problem(invalidId(d), null));
                continue;
            }
            byId.computeIfAbsent(d.kind(), k -> new TreeMap<>())
                    .computeIfAbsent(d.id(), k -> new ArrayList<>()).add(found);
        }
        Map<Kind, Map<String, Entry>> entries = new EnumMap<>(Kind.class);
        for (Kind kind : Kind.values()) {
            Map<String, Entry> ofKind = new LinkedHashMap<>();
            for (Map.Entry<String, List<Discovery.Found>> id : byId.getOrDefault(kind, Map.of()).entrySet()) {
                List<Discovery.Found> claimants = id.getValue();
                if (claimants.size() > 1) {
                    problems.add(new Discovery.Problem(duplicateId(kind, id.getKey(), claimants), null));
                    continue;
                }
                Discovery.Found found = claimants.get(0);
                ofKind.put(id.getKey(), new Entry(found.provider(), found.spec(), found.descriptor()));
            }
            entries.put(kind, Collections.unmodifiableMap(ofKind));
        }
        if (!problems.isEmpty()) {
            throw failure(problems);
        }
        return new PluginRegistry(entries);
    }

    /**
     * The broker adapter provider with that id.
     *
     * @throws PluginException naming the available ids when there is none
     */
    public BrokerAdapterProvider broker(String id) {
        return (BrokerAdapterProvider) lookup(Kind.BROKER, id).provider();
    }

    /**
     * The dedup store provider with that id.
     *
     * @throws PluginException naming the available ids when there is none
     */
    public DedupStoreProvider store(String id) {
        return (DedupStoreProvider) lookup(Kind.STORE, id).provider();
    }

    /**
     * The ID extractor provider with that id.
     *
     * @throws PluginException naming the available ids when there is none
     */
    public IdExtractorProvider idExtractor(String id) {
        return (IdExtractorProvider) lookup(Kind.ID_EXTRACTOR, id).provider();
    }

    /**
     * Creates a broker adapter with the provider of that id, in the provider's context (see
     * {@link PluginContext}), and {@linkplain PluginContext#bind(BrokerAdapter) binds} it, so every later call
     * on it runs there too, whichever thread makes it.
     *
     * @throws PluginException naming the available ids when there is none, or if the provider returned null
     * @throws dev.idem.spi.BrokerException as {@link BrokerAdapterProvider#create} throws
     * @throws dev.idem.spi.ConfigException as {@link BrokerAdapterProvider#create} throws
     */
    public BrokerAdapter createBroker(String id, PluginConfig config) {
        Entry entry = lookup(Kind.BROKER, id);
        BrokerAdapterProvider provider = (BrokerAdapterProvider) entry.provider();
        return PluginContext.bind(created(entry, PluginContext.call(provider, () -> provider.create(config))));
    }

    /**
     * Creates a dedup store with the provider of that id, in the provider's context, and
     * {@linkplain PluginContext#bind(DedupStore) binds} it: every later call runs there too, and the result
     * has the store's optional capabilities.
     *
     * @throws PluginException naming the available ids when there is none, or if the provider returned null
     * @throws dev.idem.spi.StoreException as {@link DedupStoreProvider#create} throws
     * @throws dev.idem.spi.ConfigException as {@link DedupStoreProvider#create} throws
     */
    public DedupStore createStore(String id, PluginConfig config, StoreContext context) {
        Entry entry = lookup(Kind.STORE, id);
        DedupStoreProvider provider = (DedupStoreProvider) entry.provider();
        return PluginContext.bind(created(entry, PluginContext.call(provider, () -> provider.create(config, context))));
    }

    /**
     * Creates an ID extractor with the provider of that id, in the provider's context, and
     * {@linkplain PluginContext#bind(IdExtractor) binds} it.
     *
     * @throws PluginException naming the available ids when there is none, or if the provider returned null
     * @throws dev.idem.spi.ConfigException as {@link IdExtractorProvider#create} throws
     */
    public IdExtractor createIdExtractor(String id, PluginConfig config) {
        Entry entry = lookup(Kind.ID_EXTRACTOR, id);
        IdExtractorProvider provider = (IdExtractorProvider) entry.provider();
        return PluginContext.bind(created(entry, PluginContext.call(provider, () -> provider.create(config))));
    }

    private static <T> T created(Entry entry, T instance) {
        if (instance == null) {
            PluginDescriptor d = entry.descriptor();
            throw new PluginException("The " + d.kind().label() + " provider " + d.className() + " from " + d.location()
                    + " returned null from create() for '" + d.id() + "'. Its create() must return an instance or"
                    + " throw; fix or replace the plugin");
        }
        return instance;
    }

    /** Every plugin discovered, by kind then id. */
    public List<PluginDescriptor> plugins() {
        return plugins;
    }

    @Override
    public Optional<ConfigSpec> spec(Kind kind, String id) {
        Entry entry = entries.get(Objects.requireNonNull(kind, "kind")).get(id);
        return entry == null ? Optional.empty() : Optional.of(entry.spec());
    }

    @Override
    public SortedSet<String> ids(Kind kind) {
        return ids.get(Objects.requireNonNull(kind, "kind"));
    }

    /**
     * Runs the provider's {@code validate} in its class loader. A provider that throws instead of returning its
     * problems is reported as one problem naming it, so a broken plugin cannot hide the other problems.
     */
    @Override
    public List<ConfigProblem> validate(Kind kind, String id, PluginConfig config) {
        Entry entry = lookup(kind, id);
        Object provider = entry.provider();
        try {
            return List.copyOf(PluginContext.call(provider, () -> switch (kind) {
                case BROKER -> ((BrokerAdapterProvider) provider).validate(config);
                case STORE -> ((DedupStoreProvider) provider).validate(config);
                case ID_EXTRACTOR -> ((IdExtractorProvider) provider).validate(config);
            }));
        } catch (RuntimeException | LinkageError e) {
            PluginDescriptor d = entry.descriptor();
            return List.of(new ConfigProblem(config.path(), "The " + kind.label() + " '" + id + "' ("
                    + d.className() + " from " + d.location() + ") failed to check " + config.path() + ": " + e));
        }
    }

    private Entry lookup(Kind kind, String id) {
        Objects.requireNonNull(id, "id");
        Entry entry = entries.get(kind).get(id);
        if (entry == null) {
            throw new PluginException(unknownId(kind, id, ids(kind)));
        }
        return entry;
    }

    static String unknownId(Kind kind, String id, SortedSet<String> available) {
        StringBuilder s = new StringBuilder("No ").append(kind.label()).append(" with id '").append(id)
                .append("'. Available: ").append(available).append('.');
        String close = Suggestions.closest(id, available).orElse(null);
        if (close != null) {
            s.append(" Did you mean '").append(close).append("'?");
        }
        return s.append(" Is its plugin folder under plugins/ present?").toString();
    }

    private static String invalidId(PluginDescriptor d) {
        String message = "The " + d.kind().label() + " provider " + d.className() + " from " + d.location()
                + " has the invalid id '" + d.id() + "': an id is lowercase letters, digits and '-',"
                + " starting with a letter";
        String suggestion = d.id().toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9-]", "");
        return VALID_ID.matcher(suggestion).matches() ? message + ", such as '" + suggestion + "'" : message;
    }

    private static String duplicateId(Kind kind, String id, List<Discovery.Found> claimants) {
        String who = claimants.stream()
                .map(f -> f.descriptor().className() + " in " + f.descriptor().location())
                .collect(Collectors.joining(" and "));
        return claimants.size() + " " + kind.label() + " providers have the id '" + id + "': " + who
                + ". Remove all but one of these JARs (or plugin folders)";
    }

    private static PluginException failure(List<Discovery.Problem> problems) {
        String message;
        if (problems.size() == 1) {
            message = "Plugin discovery failed: " + problems.get(0).message();
        } else {
            StringBuilder s = new StringBuilder("Plugin discovery failed (" + problems.size() + " problems):");
            problems.forEach(p -> s.append(System.lineSeparator()).append("  - ").append(p.message()));
            message = s.toString();
        }
        Throwable first = problems.stream().map(Discovery.Problem::cause).filter(Objects::nonNull)
                .findFirst().orElse(null);
        PluginException exception = new PluginException(message, first);
        problems.stream().map(Discovery.Problem::cause).filter(c -> c != null && c != first)
                .forEach(exception::addSuppressed);
        return exception;
    }

    @Override
    public String toString() {
        return "PluginRegistry" + ids;
    }
}
