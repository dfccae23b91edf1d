package io.stripestack.bench;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Layout;
import io.stripestack.raid5.Raid5Options;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What the studies share during one {@code stripestack bench} run: the settings, the scratch directory
 * for member files, the {@link LoadRunner}, and the measuring protocol (one untimed warm-up round, then
 * {@code repeat} interleaved rounds with every {@link Probe} read around each run). Used by one thread
 * at a time.
 */
final class Bench implements AutoCloseable {
    private final BenchSettings settings;
    private final Path scratch;
    private final PrintStream progress;
    private final LoadRunner runner = new LoadRunner();

    Bench(BenchSettings settings, Path scratch, PrintStream progress) {
        this.settings = settings;
        this.scratch = scratch;
        this.progress = progress;
    }

    BenchSettings settings() {
        return settings;
    }

    /** This run's scratch directory (deleted with everything in it when the run ends). */
    Path scratch() {
        return scratch;
    }

    /** Creates {@code count} sparse member files of the configured size (deleted by closing the set). */
    MemberSet memberFiles(String prefix, int count, long bytes) throws IOException {
        return MemberSet.create(scratch, prefix, count, bytes, settings.direct(), settings.memberBytesPerSecond());
    }

    /** A new left-symmetric RAID-5 over all of {@code files}, data at 1 MiB like mdadm. */
    Raid5Array createRaid5(String name, List<BlockDevice> members, int chunkBytes) throws IOException {
        return createRaid5(name, members, chunkBytes, Raid5Options.defaults());
    }

    /** {@link #createRaid5(String, List, int)} with the given options (e.g. a consistency policy). */
    Raid5Array createRaid5(String name, List<BlockDevice> members, int chunkBytes, Raid5Options options)
            throws IOException {
        return createRaid5(name, members, chunkBytes, Raid5Config.DEFAULT_DATA_OFFSET_SECTORS, options);
    }

    /** {@link #createRaid5(String, List, int, Raid5Options)} with the data offset in sectors. */
    Raid5Array createRaid5(String name, List<BlockDevice> members, int chunkBytes, long dataOffsetSectors,
                           Raid5Options options) throws IOException {
        Raid5Config config = new Raid5Config(name, chunkBytes, Raid5Layout.LEFT_SYMMETRIC, dataOffsetSectors);
        try {
            return Raid5Array.create(members, config, options, true);
        } catch (IOException | RuntimeException e) {
            for (BlockDevice d : members) {
                d.close();
            }
            throw e;
        }
    }

    /**
     * Writes the whole device once with large sequential writes (whole rows of {@code device}'s optimal I/O
     * size), so that later reads read written blocks, not holes of sparse files.
     */
    void prefill(BlockDevice device) throws IOException {
        long row = device.geometry().optimalIo();
        long io = Math.max(row, (4L << 20) / row * row);
        long size = device.size();
        long whole = size / io * io;
        if (whole > 0) {
            runner.run(device, Workload.sequential(true, (int) io, 0, 2, whole, whole));
        }
        if (size > whole) {
            runner.run(device, Workload.sequential(true, (int) (size - whole), whole, 1, size - whole, size));
        }
        device.flush();
    }

    /**
     * One measurement to take: how to open the device (a fresh stack, or a view of a shared array with its
     * settings applied), what to run on it, and which counters to read around each timed run. The device is
     * closed after every run, so readahead and similar state never carries over from one run to the next.
     */
    record Trial(String label, DeviceOpener opener, Workload workload, Probe... probes) {
    }

    /** Opens the device of one run of a {@link Trial}; the caller closes it. */
    interface DeviceOpener {
        BlockDevice open() throws IOException;
    }

    /**
     * Runs every trial once untimed (warm-up: JIT, page cache), then {@code repeat} rounds in which every
     * trial runs once, in order. Interleaving the trials makes a change in machine load (other processes)
     * hit all of them alike instead of whichever happened to run then, so their ratios stay meaningful.
     * Prints one progress line per trial at the end.
     */
    List<Measured> measureInterleaved(List<Trial> trials) throws IOException {
        int n = settings.repeat();
        Sample[][] samples = new Sample[trials.size()][n];
        long[][][] deltas = new long[trials.size()][][];
        for (int t = 0; t < trials.size(); t++) {
            deltas[t] = new long[trials.get(t).probes().length][n];
        }
        for (int round = -1; round < n; round++) {
            for (int t = 0; t < trials.size(); t++) {
                Trial trial = trials.get(t);
                try (BlockDevice device = trial.opener().open()) {
                    if (round < 0) {
                        runner.run(device, trial.workload().warmUp());
                        continue;
                    }
                    Probe[] probes = trial.probes();
                    long[] before = new long[probes.length];
                    for (int p = 0; p < probes.length; p++) {
                        before[p] = probes[p].counter().getAsLong();
                    }
                    samples[t][round] = runner.run(device, trial.workload());
                    for (int p = 0; p < probes.length; p++) {
                        deltas[t][p][round] = probes[p].counter().getAsLong() - before[p];
                    }
                }
            }
        }
        List<Measured> results = new ArrayList<>(trials.size());
        for (int t = 0; t < trials.size(); t++) {
            Measured m = Measured.of(samples[t], deltas[t]);
            report(trials.get(t).label(), trials.get(t).workload().describe(), m);
            results.add(m);
        }
        return results;
    }

    /** Prints one progress line: what was measured and its median throughput and CPU. */
    void report(String label, String what, Measured m) {
        progress.printf(Locale.ROOT, "  %-52s %-28s %9.1f MB/s  cpu %5.1f%%%n", label, what,
                m.megabytesPerSecond().median(), m.cpuPercent().median());
        progress.flush();
    }

    @Override
    public void close() {
        runner.close();
    }
}
