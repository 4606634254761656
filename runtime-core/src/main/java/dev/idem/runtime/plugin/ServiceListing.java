package dev.idem.runtime.plugin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URL;
import java.net.URLConnection;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The provider classes listed in the {@code META-INF/services} files one loader sees, in the order
 * {@link java.util.ServiceLoader} reads them. Read only after a provider failed: a
 * {@link java.util.ServiceConfigurationError} is just text, and this is how we tie it back to a
 * class and the JAR that listed it.
 */
final class ServiceListing {

    private final String resource;
    private final List<URL> files;
    private final Map<String, URL> listedBy;

    private ServiceListing(String resource, List<URL> files, Map<String, URL> listedBy) {
        this.resource = resource;
        this.files = files;
        this.listedBy = listedBy;
    }

    static String resourceName(Class<?> service) {
        return "META-INF/services/" + service.getName();
    }

    static ServiceListing read(Class<?> service, ClassLoader loader) {
        String resource = resourceName(service);
        List<URL> files = new ArrayList<>();
        Map<String, URL> listedBy = new LinkedHashMap<>();
        try {
            for (URL file : Collections.list(loader.getResources(resource))) {
                files.add(file);
                for (String className : classNames(file)) {
                    listedBy.putIfAbsent(className, file);
                }
            }
        } catch (IOException e) {
            // Best effort: this only improves an error message that is being built anyway.
        }
        return new ServiceListing(resource, files, listedBy);
    }

    private static List<String> classNames(URL file) {
        List<String> names = new ArrayList<>();
        try {
            URLConnection connection = file.openConnection();
            // A cached JarFile would stay open after the plugin's loader is closed.
            connection.setUseCaches(false);
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(connection.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    int comment = line.indexOf('#');
                    String name = (comment < 0 ? line : line.substring(0, comment)).trim();
                    if (!name.isEmpty()) {
                        names.add(name);
                    }
                }
            }
        } catch (IOException e) {
            // ServiceLoader reports an unreadable file itself, naming its URL.
        }
        return names;
    }

    /** The services file that lists {@code className}, or {@code null}. */
    URL fileListing(String className) {
        return listedBy.get(className);
    }

    /** The services resource name, {@code META-INF/services/<interface>}. */
    String resource() {
        return resource;
    }

    /** The listed class that a failure or one of its causes names, or {@code null}. */
    String classNamedIn(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            String message = t.getMessage();
            if (message == null) {
                continue;
            }
            for (String className : listedBy.keySet()) {
                if (names(message, className) || names(message, className.replace('.', '/'))) {
                    return className;
                }
            }
        }
        return null;
    }

    /**
     * For a linkage failure that names no provider (its superclass is missing, so the message names
     * the superclass): the first listed class not yet accounted for that fails to link again.
     */
    String probe(ClassLoader loader, Set<String> accounted) {
        for (String className : listedBy.keySet()) {
            if (accounted.contains(className)) {
                continue;
            }
            try {
                Class.forName(className, false, loader);
            } catch (LinkageError e) {
                return className;
            } catch (ClassNotFoundException e) {
                // Reported on its own by ServiceLoader ("Provider ... not found").
            }
        }
        return null;
    }

    /** The services file whose URL a failure's message contains (a syntax error in it), or {@code null}. */
    URL fileNamedIn(Throwable failure) {
        String message = failure.getMessage();
        if (message != null) {
            for (URL file : files) {
                if (message.contains(file.toString())) {
                    return file;
                }
            }
        }
        return null;
    }

    /** Whether {@code text} contains {@code name} as a whole name, so {@code a.Foo} does not match {@code a.FooBar}. */
    private static boolean names(String text, String name) {
        for (int at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) {
            int end = at + name.length();
            boolean startsClean = at == 0 || !isNamePart(text.charAt(at - 1));
            boolean endsClean = end == text.length() || !Character.isJavaIdentifierPart(text.charAt(end));
            if (startsClean && endsClean) {
                return true;
            }
        }
        return false;
    }

    private static boolean isNamePart(char c) {
        return Character.isJavaIdentifierPart(c) || c == '.' || c == '/';
    }
}
