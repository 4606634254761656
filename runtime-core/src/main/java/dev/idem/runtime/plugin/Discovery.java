package dev.idem.runtime.plugin;

import dev.idem.runtime.config.PluginSpecs.Kind;
import dev.idem.spi.BrokerAdapterProvider;
import dev.idem.spi.ConfigSpec;
import dev.idem.spi.DedupStoreProvider;
import dev.idem.spi.IdExtractorProvider;
import java.net.URL;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;

/**
 * One discovery run: loads every provider of every kind through each class loader, keeping the
 * providers that loaded and a problem for each one that did not. One broken plugin never hides
 * the others, so a single start reports everything that needs fixing.
 *
 * <p>Not thread-safe; lives inside one call of {@link PluginRegistry#discover(List)}.
 */
final class Discovery {

    /** A provider that loaded and answered {@code id()} and {@code configSpec()}. */
    record Found(Kind kind, Object provider, ConfigSpec spec, PluginDescriptor descriptor) {
    }

    /** Something that stops the start; {@code cause} may be {@code null}. */
    record Problem(String message, Throwable cause) {
    }

    /** A ServiceLoader iterator that fails this often in a row without advancing would otherwise spin forever. */
    private static final int MAX_REPEATED_FAILURES = 16;

    private final Set<Class<?>> seenProviders = new HashSet<>();
    private final Set<String> seenFailures = new HashSet<>();
    private final List<Found> found = new ArrayList<>();
    private final List<Problem> problems = new ArrayList<>();

    static Class<?> serviceType(Kind kind) {
        switch (kind) {
            case BROKER: return BrokerAdapterProvider.class;
            case STORE: return DedupStoreProvider.class;
            case ID_EXTRACTOR: return IdExtractorProvider.class;
            default: throw new IllegalStateException("unhandled kind " + kind);
        }
    }

    List<Found> found() {
        return found;
    }

    List<Problem> problems() {
        return problems;
    }

    void scan(Kind kind, ClassLoader loader) {
        Class<?> service = serviceType(kind);
        Iterator<?> providers = ServiceLoader.load(service, loader).iterator();
        Set<String> accounted = new HashSet<>();
        ServiceListing listing = null;
        String previousFailure = null;
        int repeats = 0;
        while (true) {
            Object provider;
            try {
                if (!providers.hasNext()) {
                    return;
                }
                provider = providers.next();
            } catch (ServiceConfigurationError | LinkageError e) {
                if (listing == null) {
                    listing = ServiceListing.read(service, loader);
                }
                String failure = loadFailed(kind, service, loader, e, listing, accounted);
                repeats = failure.equals(previousFailure) ? repeats + 1 : 0;
                previousFailure = failure;
                if (repeats >= MAX_REPEATED_FAILURES) {
                    return;
                }
                continue;
            }
            accounted.add(provider.getClass().getName());
            // A parent loader's providers come back through every child loader. A Class object is
            // one (name, defining loader) pair, so this drops exactly those repeats and nothing else.
            if (seenProviders.add(provider.getClass())) {
                inspect(kind, provider);
            }
        }
    }

    /** Records the problem (once, however many loaders see it) and returns its text. */
    private String loadFailed(Kind kind, Class<?> service, ClassLoader loader, Throwable failure,
            ServiceListing listing, Set<String> accounted) {
        String className = listing.classNamedIn(failure);
        if (className == null && failure instanceof LinkageError) {
            className = listing.probe(loader, accounted);
        }
        String message;
        String identity;
        if (className != null) {
            accounted.add(className);
            String location = locate(loader, className, listing);
            message = "Cannot load " + kind.label() + " provider " + className + " from " + location + ": "
                    + LoadFailures.explain(failure, service);
            // Not the message: a class whose initialiser threw fails differently the second time
            // ("Could not initialize class"), when a child loader meets its parent's copy again.
            identity = kind + " " + className + " " + location;
        } else {
            URL file = listing.fileNamedIn(failure);
            String where = file == null ? "a JAR" : CodeLocations.containerOf(file, listing.resource());
            String reason = LoadFailures.explain(failure, service);
            if (file != null) {
                reason = reason.replace(file + ":", "line ");
            }
            message = "Cannot read " + listing.resource() + " in " + where + ": " + reason;
            identity = kind + " " + message;
        }
        if (seenFailures.add(identity)) {
            problems.add(new Problem(message, failure));
        }
        return message;
    }

    /** The JAR holding the class file if there is one, else the JAR whose services file lists it. */
    private static String locate(ClassLoader loader, String className, ServiceListing listing) {
        String classLocation = CodeLocations.ofResource(loader, CodeLocations.classFile(className));
        if (classLocation != null) {
            return classLocation;
        }
        URL listedBy = listing.fileListing(className);
        return listedBy == null ? CodeLocations.UNKNOWN : CodeLocations.containerOf(listedBy, listing.resource());
    }

    private void inspect(Kind kind, Object provider) {
        Class<?> type = provider.getClass();
        String location = CodeLocations.of(type);
        String context = kind.label() + " provider " + type.getName() + " from " + location;
        String id;
        ConfigSpec spec;
        try {
            id = id(kind, provider);
        } catch (RuntimeException | LinkageError e) {
            problems.add(new Problem("Cannot load " + context + ": its id() threw " + LoadFailures.describe(e), e));
            return;
        }
        if (id == null) {
            problems.add(new Problem("Cannot load " + context + ": its id() returned null", null));
            return;
        }
        try {
            spec = configSpec(kind, provider);
        } catch (RuntimeException | LinkageError e) {
            problems.add(new Problem("Cannot load " + context + ": its configSpec() threw "
                    + LoadFailures.describe(e), e));
            return;
        }
        if (spec == null) {
            problems.add(new Problem("Cannot load " + context + ": its configSpec() returned null;"
                    + " a provider without settings returns ConfigSpec.empty()", null));
            return;
        }
        String version = CodeLocations.version(type, location);
        found.add(new Found(kind, provider, spec,
                new PluginDescriptor(kind, id, type.getName(), version, location)));
    }

    private static String id(Kind kind, Object provider) {
        switch (kind) {
            case BROKER: return ((BrokerAdapterProvider) provider).id();
            case STORE: return ((DedupStoreProvider) provider).id();
            default: return ((IdExtractorProvider) provider).id();
        }
    }

    private static ConfigSpec configSpec(Kind kind, Object provider) {
        switch (kind) {
            case BROKER: return ((BrokerAdapterProvider) provider).configSpec();
            case STORE: return ((DedupStoreProvider) provider).configSpec();
            default: return ((IdExtractorProvider) provider).configSpec();
        }
    }
}
