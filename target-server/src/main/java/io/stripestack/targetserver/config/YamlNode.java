package io.stripestack.targetserver.config;

import io.stripestack.blockdev.Sizes;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * A YAML node with the path and position it came from, so that every error names file, line and key.
 * Mappings remember which keys were read: {@link #rejectUnknownKeys()} turns a typo into an error.
 *
 * <p>Not thread-safe; used once, by the thread that loads the configuration.
 */
final class YamlNode {
    private final String file;
    private final String path;
    private final Node node;
    private final Set<String> readKeys = new HashSet<>();

    YamlNode(String file, String path, Node node) {
        this.file = file;
        this.path = path;
        this.node = node;
    }

    String path() {
        return path;
    }

    int line() {
        return node.getStartMark().getLine() + 1;
    }

    ConfigException error(String message) {
        return new ConfigException(file + ":" + line() + ": " + (path.isEmpty() ? "" : path + ": ") + message);
    }

    boolean isMapping() {
        return node instanceof MappingNode;
    }

    boolean isScalar() {
        return node instanceof ScalarNode;
    }

    private Map<String, Node> entries() throws ConfigException {
        if (!(node instanceof MappingNode mapping)) {
            throw error("expected a mapping of keys");
        }
        Map<String, Node> out = new LinkedHashMap<>();
        for (NodeTuple tuple : mapping.getValue()) {
            if (!(tuple.getKeyNode() instanceof ScalarNode key)) {
                throw error("keys must be plain words");
            }
            if (out.put(key.getValue(), tuple.getValueNode()) != null) {
                throw new YamlNode(file, path, key).error("key '" + key.getValue() + "' appears twice");
            }
        }
        return out;
    }

    /** The child at {@code key}, or null if absent (or explicitly null). */
    YamlNode child(String key) throws ConfigException {
        readKeys.add(key);
        Node value = entries().get(key);
        if (value == null || (value instanceof ScalarNode s && isNull(s))) {
            return null;
        }
        return new YamlNode(file, path.isEmpty() ? key : path + "." + key, value);
    }

    YamlNode required(String key) throws ConfigException {
        YamlNode child = child(key);
        if (child == null) {
            throw error("missing required key '" + key + "'");
        }
        return child;
    }

    List<YamlNode> list() throws ConfigException {
        if (!(node instanceof SequenceNode seq)) {
            throw error("expected a list");
        }
        List<YamlNode> out = new ArrayList<>();
        int i = 0;
        for (Node n : seq.getValue()) {
            out.add(new YamlNode(file, path + "[" + i++ + "]", n));
        }
        return out;
    }

    /** A list of scalars; a single scalar counts as a list of one. */
    List<String> stringList() throws ConfigException {
        List<String> out = new ArrayList<>();
        if (node instanceof ScalarNode) {
            out.add(string());
            return out;
        }
        for (YamlNode n : list()) {
            out.add(n.string());
        }
        return out;
    }

    Map<String, YamlNode> mapping() throws ConfigException {
        Map<String, YamlNode> out = new LinkedHashMap<>();
        for (String key : entries().keySet()) {
            readKeys.add(key);
            out.put(key, new YamlNode(file, path.isEmpty() ? key : path + "." + key, entries().get(key)));
        }
        return out;
    }

    String string() throws ConfigException {
        if (!(node instanceof ScalarNode s)) {
            throw error("expected a single value");
        }
        return s.getValue();
    }

    long integer(long min, long max) throws ConfigException {
        String text = string().trim();
        long value;
        try {
            value = text.startsWith("0x") ? Long.parseLong(text.substring(2), 16) : Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw error("'" + text + "' is not a whole number");
        }
        if (value < min || value > max) {
            throw error(value + " is outside the valid range " + min + ".." + max);
        }
        return value;
    }

    boolean bool() throws ConfigException {
        String text = string().trim().toLowerCase(Locale.ROOT);
        switch (text) {
            case "true": case "yes": case "on": return true;
            case "false": case "no": case "off": return false;
            default: throw error("'" + text + "' is not true or false");
        }
    }

    /** A byte size: a number with an optional unit (K, KiB, M, MiB, G, GiB, T, TiB; all binary). */
    long size(long min, long max) throws ConfigException {
        String text = string().trim();
        try {
            long value = Sizes.parse(text);
            if (value < min || value > max) {
                throw error(text + " is outside the valid range " + Sizes.format(min) + ".." + Sizes.format(max));
            }
            return value;
        } catch (IllegalArgumentException e) {
            throw error(e.getMessage());
        }
    }

    String oneOf(String... allowed) throws ConfigException {
        String text = string().trim();
        for (String a : allowed) {
            if (a.equalsIgnoreCase(text)) {
                return a;
            }
        }
        throw error("'" + text + "' is not one of " + String.join(", ", allowed));
    }

    /** Fails on any key of this mapping that no code asked for (a typo, or a key of another section). */
    void rejectUnknownKeys() throws ConfigException {
        for (Map.Entry<String, Node> e : entries().entrySet()) {
            if (!readKeys.contains(e.getKey())) {
                throw new YamlNode(file, path.isEmpty() ? e.getKey() : path + "." + e.getKey(), e.getValue())
                        .error("unknown key (valid here: " + String.join(", ", readKeys) + ")");
            }
        }
    }

    private static boolean isNull(ScalarNode s) {
        String v = s.getValue();
        return s.getTag().getValue().endsWith(":null") || ((v.equals("~") || v.equals("null")) && s.getScalarStyle() == org.yaml.snakeyaml.DumperOptions.ScalarStyle.PLAIN);
    }
}
