package io.stripestack.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * A grouped bar chart written as standalone SVG: one group of bars per x-axis category, one bar colour
 * per series, a whisker from min to max over each bar, a y axis with ticks and a label, and a legend.
 * Each bar is a {@code <rect class="bar">} with a {@code <title>} tooltip naming series, group and value.
 * Missing cells (never {@link #set}) draw no bar. Single-threaded.
 */
final class BarChart {
    private static final String[] COLOURS = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
            "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
    private static final int HEIGHT = 460;
    private static final int LEFT = 90;
    private static final int RIGHT = 30;
    private static final int TOP = 60;
    private static final int BOTTOM = 120;
    private static final int BAR = 16;
    private static final int GROUP_GAP = 22;
    private static final int LEGEND_COLUMN = 230;

    private final String title;
    private final String yLabel;
    private final List<String> groups;
    private final List<String> series;
    private final Stat[][] values;

    BarChart(String title, String yLabel, List<String> groups, List<String> series) {
        this.title = title;
        this.yLabel = yLabel;
        this.groups = List.copyOf(groups);
        this.series = List.copyOf(series);
        this.values = new Stat[series.size()][groups.size()];
    }

    /** Sets one bar; a value that was not measured ({@link Stat#NONE}) leaves the cell empty. */
    void set(int seriesIndex, int groupIndex, Stat value) {
        values[seriesIndex][groupIndex] = Double.isNaN(value.median()) ? null : value;
    }

    void write(Path file) throws IOException {
        Files.writeString(file, toSvg(), StandardCharsets.UTF_8);
    }

    String toSvg() {
        int groupWidth = series.size() * BAR + GROUP_GAP;
        int plotWidth = Math.max(420, groups.size() * groupWidth);
        int width = LEFT + plotWidth + RIGHT;
        int legendColumns = Math.max(1, (plotWidth + RIGHT) / LEGEND_COLUMN);
        int legendRows = (series.size() + legendColumns - 1) / legendColumns;
        int top = TOP + legendRows * 18;
        int height = HEIGHT + legendRows * 18;
        int plotHeight = height - top - BOTTOM;
        double yMax = niceCeiling(maxValue());
        StringBuilder svg = new StringBuilder();
        svg.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
                .append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                        + " viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n", width, height, width, height))
                .append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", width, height))
                .append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>%n",
                        LEFT, escape(title)));
        for (int s = 0; s < series.size(); s++) {
            int x = LEFT + (s % legendColumns) * LEGEND_COLUMN;
            int y = 36 + (s / legendColumns) * 18;
            svg.append(String.format(Locale.ROOT, "<rect class=\"legend\" x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                    + "<text x=\"%d\" y=\"%d\">%s</text>%n", x, y, colour(s), x + 16, y + 11, escape(series.get(s))));
        }
        int baseline = top + plotHeight;
        for (int t = 0; t <= 5; t++) {
            double v = yMax * t / 5;
            double y = baseline - plotHeight * (double) t / 5;
            svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                            + "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n",
                    LEFT, y, LEFT + plotWidth, y, LEFT - 6, y + 4, tickLabel(v)));
        }
        svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>%n",
                LEFT, top, LEFT, baseline));
        svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>%n",
                LEFT, baseline, LEFT + plotWidth, baseline));
        svg.append(String.format(Locale.ROOT, "<text transform=\"translate(20,%d) rotate(-90)\" text-anchor=\"middle\">%s</text>%n",
                top + plotHeight / 2, escape(yLabel)));
        for (int g = 0; g < groups.size(); g++) {
            int groupX = LEFT + g * groupWidth + GROUP_GAP / 2;
            for (int s = 0; s < series.size(); s++) {
                Stat v = values[s][g];
                if (v == null) {
                    continue;
                }
                int x = groupX + s * BAR;
                double h = plotHeight * v.median() / yMax;
                svg.append(String.format(Locale.ROOT, "<rect class=\"bar\" x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\""
                                + " fill=\"%s\"><title>%s / %s: %s</title></rect>%n",
                        x, baseline - h, BAR - 2, h, colour(s), escape(series.get(s)), escape(groups.get(g)),
                        tickLabel(v.median())));
                double yMin = baseline - plotHeight * v.min() / yMax;
                double yTop = baseline - plotHeight * v.max() / yMax;
                double cx = x + (BAR - 2) / 2.0;
                svg.append(String.format(Locale.ROOT, "<line class=\"whisker\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\""
                        + " stroke=\"black\"/>%n", cx, yMin, cx, yTop));
            }
            double labelX = groupX + series.size() * BAR / 2.0;
            svg.append(String.format(Locale.ROOT, "<text transform=\"translate(%.1f,%d) rotate(-35)\" text-anchor=\"end\">%s</text>%n",
                    labelX, baseline + 14, escape(groups.get(g))));
        }
        svg.append("</svg>\n");
        return svg.toString();
    }

    private double maxValue() {
        double max = 0;
        for (Stat[] row : values) {
            for (Stat v : row) {
                if (v != null) {
                    max = Math.max(max, Math.max(v.max(), v.median()));
                }
            }
        }
        return max;
    }

    /** The smallest of 1, 2, 2.5 or 5 times a power of ten that is at least {@code v}. */
    static double niceCeiling(double v) {
        if (!(v > 0) || Double.isInfinite(v)) {
            return 1;
        }
        double power = Math.pow(10, Math.floor(Math.log10(v)));
        for (double step : new double[] {1, 2, 2.5, 5, 10}) {
            if (step * power >= v) {
                return step * power;
            }
        }
        return 10 * power;
    }

    private static String tickLabel(double v) {
        if (v == Math.rint(v) || Math.abs(v) >= 100) {
            return String.format(Locale.ROOT, "%.0f", v);
        }
        return String.format(Locale.ROOT, Math.abs(v) >= 10 ? "%.1f" : "%.2f", v);
    }

    private static String colour(int s) {
        return COLOURS[s % COLOURS.length];
    }

    private static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
