package io.stripestack.targetserver.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The Grafana dashboard shipped in docs/: the metric families its queries read, so tests can hold it to /metrics. */
public final class Dashboard {
    public static final Path FILE = Path.of("..", "docs", "grafana-dashboard.json");

    private Dashboard() {
    }

    /** Every {@code stripestack_...} name the dashboard's queries and variables use. */
    public static Set<String> families() throws IOException {
        Set<String> out = new TreeSet<>();
        Matcher m = Pattern.compile("stripestack_[a-z_]+").matcher(Files.readString(FILE));
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
