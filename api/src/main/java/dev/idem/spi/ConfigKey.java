package dev.idem.spi;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * One declared configuration key: its name, type, default, validation rules and doc.
 * Declared once, in a {@link ConfigSpec}; the runtime validates user values against it,
 * generates docs from it, and hands plugins typed values through {@link PluginConfig}.
 *
 * <p>Immutable and thread-safe: the {@code with}-style methods return new instances.
 *
 * <p>Names are lowercase, dash-separated and may be dotted ({@code retry.max-attempts})
 * to nest under a YAML section. A {@link Type#MAP} key takes a whole YAML subtree as
 * flattened dotted string pairs; it is how native client settings pass through.
 *
 * @param <T> the Java type of the value
 */
public final class ConfigKey<T> {

    /** The value types a key may have, and how each is written in YAML. */
    public enum Type {
        STRING("a string"),
        INT("an integer"),
        LONG("an integer"),
        DOUBLE("a number"),
        BOOLEAN("true or false"),
        DURATION("a duration such as 500ms, 30s, 5m, 2h, 7d or ISO-8601 PT30S"),
        SECRET("a string (a secret, masked when printed)"),
        ENUM("one of the listed values"),
        LIST("a list of strings"),
        MAP("a map of settings");

        private final String accepted;

        Type(String accepted) {
            this.accepted = accepted;
        }

        /** What a user may write for this type, for error messages. */
        public String accepted() {
            return accepted;
        }
    }

    private record Rule<T>(Predicate<T> test, String description) {
    }

    private final String name;
    private final Type type;
    private final Class<T> javaType;
    private final T defaultValue;
    private final boolean required;
    private final List<String> allowed;
    private final List<Rule<T>> rules;
    private final String doc;

    private ConfigKey(String name, Type type, Class<T> javaType, T defaultValue, boolean required,
            List<String> allowed, List<Rule<T>> rules, String doc) {
        this.name = requireName(name);
        this.type = type;
        this.javaType = javaType;
        this.defaultValue = defaultValue;
        this.required = required;
        this.allowed = allowed;
        this.rules = rules;
        this.doc = doc;
    }

    private static String requireName(String name) {
        Objects.requireNonNull(name, "name");
        if (!name.matches("[a-z0-9]+(-[a-z0-9]+)*(\\.[a-z0-9]+(-[a-z0-9]+)*)*")) {
            throw new IllegalArgumentException("Config key name '" + name
                    + "' must be lowercase words separated by '-' and sections by '.'");
        }
        return name;
    }

    private static <T> ConfigKey<T> of(String name, Type type, Class<T> javaType) {
        return new ConfigKey<>(name, type, javaType, null, false, List.of(), List.of(), "");
    }

    public static ConfigKey<String> string(String name) {
        return of(name, Type.STRING, String.class);
    }

    public static ConfigKey<Integer> integer(String name) {
        return of(name, Type.INT, Integer.class);
    }

    public static ConfigKey<Long> longValue(String name) {
        return of(name, Type.LONG, Long.class);
    }

    public static ConfigKey<Double> decimal(String name) {
        return of(name, Type.DOUBLE, Double.class);
    }

    public static ConfigKey<Boolean> bool(String name) {
        return of(name, Type.BOOLEAN, Boolean.class);
    }

    public static ConfigKey<Duration> duration(String name) {
        return of(name, Type.DURATION, Duration.class);
    }

    public static ConfigKey<Secret> secret(String name) {
        return of(name, Type.SECRET, Secret.class);
    }

    /** A string restricted to {@code allowed} values (matched case-sensitively, lowercase by convention). */
    public static ConfigKey<String> oneOf(String name, String... allowed) {
        if (allowed.length == 0) {
            throw new IllegalArgumentException("oneOf key '" + name + "' needs at least one value");
        }
        return new ConfigKey<>(name, Type.ENUM, String.class, null, false, List.of(allowed), List.of(), "");
    }

    @SuppressWarnings("unchecked")
    public static ConfigKey<List<String>> list(String name) {
        return of(name, Type.LIST, (Class<List<String>>) (Class<?>) List.class);
    }

    /** A free-form subtree, flattened to dotted keys with string values (native client settings). */
    @SuppressWarnings("unchecked")
    public static ConfigKey<Map<String, String>> map(String name) {
        return new ConfigKey<>(name, Type.MAP, (Class<Map<String, String>>) (Class<?>) Map.class,
                Map.of(), false, List.of(), List.of(), "");
    }

    /** The value used when the user gives none. */
    public ConfigKey<T> defaultValue(T value) {
        Objects.requireNonNull(value, "default value of " + name);
        return new ConfigKey<>(name, type, javaType, value, false, allowed, rules, doc);
    }

    /** The user must give a value; there is no default. */
    public ConfigKey<T> required() {
        return new ConfigKey<>(name, type, javaType, null, true, allowed, rules, doc);
    }

    /** The documentation shown in generated docs and {@code conf/idem.yaml} comments. */
    public ConfigKey<T> doc(String doc) {
        return new ConfigKey<>(name, type, javaType, defaultValue, required, allowed, rules, doc);
    }

    /**
     * Adds a rule the value must satisfy.
     *
     * @param test the rule
     * @param description what is accepted, completing "must ...", e.g. {@code "be at least 1s"}
     */
    public ConfigKey<T> validate(Predicate<T> test, String description) {
        List<Rule<T>> more = new ArrayList<>(rules);
        more.add(new Rule<>(test, description));
        return new ConfigKey<>(name, type, javaType, defaultValue, required, allowed, List.copyOf(more), doc);
    }

    /** Shorthand for a lower bound on a number or duration. */
    @SuppressWarnings("unchecked")
    public ConfigKey<T> atLeast(T minimum) {
        return validate(v -> ((Comparable<T>) v).compareTo(minimum) >= 0, "be at least " + format(minimum));
    }

    /** Shorthand for an upper bound on a number or duration. */
    @SuppressWarnings("unchecked")
    public ConfigKey<T> atMost(T maximum) {
        return validate(v -> ((Comparable<T>) v).compareTo(maximum) <= 0, "be at most " + format(maximum));
    }

    public String name() {
        return name;
    }

    public Type type() {
        return type;
    }

    public Class<T> javaType() {
        return javaType;
    }

    /** The default, or {@code null} when the key is required or optional without default. */
    public T defaultValue() {
        return defaultValue;
    }

    public boolean isRequired() {
        return required;
    }

    /** The values an {@link Type#ENUM} key accepts; empty for other types. */
    public List<String> allowedValues() {
        return allowed;
    }

    public String doc() {
        return doc;
    }

    /** What a user may write, for error messages and docs: type, allowed values and rules. */
    public String describeAccepted() {
        StringBuilder s = new StringBuilder(type == Type.ENUM ? "one of " + allowed : type.accepted());
        for (int i = 0; i < rules.size(); i++) {
            s.append(i == 0 ? " that must " : " and ").append(rules.get(i).description());
        }
        return s.toString();
    }

    /**
     * Converts a raw YAML value (a string, number, boolean, list or map) to this key's type
     * and applies the rules.
     *
     * @throws IllegalArgumentException with a message saying what is accepted, when the value is not
     */
    public T parse(Object raw) {
        T value = convert(raw);
        for (Rule<T> rule : rules) {
            if (!rule.test().test(value)) {
                throw new IllegalArgumentException("must " + rule.description());
            }
        }
        return value;
    }

    /** Formats a value the way a user writes it; secrets masked. */
    public String format(Object value) {
        if (value == null) {
            return "";
        }
        if (value instanceof Duration d) {
            return formatDuration(d);
        }
        return value.toString();
    }

    @SuppressWarnings("unchecked")
    private T convert(Object raw) {
        Objects.requireNonNull(raw, "raw value");
        String text = raw instanceof String s ? s.trim() : null;
        try {
            switch (type) {
                case STRING:
                    return (T) scalar(raw);
                case SECRET:
                    return (T) new Secret(scalar(raw));
                case ENUM: {
                    String v = scalar(raw);
                    if (!allowed.contains(v)) {
                        throw new IllegalArgumentException("must be one of " + allowed);
                    }
                    return (T) v;
                }
                case INT:
                    if (raw instanceof Integer i) {
                        return (T) i;
                    }
                    return (T) Integer.valueOf(Integer.parseInt(requireText(text)));
                case LONG:
                    if (raw instanceof Number n && !(raw instanceof Double) && !(raw instanceof Float)) {
                        return (T) Long.valueOf(n.longValue());
                    }
                    return (T) Long.valueOf(Long.parseLong(requireText(text)));
                case DOUBLE:
                    if (raw instanceof Number n) {
                        return (T) Double.valueOf(n.doubleValue());
                    }
                    return (T) Double.valueOf(Double.parseDouble(requireText(text)));
                case BOOLEAN:
                    if (raw instanceof Boolean b) {
                        return (T) b;
                    }
                    if ("true".equalsIgnoreCase(text) || "false".equalsIgnoreCase(text)) {
                        return (T) Boolean.valueOf(text);
                    }
                    throw new IllegalArgumentException("must be true or false");
                case DURATION:
                    return (T) parseDuration(raw instanceof String ? text : String.valueOf(raw));
                case LIST: {
                    if (raw instanceof List<?> items) {
                        List<String> out = new ArrayList<>(items.size());
                        for (Object item : items) {
                            out.add(scalar(item));
                        }
                        return (T) List.copyOf(out);
                    }
                    String v = scalar(raw);
                    List<String> out = new ArrayList<>();
                    for (String part : v.split(",")) {
                        if (!part.isBlank()) {
                            out.add(part.trim());
                        }
                    }
                    return (T) List.copyOf(out);
                }
                case MAP: {
                    if (!(raw instanceof Map<?, ?> tree)) {
                        throw new IllegalArgumentException("must be " + type.accepted());
                    }
                    Map<String, String> flat = new LinkedHashMap<>();
                    flatten("", tree, flat);
                    return (T) Collections.unmodifiableMap(flat);
                }
                default:
                    throw new IllegalStateException("unhandled type " + type);
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("must be " + describeAccepted(), e);
        }
    }

    private static String requireText(String text) {
        if (text == null) {
            throw new NumberFormatException();
        }
        return text;
    }

    private String scalar(Object raw) {
        if (raw instanceof Map<?, ?> || raw instanceof List<?>) {
            throw new IllegalArgumentException("must be " + describeAccepted() + ", not a "
                    + (raw instanceof Map<?, ?> ? "map" : "list"));
        }
        return String.valueOf(raw);
    }

    private static void flatten(String prefix, Map<?, ?> tree, Map<String, String> out) {
        for (Map.Entry<?, ?> e : tree.entrySet()) {
            String key = prefix + e.getKey();
            if (e.getValue() instanceof Map<?, ?> sub) {
                flatten(key + ".", sub, out);
            } else if (e.getValue() instanceof List<?> items) {
                StringBuilder joined = new StringBuilder();
                for (Object item : items) {
                    if (joined.length() > 0) {
                        joined.append(',');
                    }
                    joined.append(item);
                }
                out.put(key, joined.toString());
            } else {
                out.put(key, e.getValue() == null ? "" : String.valueOf(e.getValue()));
            }
        }
    }

    /**
     * Parses {@code 250ms}, {@code 30s}, {@code 5m}, {@code 2h}, {@code 7d}, {@code 0}, or an
     * ISO-8601 duration such as {@code PT30S}.
     *
     * @throws IllegalArgumentException saying what is accepted
     */
    public static Duration parseDuration(String text) {
        Duration d = parseDurationText(text);
        try {
            d.toNanos();
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("must be at most " + MAX_DURATION_DAYS + "d, the longest the runtime's"
                    + " nanosecond clock can time", e);
        }
        return d;
    }

    /** The longest duration a key accepts: what fits in a {@code long} of nanoseconds, about 292 years. */
    public static final long MAX_DURATION_DAYS = Long.MAX_VALUE / 86_400_000_000_000L;

    private static Duration parseDurationText(String text) {
        String t = text == null ? "" : text.trim().toLowerCase(Locale.ROOT);
        if (t.equals("0")) {
            return Duration.ZERO;
        }
        try {
            if (t.startsWith("p") || t.startsWith("-p")) {
                return Duration.parse(t.toUpperCase(Locale.ROOT));
            }
            int unitStart = 0;
            while (unitStart < t.length() && (Character.isDigit(t.charAt(unitStart)) || t.charAt(unitStart) == '-')) {
                unitStart++;
            }
            if (unitStart == 0 || unitStart == t.length()) {
                throw new IllegalArgumentException();
            }
            long amount = Long.parseLong(t.substring(0, unitStart));
            switch (t.substring(unitStart).trim()) {
                case "ns": return Duration.ofNanos(amount);
                case "us": return Duration.ofNanos(Math.multiplyExact(amount, 1000L));
                case "ms": return Duration.ofMillis(amount);
                case "s": return Duration.ofSeconds(amount);
                case "m": return Duration.ofMinutes(amount);
                case "h": return Duration.ofHours(amount);
                case "d": return Duration.ofDays(amount);
                default: throw new IllegalArgumentException();
            }
        } catch (IllegalArgumentException | DateTimeParseException | ArithmeticException e) {
            throw new IllegalArgumentException("must be " + Type.DURATION.accepted(), e);
        }
    }

    /** Formats a duration the way a user writes it: {@code 30s}, {@code 250ms}, {@code 7d}. */
    public static String formatDuration(Duration d) {
        if (d.isZero()) {
            return "0";
        }
        long nanos = d.toNanosPart();
        long ms = nanos / 1_000_000;
        if (nanos % 1_000_000 != 0) {
            return d.toString();
        }
        long seconds = d.getSeconds();
        if (ms != 0) {
            return (seconds * 1000 + ms) + "ms";
        }
        if (seconds % 86_400 == 0) {
            return seconds / 86_400 + "d";
        }
        if (seconds % 3_600 == 0) {
            return seconds / 3_600 + "h";
        }
        if (seconds % 60 == 0) {
            return seconds / 60 + "m";
        }
        return seconds + "s";
    }

    @Override
    public String toString() {
        return name + " (" + type.name().toLowerCase(Locale.ROOT) + ")";
    }
}
