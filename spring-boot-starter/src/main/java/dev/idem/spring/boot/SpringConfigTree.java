package dev.idem.spring.boot;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.runtime.config.PluginSpecs.Kind;
import dev.idem.runtime.config.RuntimeConfigSpecs;
import dev.idem.runtime.plugin.PluginRegistry;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.ConfigSpec;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName.Form;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.ConfigurableEnvironment;

/**
 * The {@code idem.} subtree of Spring's {@link ConfigurableEnvironment} as the nested maps and lists Idem's
 * {@code ConfigLoader} reads from {@code conf/idem.yaml}, so that the same declarations validate it with the same
 * messages.
 *
 * <p>Why it is built by hand rather than bound to a properties class: the keys are declared by the runtime and the
 * plugins found at run time ({@link ConfigKey}), not by Java fields, and Idem reports unknown keys, which a binder
 * would drop. What Spring's relaxed binding means is kept:
 * <ul>
 *   <li>every property source counts, in Spring's order: the first that sets a name wins; a list
 *       ({@code id[0].type}) comes whole from the first source that sets any of its elements;</li>
 *   <li>names compare as Spring compares them (case and dashes aside), so {@code IDEM_PIPELINES_ORDERS_MAXINFLIGHT}
 *       overrides {@code idem.pipelines.orders.max-in-flight}; a name that lost its dashes (an environment variable,
 *       camelCase) is written back as the declared key it matches;</li>
 *   <li>Spring resolves its own placeholders ({@code ${spring.datasource.url}}, {@code ${VAR:default}}); what is left
 *       is literal text, so Idem's {@code ${VAR}} syntax does not apply a second time.</li>
 * </ul>
 * Below {@code broker.<type>}, {@code store.<type>}, {@code pipelines.<name>} and {@code runtime}, keys are written
 * flat ({@code retry.max-attempts}), which Idem reads as it reads nested sections, so a key such as
 * {@code transactional} may stand beside {@code transactional.group}.
 *
 * <p>Not thread-safe; used once per context.
 */
final class SpringConfigTree {

    static final String PREFIX = "idem";
    /** The starter's own switch, not an Idem key. */
    static final String ENABLED = "enabled";

    private static final ConfigurationPropertyName ROOT = ConfigurationPropertyName.of(PREFIX);
    private static final String BROKER = "broker";
    private static final String STORE = "store";
    private static final String PIPELINES = "pipelines";
    private static final String RUNTIME = "runtime";
    private static final String TYPE = "type";
    /** The structured pipeline keys: lists of ID extractor entries. */
    private static final List<String> EXTRACTOR_LISTS = List.of(RuntimeConfigSpecs.ID, RuntimeConfigSpecs.ORDERING_KEY,
            RuntimeConfigSpecs.SEQUENCE_AGGREGATE, RuntimeConfigSpecs.SEQUENCE_NUMBER);

    private final ConfigurableEnvironment environment;
    private final PluginRegistry plugins;

    SpringConfigTree(ConfigurableEnvironment environment, PluginRegistry plugins) {
        this.environment = environment;
        this.plugins = plugins;
    }

    /** One property: its name's elements below {@code idem.}, and its value as text ({@code null} for empty). */
    private record Entry(List<String> elements, List<Boolean> indexed, String value) {
    }

    /** A {@link #tree()} as Idem's YAML text (JSON, which is YAML), ready for {@code Idem.builder().configYaml}. */
    static String yaml(Map<String, Object> tree) {
        try {
            return new ObjectMapper().writeValueAsString(tree);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("Cannot write the idem.* properties as YAML", e);
        }
    }

