package io.stripestack.target.bench;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Layout;
import io.stripestack.raid5.Raid5Options;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * What the studies share during one {@code stripestack bench} run: the settings, the scratch directory
 * for member files, the {@link LoadRunner}, and the measuring protocol (one untimed warm-up, then
 * {@code repeat} timed runs with every {@link Probe} read around each). Used by one thread at a time.
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
        return MemberSet.create(scratch, prefix, count, bytes, settings.direct());
    }

    /** A new left-symmetric RAID-5 over all of {@code files}, data at 1 MiB like mdadm. */
    Raid5Array createRaid5(String name, List<FileBlockDevice> members, int chunkBytes) throws IOException {
        Raid5Config config = new Raid5Config(name, chunkBytes, Raid5Layout.LEFT_SYMMETRIC,
                Raid5Config.DEFAULT_DATA_OFFSET_SECTORS);
        try {
            return Raid5Array.create(members, config, Raid5Options.defaults(), true);
        } catch (IOException | RuntimeException e) {
            for (FileBlockDevice d : members) {
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

    /** Runs {@code workload} once, untimed: JIT-compiles a stack's code paths before its first measurement. */
    void warmUp(BlockDevice device, Workload workload) throws IOException {
        runner.run(device, workload);
    }

    /** Warms up, then runs {@code workload} {@code repeat} times; prints one progress line. */
    Measured measure(String label, BlockDevice device, Workload workload, Probe... probes) throws IOException {
        warmUp(device, workload.warmUp());
        int n = settings.repeat();
        Sample[] samples = new Sample[n];
        long[][] deltas = new long[probes.length][n];
        long[] before = new long[probes.length];
        for (int i = 0; i < n; i++) {
            for (int p = 0; p < probes.length; p++) {
                before[p] = probes[p].counter().getAsLong();
            }
            samples[i] = runner.run(device, workload);
            for (int p = 0; p < probes.length; p++) {
                deltas[p][i] = probes[p].counter().getAsLong() - before[p];
            }
        }
        Measured m = Measured.of(samples, deltas);
        report(label, workload.describe(), m);
        return m;
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
