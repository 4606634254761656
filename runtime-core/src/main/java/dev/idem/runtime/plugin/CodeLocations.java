package dev.idem.runtime.plugin;

import java.io.IOException;
import java.net.URI;
import java.net.URL;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/** Where a class or resource comes from (its JAR or class directory) and which version that is. */
public final class CodeLocations {

    static final String UNKNOWN = "unknown";

    private CodeLocations() {
    }

    /** The JAR or directory a loaded class came from, as a file path where it is a file, or {@code "unknown"}. */
    public static String of(Class<?> type) {
        CodeSource source = type.getProtectionDomain().getCodeSource();
        if (source != null && source.getLocation() != null) {
            return display(source.getLocation().toString());
        }
        String fromResource = ofResource(type.getClassLoader(), classFile(type.getName()));
        return fromResource == null ? UNKNOWN : fromResource;
    }

    /** The JAR or directory in which {@code loader} finds {@code resource}, or {@code null} if it does not. */
    static String ofResource(ClassLoader loader, String resource) {
        URL url = loader == null ? ClassLoader.getSystemResource(resource) : loader.getResource(resource);
        return url == null ? null : containerOf(url, resource);
    }

    /** The JAR or directory holding a resource found at {@code url}. */
    static String containerOf(URL url, String resource) {
        String spec = url.toString();
        if (spec.startsWith("jar:")) {
            int bang = spec.indexOf("!/");
            return display(bang < 0 ? spec.substring(4) : spec.substring(4, bang));
        }
        if (spec.endsWith("/" + resource)) {
            return display(spec.substring(0, spec.length() - resource.length() - 1));
        }
        return display(spec);
    }

    static String classFile(String className) {
        return className.replace('.', '/') + ".class";
    }

    /**
     * The implementation version of a loaded class: its package's, else its JAR manifest's
     * (a package split over JARs, or a loader that does not define packages from manifests),
     * else {@link #UNKNOWN}.
     */
    static String version(Class<?> type, String location) {
        Package pkg = type.getPackage();
        if (pkg != null && pkg.getImplementationVersion() != null) {
            return pkg.getImplementationVersion();
        }
        return manifestVersion(location);
    }

    /** {@code Implementation-Version} from the manifest of the JAR at {@code location}, or {@link #UNKNOWN}. */
    static String manifestVersion(String location) {
        Path path = asFile(location);
        if (path == null || !Files.isRegularFile(path)) {
            return UNKNOWN;
        }
        try (JarFile jar = new JarFile(path.toFile())) {
            Manifest manifest = jar.getManifest();
            String version = manifest == null ? null
                    : manifest.getMainAttributes().getValue(Attributes.Name.IMPLEMENTATION_VERSION);
            return version == null || version.isBlank() ? UNKNOWN : version.trim();
        } catch (IOException | SecurityException e) {
            // A version is only informative; a JAR we cannot reopen is reported by whatever loads it.
            return UNKNOWN;
        }
    }

    /** A file path for {@code file:} URLs, so messages show what a person sees in the plugins folder. */
    private static String display(String url) {
        if (url.startsWith("file:")) {
            Path path = asFile(url);
            return path != null ? path.toString() : url;
        }
        return url;
    }

    /** {@code location} as a file: a {@code file:} URL or a plain path; {@code null} for anything else. */
    private static Path asFile(String location) {
        try {
            return location.startsWith("file:") ? Path.of(URI.create(location)) : Path.of(location);
        } catch (IllegalArgumentException | FileSystemNotFoundException e) {
            // InvalidPathException is an IllegalArgumentException: jrt:/ and other non-file locations.
            return null;
        }
    }
}
