package dev.idem.runtime.plugin;

import java.util.ServiceConfigurationError;

/**
 * Turns what {@link java.util.ServiceLoader} and the JVM throw for a broken provider into a reason
 * and a hint a person can act on. The JDK's messages are stable but terse ("Provider x could not
 * be instantiated"); the cause usually says more.
 */
final class LoadFailures {

    private LoadFailures() {
    }

    /** Why the provider failed and what to do, completing "Cannot load ... from ...: ". */
    static String explain(Throwable failure, Class<?> service) {
        if (failure instanceof ServiceConfigurationError) {
            return explainServiceError(failure, service);
        }
        return explainLinkage(failure);
    }

    private static String explainServiceError(Throwable failure, Class<?> service) {
        String message = stripServicePrefix(String.valueOf(failure.getMessage()), service);
        Throwable cause = failure.getCause();
        if (message.contains("Unable to get public no-arg constructor")) {
            return "it has no public no-arg constructor (" + describe(cause) + ")."
                    + " A provider must be a public class with a public no-arg constructor";
        }
        if (message.endsWith(" not found")) {
            return "the class is listed in " + ServiceListing.resourceName(service)
                    + " but neither its JAR nor the JARs beside it contain it."
                    + " Fix the services file or rebuild the JAR";
        }
        if (message.contains("not a subtype")) {
            return "it does not implement " + service.getName() + " as the runtime loads it."
                    + " Does the plugin bundle its own copy of idem-api? Declare idem-api with scope 'provided'";
        }
        if (cause instanceof ExceptionInInitializerError init) {
            return "its static initialiser threw " + describe(init.getCause() == null ? init : init.getCause())
                    + ". Fix the provider or remove its JAR";
        }
        if (cause instanceof LinkageError) {
            return explainLinkage(cause);
        }
        if (cause instanceof IllegalAccessException) {
            return "it is not accessible (" + describe(cause) + ")."
                    + " A provider must be a public class with a public no-arg constructor";
        }
        if (message.contains("could not be instantiated") && cause != null) {
            return "its constructor threw " + describe(cause)
                    + ". A provider's constructor should do no work; connect in create()";
        }
        if (message.contains("Illegal configuration-file syntax") || message.contains("Illegal provider-class name")) {
            return message + ". Each line of a services file names one provider class; '#' starts a comment";
        }
        return cause == null ? message : message + ": " + describe(cause);
    }

    private static String explainLinkage(Throwable failure) {
        String message = String.valueOf(failure.getMessage());
        if (failure instanceof UnsupportedClassVersionError) {
            return "it was compiled for a newer Java than this runtime's Java " + Runtime.version().feature()
                    + " (" + message + ")";
        }
        if (failure instanceof NoClassDefFoundError && message.startsWith("Could not initialize class")) {
            return "its static initialiser failed earlier (" + message + ")";
        }
        if (failure instanceof NoClassDefFoundError) {
            return "a class it needs is missing: " + message.replace('/', '.')
                    + ". Is a dependency missing from its plugin folder?";
        }
        return describe(failure);
    }

    /** ServiceLoader prefixes every message with the interface name, which the caller already states. */
    private static String stripServicePrefix(String message, Class<?> service) {
        String prefix = service.getName() + ": ";
        return message.startsWith(prefix) ? message.substring(prefix.length()) : message;
    }

    static String describe(Throwable t) {
        if (t == null) {
            return "no cause given";
        }
        return t.getMessage() == null ? t.getClass().getName() : t.getClass().getName() + ": " + t.getMessage();
    }
}
