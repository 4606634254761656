package dev.idem.runtime.plugin;

import dev.idem.spi.PluginException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * Builds the isolated class loaders of a distribution's {@code plugins/} and {@code handlers/} folders.
 *
 * <p>{@code plugins/}: each subfolder is one plugin (its JAR and its dependencies) with one loader; a JAR
 * lying directly in {@code plugins/} is a plugin of its own. {@code handlers/}: each JAR gets its own
 * loader. A folder that does not exist yields no loader. Every unreadable JAR is reported, by file, in
 * one {@link PluginException}.
 */
public final class PluginDirectories {

    private PluginDirectories() {
    }

    /** One loader per plugin under {@code dir}, in name order. */
    public static List<IsolatedClassLoader> plugins(Path dir, ClassLoader parent) {
        return loaders(dir, parent, "plugin", true, jar -> IsolatedClassLoader.forJar(jar, "plugin", parent));
    }

    /** One loader per handler JAR under {@code dir}, in name order ({@link IsolatedClassLoader#forHandlerJar}). */
    public static List<IsolatedClassLoader> handlers(Path dir, ClassLoader parent) {
        return loaders(dir, parent, "handler", false, jar -> IsolatedClassLoader.forHandlerJar(jar, parent));
    }

    private static List<IsolatedClassLoader> loaders(Path dir, ClassLoader parent, String role, boolean folders,
            Function<Path, IsolatedClassLoader> forJar) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<Path> entries;
        try (Stream<Path> files = Files.list(dir)) {
            entries = files.sorted().toList();
        } catch (IOException e) {
            throw new PluginException("Cannot read the " + role + " folder " + dir + ": " + e.getMessage(), e);
        }
        List<IsolatedClassLoader> loaders = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        for (Path entry : entries) {
            try {
                if (folders && Files.isDirectory(entry)) {
                    loaders.add(IsolatedClassLoader.forFolder(entry, parent));
                } else if (entry.getFileName().toString().endsWith(".jar")) {
                    loaders.add(forJar.apply(entry));
                }
            } catch (PluginException e) {
                problems.add(e.getMessage());
            }
        }
        if (!problems.isEmpty()) {
            closeAll(loaders);
            throw new PluginException(problems.size() == 1 ? problems.get(0)
                    : problems.size() + " problems with " + dir + ":\n  - " + String.join("\n  - ", problems));
        }
        return List.copyOf(loaders);
    }

    private static void closeAll(List<IsolatedClassLoader> loaders) {
        for (IsolatedClassLoader loader : loaders) {
            try {
                loader.close();
            } catch (IOException ignored) {
                // Nothing was loaded through it yet; the start fails with the problems found.
            }
        }
    }
}
