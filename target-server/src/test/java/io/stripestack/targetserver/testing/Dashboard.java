package io.stripestack.targetserver.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.Yaml;

/** The Grafana dashboard shipped in docs/: the metric families its queries read, so tests can hold it to /metrics. */
public final class Dashboard {
    public static final Path FILE = Path.of("..", "docs", "grafana-dashboard.json");

    private Dashboard() {
    }

    /**
     * Every {@code stripestack_...} name the dashboard's queries and variables use; fails unless the file is a JSON
     * object with panels (JSON is YAML, so the configuration's parser reads it).
     */
    public static Set<String> families() throws IOException {
        String json = Files.readString(FILE);
        Object dashboard = new Yaml().load(json);
        if (!(dashboard instanceof Map<?, ?> fields) || !(fields.get("panels") instanceof List<?> panels)
                || panels.isEmpty()) {
            throw new AssertionError(FILE + " is no Grafana dashboard: no panels");
        }
        Set<String> out = new TreeSet<>();
        Matcher m = Pattern.compile("stripestack_[a-z_]+").matcher(json);
        while (m.find()) {
            out.add(m.group());
        }
        return out;
    }

    /** The families a scrape declares (its TYPE lines). */
    public static Set<String> declared(String scrape) {
        Set<String> out = new TreeSet<>();
        Matcher m = Pattern.compile("^# TYPE (\\S+) ", Pattern.MULTILINE).matcher(scrape);
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }
}
