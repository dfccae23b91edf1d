package io.stripestack.bench;

import java.io.IOException;
import java.util.List;

/** One experiment of {@code stripestack bench}: builds its stacks, measures, and returns a table and a chart. */
interface Study {
    /** The {@code --study} name, also the base name of the files written. */
    String name();

    /** One line saying what the study compares, printed above its table. */
    String title();

    Result run(Bench bench) throws IOException;

    /**
     * @param table the figures (written as NAME.csv and in NAME.txt)
     * @param chart the headline figure (written as NAME.svg)
     * @param notes what a reader needs to interpret the table (printed under it)
     */
    record Result(ResultTable table, BarChart chart, List<String> notes) {
    }
}
