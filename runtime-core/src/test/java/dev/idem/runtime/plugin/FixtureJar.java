package dev.idem.runtime.plugin;

import static java.nio.charset.StandardCharsets.UTF_8;

import dev.idem.spi.DedupStoreProvider;
import java.io.File;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * Builds a plugin JAR at test time: compiles Java sources against idem-api, adds
 * {@code META-INF/services} files and an optional manifest version. Lets each test state a broken
 * plugin in a few lines and load it through the real discovery.
 */
final class FixtureJar {

    private final Path dir;
    private final String fileName;
    private final Map<String, String> sources = new LinkedHashMap<>();
    private final Map<String, List<String>> services = new LinkedHashMap<>();
    private final Set<String> omitted = new HashSet<>();
    private final List<Path> classPath = new ArrayList<>();
    private final List<Path> bundled = new ArrayList<>();
    private String version;

    private FixtureJar(Path dir, String fileName) {
        this.dir = dir;
        this.fileName = fileName;
    }

    /** A JAR named {@code fileName} to be written in {@code dir}. */
    static FixtureJar in(Path dir, String fileName) {
        return new FixtureJar(dir, fileName);
    }

    /** Adds a class from its full source; the class name is taken from {@code className}. */
    FixtureJar source(String className, String source) {
        sources.put(className, source);
        return this;
    }

    /**
     * Adds a dedup store provider in package {@code fixture} with the given id, and lists it.
     * {@code body} goes into the class (a constructor, a static initialiser...).
     */
    FixtureJar storeProvider(String simpleName, String id, String body) {
        String className = "fixture." + simpleName;
        source(className, "package fixture;\n"
                + "import dev.idem.spi.*;\n"
                + "public class " + simpleName + " implements DedupStoreProvider {\n"
                + body + "\n"
                + "  public String id() { return \"" + id + "\"; }\n"
                + "  public ConfigSpec configSpec() { return ConfigSpec.empty(); }\n"
                + "  public DedupStore create(PluginConfig c, StoreContext x) { return null; }\n"
                + "}\n");
        return service(DedupStoreProvider.class, className);
    }

    /** Lists classes in {@code META-INF/services/<service>}, whether or not they exist. */
    FixtureJar service(Class<?> service, String... classNames) {
        services.computeIfAbsent(service.getName(), s -> new ArrayList<>()).addAll(List.of(classNames));
        return this;
    }

    /** Compiles the class but leaves it out of the JAR: a dependency missing from the plugin folder. */
    FixtureJar omit(String className) {
        omitted.add(className);
        return this;
    }

    /** Compiles the sources against these JARs too (beside idem-api), without putting them in the JAR. */
    FixtureJar classPath(List<Path> jars) {
        classPath.addAll(jars);
        return this;
    }

    /** Copies every class and resource of these JARs into this one, as a shaded handler JAR bundles its libraries. */
    FixtureJar bundle(List<Path> jars) {
        bundled.addAll(jars);
        return classPath(jars);
    }

    /** Writes {@code Implementation-Version} into the manifest. */
    FixtureJar version(String version) {
        this.version = version;
        return this;
    }

    Path build() {
        try {
            Path classes = Files.createTempDirectory(dir, "classes-");
            if (!sources.isEmpty()) {
                compile(classes);
            }
            Path jar = dir.resolve(fileName);
            Manifest manifest = new Manifest();
            manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
            if (version != null) {
                manifest.getMainAttributes().put(Attributes.Name.IMPLEMENTATION_VERSION, version);
            }
            try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), manifest);
                    Stream<Path> files = Files.walk(classes)) {
                for (Path file : (Iterable<Path>) files.filter(Files::isRegularFile).sorted()::iterator) {
                    String entry = classes.relativize(file).toString().replace('\\', '/');
                    String className = entry.substring(0, entry.length() - ".class".length()).replace('/', '.');
                    if (!omitted.contains(className)) {
                        write(out, entry, Files.readAllBytes(file));
                    }
                }
                Set<String> written = new HashSet<>();
                for (Path library : bundled) {
                    try (JarFile from = new JarFile(library.toFile())) {
                        for (JarEntry entry : Collections.list(from.entries())) {
                            String name = entry.getName();
                            if (!entry.isDirectory() && !name.startsWith("META-INF/") && written.add(name)) {
                                write(out, name, from.getInputStream(entry).readAllBytes());
                            }
                        }
                    }
                }
                for (Map.Entry<String, List<String>> service : services.entrySet()) {
                    write(out, "META-INF/services/" + service.getKey(),
                            (String.join("\n", service.getValue()) + "\n").getBytes(UTF_8));
                }
            }
            return jar;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void write(JarOutputStream out, String name, byte[] bytes) throws IOException {
        out.putNextEntry(new JarEntry(name));
        out.write(bytes);
        out.closeEntry();
    }

    private void compile(Path classes) throws IOException {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        if (javac == null) {
            throw new IllegalStateException("Tests need a JDK (javax.tools.JavaCompiler), not a JRE");
        }
        List<JavaFileObject> units = new ArrayList<>();
        sources.forEach((className, code) -> units.add(new Source(className, code)));
        StringWriter diagnostics = new StringWriter();
        try (StandardJavaFileManager files = javac.getStandardFileManager(null, null, UTF_8)) {
            StringBuilder path = new StringBuilder(apiClassPath());
            for (Path jar : classPath) {
                path.append(File.pathSeparator).append(jar);
            }
            List<String> options = List.of("--release", "17", "-classpath", path.toString(),
                    "-d", classes.toString(), "-proc:none");
            boolean ok = javac.getTask(diagnostics, files, null, options, null, units).call();
            if (!ok) {
                throw new IllegalStateException("Fixture " + fileName + " does not compile:\n" + diagnostics);
            }
        }
    }

    /** Where idem-api is: surefire's java.class.path may be a manifest-only JAR javac cannot use. */
    private static String apiClassPath() {
        try {
            return Path.of(DedupStoreProvider.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                    .toString();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    private static final class Source extends SimpleJavaFileObject {
        private final String code;

        Source(String className, String code) {
            super(URI.create("string:///" + className.replace('.', '/') + Kind.SOURCE.extension), Kind.SOURCE);
            this.code = code;
        }

        @Override
        public CharSequence getCharContent(boolean ignoreEncodingErrors) {
            return code;
        }
    }
}
