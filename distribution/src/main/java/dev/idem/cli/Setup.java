package dev.idem.cli;

import dev.idem.runtime.Idem;
import dev.idem.runtime.config.ConfigLoader;
import dev.idem.runtime.config.IdemConfig;
import dev.idem.runtime.plugin.IsolatedClassLoader;
import dev.idem.runtime.plugin.PluginDirectories;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.ConfigException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What every command starts from: the configuration file, one isolated class loader per plugin folder
 * and per handler JAR, and the environment {@code ${VAR}} resolves against ({@code IDEM_HOME} included).
 *
 * <p>The loaders stay open until the JVM exits; nothing closes them. A command is one process, and closing
 * a loader only releases JAR handles the exit releases anyway, while closing it early breaks plugin code that
 * still runs after the command is done with the plugin: client threads that outlive the plugin's
 * {@code close()} (RabbitMQ's connection thread after a handshake timeout) and exceptions whose messages are
 * built when printed (Jdbi's), both failing with {@code NoClassDefFoundError} once their JARs are closed.
 */
final class Setup {

    final Home home;
    final Path configFile;
    final Map<String, String> env;
    private final List<IsolatedClassLoader> pluginLoaders;
    private final List<IsolatedClassLoader> handlerLoaders;

    private Setup(Home home, Path configFile, Map<String, String> env, List<IsolatedClassLoader> pluginLoaders,
            List<IsolatedClassLoader> handlerLoaders) {
        this.home = home;
        this.configFile = configFile;
        this.env = env;
        this.pluginLoaders = pluginLoaders;
        this.handlerLoaders = handlerLoaders;
    }

    /**
     * @param config the file the user named, or null for {@code conf/idem.yaml} under the home
     * @throws ConfigException if the file does not exist or is not a regular file (a folder, a pipe)
     * @throws dev.idem.spi.PluginException naming every unreadable plugin or handler JAR
     */
    static Setup open(Home home, Path config) {
        return open(home, config, true);
    }

    /** As {@link #open(Home, Path)}; with {@code configRequired} false a missing file is not an error. */
    static Setup open(Home home, Path config, boolean configRequired) {
        Path file = config != null ? config.toAbsolutePath().normalize() : home.defaultConfig();
        if (configRequired && !Files.isRegularFile(file)) {
            throw new ConfigException(notAFile(file));
        }
        Map<String, String> env = new HashMap<>(System.getenv());
        env.putIfAbsent("IDEM_HOME", home.root().toString());
        ClassLoader parent = Setup.class.getClassLoader();
        List<IsolatedClassLoader> plugins = PluginDirectories.plugins(home.plugins(), parent);
        List<IsolatedClassLoader> handlers = PluginDirectories.handlers(home.handlers(), parent);
        return new Setup(home, file, Map.copyOf(env), plugins, handlers);
    }

    /** Why {@code file} cannot be read as the configuration: what it is instead of a regular file. */
    private static String notAFile(Path file) {
        if (Files.isDirectory(file)) {
            return "Configuration file " + file + " is a folder, not a file. Pass --config FILE naming the YAML file"
                    + (Files.isRegularFile(file.resolve("idem.yaml")) ? ", such as " + file.resolve("idem.yaml") : "");
        }
        if (Files.exists(file)) {
            return "Configuration file " + file + " is not a regular file (a pipe, a socket or a device), which idem"
                    + " does not read. Pass --config FILE naming the YAML file";
        }
        return "Configuration file " + file + " does not exist. Pass --config FILE, or run from an installation whose"
                + " conf/idem.yaml exists";
    }

    /** The runtime's own loader (built-in ID extractors) and each plugin folder's. */
    List<ClassLoader> pluginLoaders() {
        List<ClassLoader> loaders = new ArrayList<>();
        loaders.add(Setup.class.getClassLoader());
        loaders.addAll(pluginLoaders);
        return loaders;
    }

    PluginRegistry plugins() {
        return PluginRegistry.discover(pluginLoaders());
    }

    /** The validated configuration, read against the discovered plugins' declared keys. */
    IdemConfig config(PluginRegistry registry) {
        return ConfigLoader.load(configFile, env, registry);
    }

    Idem.Builder builder() {
        return Idem.builder().configFile(configFile).env(env).pluginLoaders(pluginLoaders())
                .handlerLoaders(handlerLoaders.isEmpty() ? List.of(Setup.class.getClassLoader()) : handlerLoaders);
    }
}
