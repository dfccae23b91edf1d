package io.stripestack.crypto.luks;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.YAMLException;

/**
 * The LUKS2 JSON metadata area: parsed with SnakeYAML (JSON is a subset of YAML apart from the {@code \/}
 * escape, which is undone first), written by a small compact writer in json-c's plain style
 * ({@code {"a":"b","c":1}}), which is how cryptsetup writes it.
 *
 * <p>The tree is plain {@link LinkedHashMap}s, {@link List}s, Strings, Integers/Longs and Booleans so
 * members this implementation does not interpret (tokens, flags) survive a rewrite. Stateless and
 * thread-safe (a Yaml instance is created per parse because SnakeYAML's is not thread-safe).
 */
final class LuksJson {
    private LuksJson() {
    }

    /**
     * Parses a JSON object.
     *
     * @param where names the area in error messages, e.g. "/dev/x: LUKS2 JSON area at offset 4096"
     */
    static Map<String, Object> parseObject(String text, String where) throws LuksHeaderException {
        String trimmed = text.strip();
        if (!trimmed.startsWith("{") || !trimmed.endsWith("}")) {
            throw new LuksHeaderException(where + " does not hold a JSON object; the header is corrupt: restore it from a "
                    + "header backup (cryptsetup luksHeaderRestore) or try cryptsetup repair");
        }
        LoaderOptions options = new LoaderOptions();
        options.setAllowDuplicateKeys(false);
        options.setMaxAliasesForCollections(0);
        options.setNestingDepthLimit(20);
        Object tree;
        try {
            tree = new Yaml(new SafeConstructor(options)).load(unescapeSlashes(trimmed));
        } catch (YAMLException | ClassCastException e) {
            throw new LuksHeaderException(where + " holds malformed JSON (" + firstLine(e.getMessage())
                    + "); the header is corrupt: restore it from a header backup or try cryptsetup repair", e);
        }
        if (!(tree instanceof Map<?, ?> map)) {
            throw new LuksHeaderException(where + " does not hold a JSON object");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> object = (Map<String, Object>) map;
        return object;
    }

    /** Writes a tree of maps, lists, strings, numbers and booleans as compact JSON. */
    static String write(Object value) {
        StringBuilder out = new StringBuilder(4096);
        write(value, out);
        return out.toString();
    }

    private static void write(Object value, StringBuilder out) {
        if (value instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                writeString(String.valueOf(entry.getKey()), out);
                out.append(':');
                write(entry.getValue(), out);
            }
            out.append('}');
        } else if (value instanceof List<?> list) {
            out.append('[');
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) {
                    out.append(',');
                }
                write(list.get(i), out);
            }
            out.append(']');
        } else if (value instanceof String s) {
            writeString(s, out);
        } else if (value instanceof Integer || value instanceof Long || value instanceof Boolean
                || value instanceof java.math.BigInteger) {
            out.append(value);
        } else if (value == null) {
            out.append("null");
        } else {
            throw new IllegalArgumentException("cannot write " + value.getClass().getSimpleName() + " as LUKS2 JSON");
        }
    }

    private static void writeString(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    /** JSON allows {@code \/} for {@code /}; YAML 1.1 does not, so drop the backslash inside strings. */
    private static String unescapeSlashes(String json) {
        if (json.indexOf("\\/") < 0) {
            return json;
        }
        StringBuilder out = new StringBuilder(json.length());
        boolean escaped = false;
        for (int i = 0; i < json.length(); i++) {
            char c = json.charAt(i);
            if (escaped) {
                if (c != '/') {
                    out.append('\\');
                }
                out.append(c);
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else {
                out.append(c);
            }
        }
        if (escaped) {
            out.append('\\');
        }
        return out.toString();
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "unreadable";
        }
        int newline = message.indexOf('\n');
        return (newline < 0 ? message : message.substring(0, newline)).strip();
    }
}
