package dev.idem.cli;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;

/**
 * The installation folder and its layout: {@code conf/}, {@code plugins/}, {@code handlers/},
 * {@code data/}, {@code logs/}. {@code bin/idem} passes it as {@code -Didem.home}; without it the
 * {@code IDEM_HOME} variable, else the working directory, is taken.
 */
record Home(Path root) {

    static Home detect() {
        String property = System.getProperty("idem.home");
        if (property != null && !property.isBlank()) {
            return new Home(Path.of(property).toAbsolutePath().normalize());
        }
        String variable = System.getenv("IDEM_HOME");
        if (variable != null && !variable.isBlank()) {
            return new Home(Path.of(variable).toAbsolutePath().normalize());
        }
        return new Home(Path.of("").toAbsolutePath());
    }

    Path defaultConfig() {
        return root.resolve("conf").resolve("idem.yaml");
    }

    Path plugins() {
        return root.resolve("plugins");
    }

    Path handlers() {
        return root.resolve("handlers");
    }

    /** A location (a file path, or a description such as "unknown") relative to the home where it is a path. */
    String show(String location) {
        try {
            Path path = Path.of(location);
            return path.isAbsolute() ? show(path) : location;
        } catch (InvalidPathException e) {
            return location;
        }
    }

    /** A path relative to the home, as the user reads it in messages. */
    String show(Path path) {
        Path absolute = path.toAbsolutePath().normalize();
        return absolute.startsWith(root) ? root.relativize(absolute).toString() : absolute.toString();
    }
}
