package io.stripestack.targetserver.server;

import java.util.Locale;

/**
 * Prometheus' text exposition format (version 0.0.4): families written one after another, each with its HELP
 * and TYPE lines and then its samples, label values escaped. The caller writes every sample of a family right
 * after its header, as the format requires.
 *
 * <p>Concurrency: none; one instance per scrape, on the scraping thread.
 */
final class PrometheusText {
    static final String GAUGE = "gauge";
    static final String COUNTER = "counter";

    private final StringBuilder out = new StringBuilder(8192);

    /** Starts a family; a counter's name ends in {@code _total}, as the convention wants. */
    PrometheusText family(String name, String type, String help) {
        if (type.equals(COUNTER) != name.endsWith("_total")) {
            throw new IllegalArgumentException(name + ": counters end in _total and only counters do");
        }
        out.append("# HELP ").append(name).append(' ');
        for (int i = 0; i < help.length(); i++) {
            char c = help.charAt(i);
            out.append(c == '\\' ? "\\\\" : c == '\n' ? "\\n" : String.valueOf(c));
        }
        out.append("\n# TYPE ").append(name).append(' ').append(type).append('\n');
        return this;
    }

    /** One sample; {@code labels} alternate name and value. */
    PrometheusText sample(String name, long value, String... labels) {
        labels(name, labels);
        out.append(value).append('\n');
        return this;
    }

    /** One sample of a quantity with a fractional part (seconds). */
    PrometheusText sample(String name, double value, String... labels) {
        labels(name, labels);
        out.append(String.format(Locale.ROOT, "%.9g", value)).append('\n');
        return this;
    }

    private void labels(String name, String[] labels) {
        out.append(name);
        if (labels.length > 0) {
            out.append('{');
            for (int i = 0; i < labels.length; i += 2) {
                out.append(i == 0 ? "" : ",").append(labels[i]).append("=\"");
                String value = labels[i + 1];
                for (int j = 0; j < value.length(); j++) {
                    char c = value.charAt(j);
                    out.append(c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : String.valueOf(c));
                }
                out.append('"');
            }
            out.append('}');
        }
        out.append(' ');
    }

    @Override
    public String toString() {
        return out.toString();
    }
}