    /** The configuration as the maps, lists and strings Idem's loader reads from YAML, in file order. */
    Map<String, Object> tree() {
        List<Entry> entries = entries();
        Map<String, String> pipelineNames = preferDashed(entries, PIPELINES);
        Map<String, Object> root = new LinkedHashMap<>();
        for (Entry e : entries) {
            List<String> el = e.elements();
            String top = el.get(0);
            if (el.size() == 1 && !top.equals(ENABLED)) {
                root.put(top, e.value());
                continue;
            }
            switch (top) {
                case ENABLED -> {
                }
                case BROKER, STORE -> {
                    Map<String, Object> section = section(root, top);
                    String id = el.get(1);
                    if (el.size() == 2 && top.equals(STORE)) {
                        // type, or the runtime's own store keys (key-digest, IDEM_STORE_KEYDIGEST).
                        insert(section, e, 1, RuntimeConfigSpecs.STORE.names());
                    } else if (el.size() == 2) {
                        section.put(id, e.value());
                    } else {
                        Kind kind = top.equals(BROKER) ? Kind.BROKER : Kind.STORE;
                        insert(section(section, id), e, 2, names(kind, id));
                    }
                }
                case PIPELINES -> {
                    Map<String, Object> pipelines = section(root, PIPELINES);
                    String name = pipelineNames.getOrDefault(el.get(1), el.get(1));
                    if (el.size() == 2) {
                        pipelines.put(name, e.value());
                    } else {
                        insert(section(pipelines, name), e, 2, pipelineNames());
                    }
                }
                case RUNTIME -> insert(section(root, RUNTIME), e, 1, RuntimeConfigSpecs.RUNTIME.names());
                default -> insert(section(root, top), e, 1, List.of());
            }
        }
        defaultJdbcStoreFromDataSource(root);
        return root;
    }

    /**
     * With {@code store.type: jdbc} and no {@code store.jdbc.url}, the store reaches the database of
     * {@code spring.datasource.*}: the one transactional mode shares with the application.
     */
    @SuppressWarnings("unchecked")
    private void defaultJdbcStoreFromDataSource(Map<String, Object> root) {
        if (!(root.get(STORE) instanceof Map<?, ?> store) || !"jdbc".equals(store.get(TYPE))) {
            return;
        }
        String url = environment.getProperty("spring.datasource.url");
        Object jdbc = store.get("jdbc");
        if (url == null || (jdbc != null && !(jdbc instanceof Map<?, ?>))
                || (jdbc instanceof Map<?, ?> section && section.containsKey("url"))) {
            return;
        }
        Map<String, Object> section = section((Map<String, Object>) store, "jdbc");
        section.put("url", escape(url));
        String user = environment.getProperty("spring.datasource.username");
        String password = environment.getProperty("spring.datasource.password");
        if (user != null && !section.containsKey("username")) {
            section.put("username", escape(user));
        }
        if (password != null && !section.containsKey("password")) {
            section.put("password", escape(password));
        }
    }

