package io.stripestack.targetserver.control;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Supplier;

/**
 * Every runtime attribute of a running server by path, the administration commands by verb, and the status
 * report. Thread-safe: attributes
 * are registered at start-up (a LUN's also when it is created at run time, and removed with it) and may be read and set from any admin connection at once; each
 * attribute guards its own state.
 */
public final class ControlRegistry {
    private final Map<String, ControlAttribute> attributes = new ConcurrentSkipListMap<>();
    private final Map<String, AdminCommand> commands = new ConcurrentSkipListMap<>();
    private volatile Supplier<String> status = () -> "";
    private volatile Supplier<String> metrics = () -> "";

    public void register(String path, ControlAttribute attribute) {
        if (attributes.putIfAbsent(path, attribute) != null) {
            throw new IllegalStateException("control attribute " + path + " registered twice");
        }
    }

    /** Removes every attribute under {@code prefix} (a LUN deleted at run time takes its attributes along). */
    public void unregisterAll(String prefix) {
        attributes.keySet().removeIf(path -> path.startsWith(prefix));
    }

    public void registerCommand(String verb, AdminCommand command) {
        if (commands.putIfAbsent(verb, command) != null) {
            throw new IllegalStateException("admin command " + verb + " registered twice");
        }
    }

    /** The command for {@code verb}, or null. */
    public AdminCommand command(String verb) {
        return commands.get(verb);
    }

    /** The registered command verbs, sorted. */
    public java.util.Set<String> commandVerbs() {
        return java.util.Collections.unmodifiableSet(commands.keySet());
    }

    public void setStatusReport(Supplier<String> report) {
        this.status = report;
    }

    public void setMetricsReport(Supplier<String> report) {
        this.metrics = report;
    }

    public String status() {
        return status.get();
    }

    public String metrics() {
        return metrics.get();
    }

    /** Paths under {@code prefix} (all if empty), sorted, each with its value and "rw"/"ro". */
    public List<String> list(String prefix) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, ControlAttribute> e : attributes.entrySet()) {
            if (e.getKey().startsWith(prefix)) {
                String value;
                try {
                    value = e.getValue().get();
                } catch (RuntimeException ex) {
                    value = "<error: " + ex.getMessage() + ">";
                }
                out.add(e.getKey() + " = " + value + (e.getValue().writable() ? "" : "  (read-only)"));
            }
        }
        return out;
    }

    public String get(String path) {
        return find(path).get();
    }

    public void set(String path, String value) {
        find(path).set(value);
    }

    /** As {@link #set}; returns what the attribute tells the operator ({@link ControlAttribute#apply}). */
    public String apply(String path, String value) {
        return find(path).apply(value);
    }

    private ControlAttribute find(String path) {
        ControlAttribute a = attributes.get(path);
        if (a == null) {
            throw new IllegalArgumentException("no attribute '" + path + "' (stripestack ctl list shows them all)");
        }
        return a;
    }
}
