package dev.idem.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;

/** Packs a test handler's package from the test classes into a JAR in an installation's {@code handlers/}. */
final class HandlerJar {

    private HandlerJar() {
    }

    /**
     * Writes every class of {@code handler}'s package (and nothing else of the test classes) to
     * {@code handlers/<jarName>}, where {@code bin/idem run} loads it in its own class loader.
     */
    static void install(Installation idem, Class<?> handler, String jarName) {
        try {
            Path classes = Path.of(handler.getProtectionDomain().getCodeSource().getLocation().toURI());
            Path pkg = classes.resolve(handler.getPackageName().replace('.', '/'));
            Manifest manifest = new Manifest();
            manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
            try (OutputStream file = Files.newOutputStream(idem.home.resolve("handlers").resolve(jarName));
                    JarOutputStream jar = new JarOutputStream(file, manifest);
                    Stream<Path> files = Files.walk(pkg)) {
                for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
                    jar.putNextEntry(new JarEntry(classes.relativize(f).toString().replace('\\', '/')));
                    Files.copy(f, jar);
                    jar.closeEntry();
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Packing " + handler.getName() + " into handlers/" + jarName, e);
        } catch (URISyntaxException e) {
            throw new IllegalStateException("The test classes of " + handler.getName() + " have no file location", e);
        }
    }
}
