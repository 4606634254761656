package dev.idem.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The public types of runtime-core outside {@code dev.idem.runtime.internal} are what the CLI and embedders are meant
 * to use, so a new one is a decision: add it to {@link #ANNOUNCED} on purpose (with its Javadoc), or make it
 * package-private, or put it under {@code internal}. And only runtime-core may use its {@code internal} packages.
 */
class PublicApiTest {

    /** Every public top-level type of runtime-core outside {@code internal}, by qualified name. */
    private static final List<String> ANNOUNCED = List.of(
            "dev.idem.runtime.Idem",
            "dev.idem.runtime.IdemRuntime",
            "dev.idem.runtime.OutcomeListener",
            "dev.idem.runtime.TypedPayloads",
            "dev.idem.runtime.config.CommitPolicy",
            "dev.idem.runtime.config.ConfigDocs",
            "dev.idem.runtime.config.ConfigLoader",
            "dev.idem.runtime.config.ConfigPrinter",
            "dev.idem.runtime.config.IdemConfig",
            "dev.idem.runtime.config.KeyDigest",
            "dev.idem.runtime.config.PayloadPolicy",
            "dev.idem.runtime.config.PipelineConfig",
            "dev.idem.runtime.config.PluginSection",
            "dev.idem.runtime.config.PluginSpecs",
            "dev.idem.runtime.config.RetryPolicy",
            "dev.idem.runtime.config.RuntimeConfigSpecs",
            "dev.idem.runtime.config.RuntimeSettings",
            "dev.idem.runtime.config.SequencePolicy",
            "dev.idem.runtime.extract.BrokerIdExtractorProvider",
            "dev.idem.runtime.extract.CloudEventsIdExtractorProvider",
            "dev.idem.runtime.extract.HeaderIdExtractorProvider",
            "dev.idem.runtime.extract.JsonPointerIdExtractorProvider",
            "dev.idem.runtime.extract.PayloadHash",
            "dev.idem.runtime.extract.Sha256IdExtractorProvider",
            "dev.idem.runtime.extract.TemplateIdExtractorProvider",
            "dev.idem.runtime.plugin.CodeLocations",
            "dev.idem.runtime.plugin.IsolatedClassLoader",
            "dev.idem.runtime.plugin.PluginDescriptor",
            "dev.idem.runtime.plugin.PluginDirectories",
            "dev.idem.runtime.plugin.PluginRegistry");

    private static final Pattern INTERNAL_IMPORT = Pattern.compile("(?m)^import (static )?dev\\.idem\\.runtime\\.internal\\.");

    private static final Pattern PUBLIC_TYPE =
            Pattern.compile("(?m)^public (?:final |abstract |sealed |non-sealed )*(?:class|interface|record|enum|@interface) ");

    @Test
    void theRuntimesPublicTypesOutsideInternalAreTheAnnouncedOnes() throws IOException {
        Path sources = projectRoot().resolve("runtime-core/src/main/java");
        TreeSet<String> found = new TreeSet<>();
        try (Stream<Path> files = Files.walk(sources)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                String type = sources.relativize(file).toString().replace('/', '.').replaceAll("\\.java$", "");
                if (!type.startsWith("dev.idem.runtime.internal.") && PUBLIC_TYPE.matcher(Files.readString(file)).find()) {
                    found.add(type);
                }
            }
        }
        assertThat(found).as("public types of runtime-core outside dev.idem.runtime.internal; a new one is announced in"
                + " PublicApiTest, made package-private or moved under internal").containsExactlyElementsOf(
                new TreeSet<>(ANNOUNCED));
    }

    @Test
    void onlyTheRuntimeUsesItsInternalPackages() throws IOException {
        Path root = projectRoot();
        TreeSet<String> users = new TreeSet<>();
        try (Stream<Path> modules = Files.list(root)) {
            for (Path module : modules.filter(m -> Files.isDirectory(m.resolve("src")))
                    .filter(m -> !m.getFileName().toString().equals("runtime-core")).toList()) {
                try (Stream<Path> files = Files.walk(module.resolve("src"))) {
                    for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                        if (INTERNAL_IMPORT.matcher(Files.readString(file)).find()) {
                            users.add(root.relativize(file).toString());
                        }
                    }
                }
            }
        }
        assertThat(users).as("code outside runtime-core that imports dev.idem.runtime.internal").isEmpty();
    }

    private static Path projectRoot() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isDirectory(dir.resolve("runtime-core"))) {
            dir = dir.getParent();
        }
        return dir;
    }
}