    /** Every {@code idem.*} property, in Spring's order of precedence, each name once. */
    private List<Entry> entries() {
        List<ConfigurationPropertyName> seen = new ArrayList<>();
        Map<ConfigurationPropertyName, ConfigurationPropertySource> listOwners = new HashMap<>();
        List<Entry> entries = new ArrayList<>();
        for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
            if (!(source instanceof IterableConfigurationPropertySource iterable)) {
                continue;
            }
            for (ConfigurationPropertyName name : (Iterable<ConfigurationPropertyName>)
                    iterable.filter(ROOT::isAncestorOf).stream()::iterator) {
                if (seen.contains(name) || !ownsItsLists(name, source, listOwners)) {
                    continue;
                }
                ConfigurationProperty property = source.getConfigurationProperty(name);
                if (property == null) {
                    continue;
                }
                seen.add(name);
                List<String> elements = new ArrayList<>();
                List<Boolean> indexed = new ArrayList<>();
                for (int i = 1; i < name.getNumberOfElements(); i++) {
                    elements.add(name.getElement(i, Form.ORIGINAL));
                    indexed.add(name.isNumericIndex(i));
                }
                entries.add(new Entry(elements, indexed, text(property.getValue())));
            }
        }
        return entries;
    }

    /** Spring's rule for lists: one source gives all of a list's elements. */
    private static boolean ownsItsLists(ConfigurationPropertyName name, ConfigurationPropertySource source,
            Map<ConfigurationPropertyName, ConfigurationPropertySource> owners) {
        for (int i = 1; i < name.getNumberOfElements(); i++) {
            if (name.isNumericIndex(i)) {
                ConfigurationPropertySource owner = owners.putIfAbsent(name.chop(i), source);
                if (owner != null && owner != source) {
                    return false;
                }
            }
        }
        return true;
    }

    private String text(Object value) {
        if (value == null) {
            return null;
        }
        String text = value instanceof String s ? environment.resolveRequiredPlaceholders(s) : String.valueOf(value);
        // "lease:" with nothing after it is "" in Spring and absent in Idem: its default applies, as in idem.yaml.
        return text.isEmpty() ? null : escape(text);
    }

    /** Spring resolved its placeholders: what is left is literal, and Idem must not read it as its own ${VAR}. */
    private static String escape(String text) {
        return text.replace("${", "$${");
    }

    /**
     * Adds one value below a section: the elements from {@code from} on, joined with dots, up to a list index, then
     * on in the indexed entry. The first name is written back as the declared key it matches.
     */
    @SuppressWarnings("unchecked")
    private void insert(Map<String, Object> section, Entry e, int from, Collection<String> declared) {
        Map<String, Object> at = section;
        Collection<String> names = declared;
        List<String> key = new ArrayList<>();
        List<String> el = e.elements();
        for (int i = from; i < el.size(); i++) {
            if (!e.indexed().get(i)) {
                key.add(el.get(i));
                continue;
            }
            String listName = canonical(key, names);
            int index = Integer.parseInt(el.get(i));
            Object current = at.get(listName);
            List<Object> list = current instanceof List<?> l ? (List<Object>) l : new ArrayList<>();
            at.put(listName, list);
            while (list.size() <= index) {
                list.add(null);
            }
            if (i == el.size() - 1) {
                list.set(index, e.value());
                return;
            }
            if (!(list.get(index) instanceof Map<?, ?>)) {
                list.set(index, new LinkedHashMap<String, Object>());
            }
            at = (Map<String, Object>) list.get(index);
            names = EXTRACTOR_LISTS.contains(listName) ? extractorNames() : List.of();
            key.clear();
        }
        at.put(canonical(key, names), e.value());
    }

    /** The keys an ID extractor entry may hold: {@code type} and those of every extractor installed. */
    private List<String> extractorNames() {
        List<String> names = new ArrayList<>(List.of(TYPE));
        for (String id : plugins.ids(Kind.ID_EXTRACTOR)) {
            names.addAll(names(Kind.ID_EXTRACTOR, id));
        }
        return names;
    }

    private List<String> names(Kind kind, String id) {
        return plugins.spec(kind, id).map(ConfigSpec::names).orElse(List.of());
    }

    private static List<String> pipelineNames() {
        List<String> names = new ArrayList<>(RuntimeConfigSpecs.PIPELINE.names());
        names.addAll(EXTRACTOR_LISTS);
        return names;
    }

    /**
     * The dotted name of {@code elements}, its longest leading part that matches a declared key apart from case and
     * dashes written as that key ({@code maxinflight} as {@code max-in-flight}, {@code client.bootstrap.servers}
     * with {@code client} declared as itself).
     */
    static String canonical(List<String> elements, Collection<String> declared) {
        for (int n = elements.size(); n > 0; n--) {
            String head = uniform(String.join(".", elements.subList(0, n)));
            for (String name : declared) {
                if (uniform(name).equals(head)) {
                    List<String> parts = new ArrayList<>(List.of(name));
                    parts.addAll(elements.subList(n, elements.size()));
                    return String.join(".", parts);
                }
            }
        }
        return String.join(".", elements);
    }

    private static String uniform(String name) {
        return name.replace("-", "").toLowerCase(Locale.ROOT);
    }

    /**
     * Pipeline names as written with their dashes: an environment variable cannot hold one, so
     * {@code IDEM_PIPELINES_ORDEREVENTS_CONCURRENCY} sets {@code order-events} when that pipeline is declared.
     */
    private static Map<String, String> preferDashed(List<Entry> entries, String top) {
        Map<String, String> byUniform = new HashMap<>();
        Set<String> names = new LinkedHashSet<>();
        for (Entry e : entries) {
            if (e.elements().size() > 1 && e.elements().get(0).equals(top)) {
                names.add(e.elements().get(1));
            }
        }
        for (String name : names) {
            byUniform.merge(uniform(name), name, (a, b) -> a.contains("-") ? a : b);
        }
        Map<String, String> preferred = new HashMap<>();
        for (String name : names) {
            preferred.put(name, byUniform.get(uniform(name)));
        }
        return preferred;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> section(Map<String, Object> parent, String name) {
        Object existing = parent.get(name);
        if (existing instanceof Map<?, ?>) {
            return (Map<String, Object>) existing;
        }
        Map<String, Object> created = new LinkedHashMap<>();
        parent.put(name, created);
        return created;
    }
}
