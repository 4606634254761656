package dev.idem.runtime.plugin;

import dev.idem.spi.PluginException;
import java.io.IOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarFile;
import java.util.stream.Stream;

/**
 * The class loader of one plugin folder ({@code plugins/<id>/}) or one handler JAR, isolated the way
 * Kafka Connect isolates {@code plugin.path}: the JDK, {@code dev.idem.api}, {@code dev.idem.spi} and
 * SLF4J come from the parent, so the runtime and the plugin agree on them; every other class and
 * resource is looked up in the plugin's own JARs first and in the parent only when the plugin lacks it.
 * A handler that bundles its own Jackson or kafka-clients therefore runs with its version beside ours.
 *
 * <p>A handler JAR's loader ({@link #forHandlerJar}) also takes Jackson's annotations
 * ({@code com.fasterxml.jackson.annotation}) from the parent, and only them of Jackson: the runtime decodes typed
 * payloads into the handler's classes with its own Jackson, which sees an annotation only if it is its own class,
 * so a {@code @JsonProperty} compiled into a handler must resolve to the runtime's copy, even when the JAR bundles
 * one. Those annotations are one small artifact that only ever grows compatibly across Jackson 2.x (and Jackson 3
 * uses the same package), so a handler's own Jackson reads them as well. Jackson's core and databind stay the
 * handler's own.
 *
 * <p>Created by the launcher, one per folder or JAR; thread-safe (parallel capable).
 */
public final class IsolatedClassLoader extends URLClassLoader {

    static {
        ClassLoader.registerAsParallelCapable();
    }

    /** Packages always taken from the parent: the contract between the runtime and its plugins. */
    private static final String[] SHARED = {"dev.idem.api.", "dev.idem.spi.", "org.slf4j."};

    /** What a handler's loader takes from the parent: the contract, and the annotations of typed payloads. */
    private static final String[] SHARED_WITH_HANDLERS = {"dev.idem.api.", "dev.idem.spi.", "org.slf4j.",
            "com.fasterxml.jackson.annotation."};

    private static final ClassLoader PLATFORM = ClassLoader.getPlatformClassLoader();

    private final String location;
    private final String[] shared;

    private IsolatedClassLoader(String location, URL[] urls, ClassLoader parent, String[] shared) {
        super(location, urls, parent);
        this.location = location;
        this.shared = shared;
    }

    /**
     * A loader for every JAR in {@code folder} (not its subfolders).
     *
     * @throws PluginException if the folder holds no JAR or one of its JARs cannot be read, naming the file
     */
    public static IsolatedClassLoader forFolder(Path folder, ClassLoader parent) {
        List<Path> jars;
        try (Stream<Path> files = Files.list(folder)) {
            jars = files.filter(f -> f.getFileName().toString().endsWith(".jar")).sorted().toList();
        } catch (IOException e) {
            throw new PluginException("Cannot read the plugin folder " + folder + ": " + e.getMessage(), e);
        }
        if (jars.isEmpty()) {
            throw new PluginException("The plugin folder " + folder + " holds no JAR. Put the plugin's JAR and its"
                    + " dependencies there, or remove the folder");
        }
        List<URL> urls = new ArrayList<>();
        for (Path jar : jars) {
            urls.add(checkedJar(jar, "plugin"));
        }
        return new IsolatedClassLoader(folder.toString(), urls.toArray(URL[]::new), parent, SHARED);
    }

    /**
     * A loader for one JAR.
     *
     * @param role what the JAR is, for error messages ("handler", "plugin")
     * @throws PluginException if the file is not a readable JAR, naming it
     */
    public static IsolatedClassLoader forJar(Path jar, String role, ClassLoader parent) {
        return new IsolatedClassLoader(jar.toString(), new URL[] {checkedJar(jar, role)}, parent, SHARED);
    }

    /**
     * A loader for one handler JAR: as {@link #forJar}, and Jackson's annotations come from the parent (see above).
     *
     * @throws PluginException if the file is not a readable JAR, naming it
     */
    public static IsolatedClassLoader forHandlerJar(Path jar, ClassLoader parent) {
        return new IsolatedClassLoader(jar.toString(), new URL[] {checkedJar(jar, "handler")}, parent,
                SHARED_WITH_HANDLERS);
    }

    private static URL checkedJar(Path jar, String role) {
        try (JarFile ignored = new JarFile(jar.toFile())) {
            return jar.toUri().toURL();
        } catch (MalformedURLException e) {
            throw new PluginException("Cannot turn " + jar + " into a URL: " + e.getMessage(), e);
        } catch (IOException | SecurityException e) {
            throw new PluginException("The " + role + " JAR " + jar + " is not a readable JAR file (" + e.getMessage()
                    + "). Rebuild it, or remove it from its folder", e);
        }
    }

    /** The folder or JAR this loader reads, for messages. */
    public String location() {
        return location;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        synchronized (getClassLoadingLock(name)) {
            Class<?> type = findLoadedClass(name);
            if (type == null) {
                type = shared(name) ? getParent().loadClass(name) : jdkClass(name);
            }
            if (type == null) {
                try {
                    type = findClass(name);
                } catch (ClassNotFoundException notOurs) {
                    type = getParent().loadClass(name);
                }
            }
            if (resolve) {
                resolveClass(type);
            }
            return type;
        }
    }

    private boolean shared(String name) {
        for (String prefix : shared) {
            if (name.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    /** The JDK's class of that name, or null when the JDK has none. */
    private static Class<?> jdkClass(String name) throws ClassNotFoundException {
        if (name.startsWith("java.")) {
            return PLATFORM.loadClass(name);
        }
        try {
            return PLATFORM.loadClass(name);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    @Override
    public URL getResource(String name) {
        URL own = findResource(name);
        return own != null ? own : getParent().getResource(name);
    }

    @Override
    public Enumeration<URL> getResources(String name) throws IOException {
        List<URL> all = new ArrayList<>(Collections.list(findResources(name)));
        all.addAll(Collections.list(getParent().getResources(name)));
        return Collections.enumeration(all);
    }

    @Override
    public String toString() {
        return "IsolatedClassLoader[" + location + "]";
    }
}
