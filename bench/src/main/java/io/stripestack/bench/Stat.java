package io.stripestack.bench;

import java.util.Arrays;

/**
 * The median of a measurement's repeats, with the smallest and largest. Immutable.
 *
 * @param median the middle value (mean of the two middle values for an even count)
 * @param min    the smallest repeat
 * @param max    the largest repeat
 */
record Stat(double median, double min, double max) {
    /** Not measured (printed as n/a, an empty CSV field). */
    static final Stat NONE = new Stat(Double.NaN, Double.NaN, Double.NaN);

    static Stat of(double[] values) {
        if (values.length == 0) {
            throw new IllegalArgumentException("a statistic needs at least one value");
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int mid = sorted.length / 2;
        double median = sorted.length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
        return new Stat(median, sorted[0], sorted[sorted.length - 1]);
    }

    /** {@code value / baseline}, or NaN when the baseline is 0 (a CPU time below the clock's resolution). */
    static double ratio(double value, double baseline) {
        return baseline > 0 ? value / baseline : Double.NaN;
    }

    Stat scaled(double factor) {
        return new Stat(median * factor, min * factor, max * factor);
    }
}
