package io.stripestack.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A study's results: named columns of text, plain numbers or {@link Stat}s (median with min/max), printed
 * as an aligned text table and written as CSV (a statistic becomes three CSV columns: {@code key},
 * {@code key_min}, {@code key_max}). Single-threaded: filled and written by the study's thread.
 */
final class ResultTable {
    enum Kind { TEXT, NUMBER, STAT }

    /**
     * @param key      CSV column name (snake_case)
     * @param header   heading of the text table
     * @param kind     what the column's cells hold
     * @param decimals digits after the point for numbers and statistics
     */
    record Column(String key, String header, Kind kind, int decimals) {
        static Column text(String key, String header) {
            return new Column(key, header, Kind.TEXT, 0);
        }

        static Column number(String key, String header, int decimals) {
            return new Column(key, header, Kind.NUMBER, decimals);
        }

        static Column stat(String key, String header, int decimals) {
            return new Column(key, header, Kind.STAT, decimals);
        }
    }

    private final String title;
    private final List<Column> columns;
    private final List<Object[]> rows = new ArrayList<>();

    ResultTable(String title, List<Column> columns) {
        this.title = title;
        this.columns = List.copyOf(columns);
    }

    /** Adds a row: a String per TEXT column, a Number per NUMBER column, a Stat per STAT column. */
    void add(Object... cells) {
        if (cells.length != columns.size()) {
            throw new IllegalArgumentException(title + ": row has " + cells.length + " cells for " + columns.size()
                    + " columns");
        }
        for (int c = 0; c < cells.length; c++) {
            Kind kind = columns.get(c).kind();
            boolean fits = kind == Kind.TEXT ? cells[c] instanceof String
                    : kind == Kind.NUMBER ? cells[c] instanceof Number : cells[c] instanceof Stat;
            if (!fits) {
                throw new IllegalArgumentException(title + ": column " + columns.get(c).key() + " expects " + kind
                        + ", got " + cells[c]);
            }
        }
        rows.add(cells.clone());
    }

    /** Widest line of the printed table: what a terminal shows without wrapping. */
    static final int MAX_WIDTH = 100;

    /**
     * The aligned text table; statistics print as {@code median [min..max]}. A table wider than
     * {@link #MAX_WIDTH} is printed in parts, each with the leading text columns (what names a row) and as many
     * of the other columns as fit, so no line is wider (unless one column alone is).
     */
    String toText() {
        List<String[]> lines = new ArrayList<>();
        String[] header = new String[columns.size()];
        for (int c = 0; c < header.length; c++) {
            header[c] = columns.get(c).header();
        }
        lines.add(header);
        for (Object[] row : rows) {
            String[] line = new String[columns.size()];
            for (int c = 0; c < line.length; c++) {
                line[c] = display(columns.get(c), row[c]);
            }
            lines.add(line);
        }
        int[] widths = new int[columns.size()];
        for (String[] line : lines) {
            for (int c = 0; c < line.length; c++) {
                widths[c] = Math.max(widths[c], line[c].length());
            }
        }
        int keys = 0;
        while (keys < columns.size() - 1 && columns.get(keys).kind() == Kind.TEXT) {
            keys++;
        }
        int keyWidth = 0;
        for (int c = 0; c < keys; c++) {
            keyWidth += (c == 0 ? 0 : 2) + widths[c];
        }
        StringBuilder out = new StringBuilder(title).append('\n');
        int from = keys;
        while (from < columns.size()) {
            int to = from;
            int width = keyWidth;
            do {
                width += (width == 0 ? 0 : 2) + widths[to];
                to++;
            } while (to < columns.size() && width + 2 + widths[to] <= MAX_WIDTH);
            if (from > keys) {
                out.append('\n');
            }
            for (String[] line : lines) {
                StringBuilder text = new StringBuilder();
                for (int c = 0; c < keys; c++) {
                    cell(text, c, line[c], widths[c]);
                }
                for (int c = from; c < to; c++) {
                    cell(text, c, line[c], widths[c]);
                }
                out.append(text).append('\n');
            }
            from = to;
        }
        return out.toString();
    }

    private void cell(StringBuilder line, int column, String cell, int width) {
        boolean left = columns.get(column).kind() == Kind.TEXT;
        String pad = " ".repeat(width - cell.length());
        line.append(line.length() == 0 ? "" : "  ").append(left ? cell + pad : pad + cell);
    }

    private static String display(Column column, Object cell) {
        return switch (column.kind()) {
            case TEXT -> (String) cell;
            case NUMBER -> format(((Number) cell).doubleValue(), column.decimals());
            case STAT -> {
                Stat s = (Stat) cell;
                if (Double.isNaN(s.median())) {
                    yield "n/a";
                }
                yield format(s.median(), column.decimals()) + " [" + format(s.min(), column.decimals()) + ".."
                        + format(s.max(), column.decimals()) + "]";
            }
        };
    }

    /** A number with {@code decimals} digits; NaN (not measured, or no baseline) as {@code n/a}. */
    private static String format(double value, int decimals) {
        if (Double.isNaN(value)) {
            return "n/a";
        }
        return String.format(Locale.ROOT, "%." + decimals + "f", value);
    }

    void writeCsv(Path file) throws IOException {
        StringBuilder out = new StringBuilder();
        List<String> header = new ArrayList<>();
        for (Column c : columns) {
            header.add(c.key());
            if (c.kind() == Kind.STAT) {
                header.add(c.key() + "_min");
                header.add(c.key() + "_max");
            }
        }
        out.append(String.join(",", header)).append('\n');
        for (Object[] row : rows) {
            List<String> fields = new ArrayList<>();
            for (int c = 0; c < columns.size(); c++) {
                Column column = columns.get(c);
                int digits = Math.max(column.decimals(), 3);
                switch (column.kind()) {
                    case TEXT -> fields.add(csvText((String) row[c]));
                    case NUMBER -> fields.add(csvNumber(((Number) row[c]).doubleValue(), digits));
                    case STAT -> {
                        Stat s = (Stat) row[c];
                        fields.add(csvNumber(s.median(), digits));
                        fields.add(csvNumber(s.min(), digits));
                        fields.add(csvNumber(s.max(), digits));
                    }
                }
            }
            out.append(String.join(",", fields)).append('\n');
        }
        Files.writeString(file, out, StandardCharsets.UTF_8);
    }

    /** NaN becomes an empty field, what spreadsheets and pandas read as missing. */
    private static String csvNumber(double value, int digits) {
        return Double.isNaN(value) ? "" : format(value, digits);
    }

    private static String csvText(String text) {
        if (text.indexOf(',') < 0 && text.indexOf('"') < 0 && text.indexOf('\n') < 0) {
            return text;
        }
        return '"' + text.replace("\"", "\"\"") + '"';
    }
}
