package dev.idem.cli;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The repository's {@code Dockerfile} read as Docker reads it, far enough to check it without a Docker engine:
 * comments and parser directives dropped, continuation lines joined, instructions grouped by stage, global
 * {@code ARG} defaults substituted into {@code FROM}.
 */
final class ParsedDockerfile {

    /** One instruction: its keyword in upper case, its arguments as written (continuations joined), its line. */
    record Instruction(String keyword, String args, int line) {

        /** Whether the arguments are the JSON array of the exec form. */
        boolean execForm() {
            return args.startsWith("[");
        }

        /** The exec form's array; fails for the shell form. */
        List<String> execArgs() {
            return jsonArray(args, this);
        }

        /** The {@code --name=value} flags before the other arguments (COPY, HEALTHCHECK, RUN). */
        Map<String, String> flags() {
            Map<String, String> flags = new LinkedHashMap<>();
            for (String word : words()) {
                if (!word.startsWith("--")) {
                    break;
                }
                int eq = word.indexOf('=');
                flags.put(eq < 0 ? word.substring(2) : word.substring(2, eq), eq < 0 ? "" : word.substring(eq + 1));
            }
            return flags;
        }

        /** The arguments after the flags, split on white space. */
        List<String> operands() {
            List<String> words = words();
            int i = 0;
            while (i < words.size() && words.get(i).startsWith("--")) {
                i++;
            }
            return words.subList(i, words.size());
        }

        private List<String> words() {
            return List.of(args.trim().split("\\s+"));
        }

        @Override
        public String toString() {
            return "line " + line + ": " + keyword + " " + args;
        }
    }

    /** A build stage: its base image (ARGs substituted), its name after {@code AS}, if any, and its instructions. */
    record Stage(String image, Optional<String> name, List<Instruction> instructions) {

        List<Instruction> all(String keyword) {
            return instructions.stream().filter(i -> i.keyword().equals(keyword)).toList();
        }

        /** The last instruction of the kind, which is the one in effect. */
        Optional<Instruction> last(String keyword) {
            List<Instruction> all = all(keyword);
            return all.isEmpty() ? Optional.empty() : Optional.of(all.get(all.size() - 1));
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern FROM = Pattern.compile("(?i)^(?:--\\S+\\s+)*(\\S+)(?:\\s+AS\\s+(\\S+))?\\s*$");
    private static final Pattern ARG_REFERENCE = Pattern.compile("\\$\\{([A-Za-z_][A-Za-z0-9_]*)}|\\$([A-Za-z_][A-Za-z0-9_]*)");

    final Path file;
    final List<Stage> stages;

    private ParsedDockerfile(Path file, List<Stage> stages) {
        this.file = file;
        this.stages = stages;
    }

    /** The stage the image is: the last one. */
    Stage image() {
        return stages.get(stages.size() - 1);
    }

    Optional<Stage> stage(String name) {
        return stages.stream().filter(s -> s.name().filter(name::equalsIgnoreCase).isPresent()).findFirst();
    }

    static ParsedDockerfile read(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<Instruction> instructions = new ArrayList<>();
        StringBuilder pending = null;
        int start = 0;
        for (int n = 0; n < lines.size(); n++) {
            String line = lines.get(n);
            String trimmed = line.strip();
            // A comment line (parser directives included) is dropped, inside a continuation too, as Docker does.
            if (trimmed.startsWith("#") || (trimmed.isEmpty() && pending == null)) {
                continue;
            }
            if (pending == null) {
                pending = new StringBuilder();
                start = n + 1;
            }
            boolean continued = trimmed.endsWith("\\");
            pending.append(continued ? trimmed.substring(0, trimmed.length() - 1) : trimmed).append(' ');
            if (!continued) {
                String text = pending.toString().strip();
                int space = text.indexOf(' ');
                String keyword = (space < 0 ? text : text.substring(0, space)).toUpperCase(Locale.ROOT);
                instructions.add(new Instruction(keyword, space < 0 ? "" : text.substring(space + 1).strip(), start));
                pending = null;
            }
        }
        if (pending != null) {
            throw new AssertionError(file + " ends inside a continued line starting at line " + start);
        }

        Map<String, String> globalArgs = new LinkedHashMap<>();
        List<Stage> stages = new ArrayList<>();
        List<Instruction> current = null;
        for (Instruction i : instructions) {
            if (i.keyword().equals("FROM")) {
                Matcher m = FROM.matcher(i.args());
                if (!m.matches()) {
                    throw new AssertionError("Unreadable FROM at " + i);
                }
                current = new ArrayList<>();
                stages.add(new Stage(substitute(m.group(1), globalArgs), Optional.ofNullable(m.group(2)), current));
            } else if (current == null) {
                if (!i.keyword().equals("ARG")) {
                    throw new AssertionError("Only ARG may come before the first FROM, not " + i);
                }
                String arg = i.args();
                int eq = arg.indexOf('=');
                globalArgs.put(eq < 0 ? arg : arg.substring(0, eq), eq < 0 ? "" : unquote(arg.substring(eq + 1)));
            } else {
                current.add(i);
            }
        }
        if (stages.isEmpty()) {
            throw new AssertionError(file + " has no FROM");
        }
        return new ParsedDockerfile(file, List.copyOf(stages));
    }

    private static String substitute(String text, Map<String, String> args) {
        Matcher m = ARG_REFERENCE.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String name = m.group(1) != null ? m.group(1) : m.group(2);
            m.appendReplacement(out, Matcher.quoteReplacement(args.getOrDefault(name, "")));
        }
        m.appendTail(out);
        return out.toString();
    }

    private static String unquote(String value) {
        return value.length() >= 2 && (value.startsWith("\"") && value.endsWith("\"")
                || value.startsWith("'") && value.endsWith("'")) ? value.substring(1, value.length() - 1) : value;
    }

    private static List<String> jsonArray(String text, Instruction at) {
        try {
            return JSON.readValue(text, new TypeReference<List<String>>() { });
        } catch (IOException e) {
            throw new AssertionError("Not the exec form (a JSON array of strings) at " + at + ": " + e.getMessage());
        }
    }

    /** The repository's root: the first folder up from the working directory that holds the Dockerfile and the distribution module. */
    static Path repositoryRoot() {
        Path dir = Path.of("").toAbsolutePath();
        for (Path d = dir; d != null; d = d.getParent()) {
            if (Files.isRegularFile(d.resolve("Dockerfile")) && Files.isRegularFile(d.resolve("distribution/pom.xml"))) {
                return d;
            }
        }
        throw new AssertionError("No folder above " + dir + " holds both Dockerfile and distribution/pom.xml");
    }
}
