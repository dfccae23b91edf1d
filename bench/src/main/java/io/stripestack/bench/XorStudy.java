package io.stripestack.bench;

import io.stripestack.raid5.Xor;
import io.stripestack.bench.ResultTable.Column;
import io.stripestack.blockdev.Sizes;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The XOR study: every XOR routine's speed (like the kernel's "raid5: measuring checksumming speed" lines) for
 * the source counts of 3-, 4-, 5- and 8-member arrays, in L1/L2-sized and chunk-sized buffers, against a
 * plain copy, and which routine {@link Xor#best()} chose at start-up.
 */
final class XorStudy implements Study {
    private static final int[] SOURCES = {2, 3, 4, 7};

    @Override
    public String name() {
        return "xor";
    }

    @Override
    public String title() {
        return "XOR routines (chosen by measurement at start)";
    }

    @Override
    public Result run(Bench bench) {
        BenchSettings s = bench.settings();
        int[] sizes = s.quick() ? new int[] {4096} : new int[] {4096, 256 << 10};
        Xor chosen = Xor.best();
        long chosenMbps = Xor.bestMegabytesPerSecond();
        List<Xor> routines = Xor.candidates();
        ResultTable table = new ResultTable("XOR MB/s of destination bytes; 'vs chosen' = routine / the routine"
                + " Xor.best() picked, same sources and buffer", List.of(
                Column.text("routine", "routine"),
                Column.number("sources", "sources", 0),
                Column.text("buffer", "buffer"),
                Column.stat("mbps", "MB/s", 0),
                Column.text("chosen", "chosen"),
                Column.number("vs_chosen", "vs chosen", 2)));
        List<String> groups = new ArrayList<>();
        for (int size : sizes) {
            for (int sources : SOURCES) {
                groups.add(sources + " src, " + Sizes.format(size));
            }
        }
        List<String> series = new ArrayList<>();
        for (Xor r : routines) {
            series.add(r.name());
        }
        BarChart chart = new BarChart("XOR routines: MB/s by sources and buffer size", "MB/s (median, whiskers min..max)",
                groups, series);
        Stat[][][] stats = measureAll(routines, sizes, s);
        int group = 0;
        for (int z = 0; z < sizes.length; z++) {
            for (int k = 0; k < SOURCES.length; k++) {
                Stat chosenStat = stats[z][k][routines.indexOf(chosen)];
                for (int r = 0; r < routines.size(); r++) {
                    Xor routine = routines.get(r);
                    table.add(routine.name(), SOURCES[k], Sizes.format(sizes[z]), stats[z][k][r],
                            routine == chosen ? "yes" : "", Stat.ratio(stats[z][k][r].median(), chosenStat.median()));
                    chart.set(r, group, stats[z][k][r]);
                }
                group++;
            }
        }
        StringBuilder copies = new StringBuilder("baseline, copying one direct buffer into another (ByteBuffer.put),"
                + " per CPU second:");
        for (int size : sizes) {
            copies.append(String.format(java.util.Locale.ROOT, " %s %.0f MB/s;", Sizes.format(size),
                    copySpeed(size, s).median()));
        }
        List<String> notes = List.of(copies.toString(),
                "Xor.best() chose " + chosen.name() + " when the JVM started (" + chosenMbps + " MB/s as it measured and"
                        + " logged it)",
                "each figure: one warm-up round of " + s.xorMillis() + " ms per routine, then " + s.repeat()
                        + " interleaved rounds of " + s.xorMillis() + " ms each; MB/s counts destination bytes"
                        + " (sources x that many were read) per CPU second of the measuring thread (Xor.measure), so a"
                        + " busy machine lowers them less than wall-clock rates");
        return new Result(table, chart, notes);
    }

    /**
     * {@code [size][sources][routine]}: one untimed warm-up round over every combination (until the JIT has
     * compiled each routine), then {@code repeat} rounds, each running every combination once, so a change
     * in machine load hits all routines alike.
     */
    private static Stat[][][] measureAll(List<Xor> routines, int[] sizes, BenchSettings s) {
        double[][][][] runs = new double[sizes.length][SOURCES.length][routines.size()][s.repeat()];
        for (int round = -1; round < s.repeat(); round++) {
            for (int z = 0; z < sizes.length; z++) {
                for (int k = 0; k < SOURCES.length; k++) {
                    for (int r = 0; r < routines.size(); r++) {
                        long mbps = Xor.measure(routines.get(r), SOURCES[k], sizes[z], s.xorMillis());
                        if (round >= 0) {
                            runs[z][k][r][round] = mbps;
                        }
                    }
                }
            }
        }
        Stat[][][] stats = new Stat[sizes.length][SOURCES.length][routines.size()];
        for (int z = 0; z < sizes.length; z++) {
            for (int k = 0; k < SOURCES.length; k++) {
                for (int r = 0; r < routines.size(); r++) {
                    stats[z][k][r] = Stat.of(runs[z][k][r]);
                }
            }
        }
        return stats;
    }

    /**
     * MB/s of copying one direct buffer into another, per CPU second of this thread like {@link Xor#measure}:
     * the baseline a parity computation competes with.
     */
    private static Stat copySpeed(int size, BenchSettings s) {
        ByteBuffer src = ByteBuffer.allocateDirect(size);
        ByteBuffer dst = ByteBuffer.allocateDirect(size);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        double[] runs = new double[s.repeat() + 1];
        for (int i = 0; i < runs.length; i++) {
            long copied = 0;
            long cpuStart = threads.getCurrentThreadCpuTime();
            long deadline = System.nanoTime() + s.xorMillis() * 1_000_000L;
            do {
                dst.put(0, src, 0, size);
                copied += size;
            } while (System.nanoTime() < deadline);
            runs[i] = copied * 1000.0 / Math.max(1, threads.getCurrentThreadCpuTime() - cpuStart);
        }
        return Stat.of(java.util.Arrays.copyOfRange(runs, 1, runs.length));
    }
}
