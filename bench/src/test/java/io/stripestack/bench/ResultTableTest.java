package io.stripestack.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ResultTableTest {

    /**
     * A table of as many columns as the alignment study's fits a 100-column terminal: it is printed in parts, each
     * naming its rows by the leading text columns, and every cell is printed once per part it belongs to.
     */
    @Test
    void aWideTableIsPrintedInPartsThatFitATerminal() {
        List<ResultTable.Column> columns = new ArrayList<>();
        columns.add(ResultTable.Column.text("offset", "offset"));
        columns.add(ResultTable.Column.text("stack", "stack"));
        for (int c = 0; c < 20; c++) {
            columns.add(ResultTable.Column.stat("value" + c, "measure number " + c, 0));
        }
        ResultTable table = new ResultTable("wide", columns);
        for (String stack : List.of("plain", "encrypted")) {
            Object[] row = new Object[columns.size()];
            row[0] = "162";
            row[1] = stack;
            for (int c = 2; c < row.length; c++) {
                row[c] = new Stat(1000 + c, 900 + c, 1100 + c);
            }
            table.add(row);
        }
        String text = table.toText();
        int parts = 0;
        for (String line : text.split("\n")) {
            assertTrue(line.length() <= ResultTable.MAX_WIDTH, line.length() + " columns: " + line);
            if (line.startsWith("offset  stack")) {
                parts++;
            }
        }
        assertTrue(parts > 1, text);
        for (int c = 0; c < 20; c++) {
            assertEquals(1, text.split("measure number " + c + "(?![0-9])", -1).length - 1,
                    "header " + c + ":\n" + text);
            assertTrue(text.contains((1002 + c) + " [" + (902 + c) + ".." + (1102 + c) + "]"), text);
        }
        assertEquals(2 * parts, text.split("\n162 ", -1).length - 1, "each row in each part:\n" + text);
    }

    @Test
    void aNarrowTableIsOnePart() {
        ResultTable table = new ResultTable("narrow", List.of(ResultTable.Column.text("stack", "stack"),
                ResultTable.Column.number("mbps", "MB/s", 1)));
        table.add("plain", 812.5);
        assertEquals("narrow\nstack   MB/s\nplain  812.5\n", table.toText());
    }
}
