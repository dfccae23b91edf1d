package io.stripestack.bench.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.testkit.PacedBlockDevice;
import io.stripestack.bench.raid5.Raid0Array;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Options;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * RAID-5 over n members against RAID-0 over n-1 members (the comparison of the RAID-5 vs RAID-0 read study and the write-path study), both open at
 * once on their own fresh member files and measured in interleaved rounds, so every ratio compares two
 * figures taken seconds apart: full-stripe sequential writes (4 streams), stripe-sized sequential writes
 * shifted by 4 KiB (one stream, 4 outstanding), random 8 MiB reads with 14 outstanding, random 64 KiB writes
 * with 14 outstanding. Prints MB/s, process CPU seconds per GiB and, for RAID-5, member pre-reads per GiB.
 *
 * <p>Members are page-cache files unless {@code --direct} (O_DIRECT) is given. With
 * {@code --member-mbps=N} every member is paced like an independent disk that serves its requests one after
 * another at N MB/s (a request of b bytes occupies the member for b/N seconds after the previous one ends):
 * the (n-1) x bandwidth ceiling of full-stripe writes, which page-cache files sharing two cores cannot show.
 *
 * <p>Usage: {@code Raid5Bench [members=4] [chunkKiB=512] [memberMiB=256] [dir=/tmp] [--rounds=3]
 * [--direct] [--member-mbps=N]}. Plain main, no timed asserts.
 */
public final class Raid5Bench {
    private static final int READ_SIZE = 8 << 20;
    private static final int OUTSTANDING = 14;
    private static final int STREAMS = 4;
    private static final long BYTES_PER_RUN = 256L << 20;

    private Raid5Bench() {
    }

    private interface Workload {
        /** Runs once over {@code device} and returns the bytes moved. */
        long run(BlockDevice device, ByteBuffer[] buffers) throws Exception;
    }

    private record Case(String name, Workload workload) {
    }

    public static void main(String[] args) throws Exception {
        List<String> positional = new ArrayList<>();
        int rounds = 3;
        boolean direct = false;
        long memberBytesPerSecond = 0;
        for (String a : args) {
            if (a.startsWith("--rounds=")) {
                rounds = Integer.parseInt(a.substring(9));
            } else if (a.equals("--direct")) {
                direct = true;
            } else if (a.startsWith("--member-mbps=")) {
                memberBytesPerSecond = Long.parseLong(a.substring(14)) * 1_000_000L;
            } else if (a.startsWith("--")) {
                throw new IllegalArgumentException("unknown option " + a
                        + "; usage: Raid5Bench [members] [chunkKiB] [memberMiB] [dir] [--rounds=N] [--direct] [--member-mbps=N]");
            } else {
                positional.add(a);
            }
        }
        int members = positional.size() > 0 ? Integer.parseInt(positional.get(0)) : 4;
        int chunk = (positional.size() > 1 ? Integer.parseInt(positional.get(1)) : 512) * 1024;
        long memberBytes = (positional.size() > 2 ? Long.parseLong(positional.get(2)) : 256) << 20;
        Path base = Path.of(positional.size() > 3 ? positional.get(3) : System.getProperty("java.io.tmpdir"));
        Path dir = Files.createTempDirectory(base, "raid5bench");
        List<Path> files = new ArrayList<>();
        List<BlockDevice> raid5Members = new ArrayList<>();
        List<BlockDevice> raid0Members = new ArrayList<>();
        Raid5Config config = Raid5Config.defaults("bench").withChunk(chunk);
        try {
            for (int i = 0; i < 2 * members - 1; i++) {
                Path p = dir.resolve((i < members ? "raid5-" : "raid0-") + i + ".img");
                files.add(p);
                FileBlockDevice.create(p, memberBytes, 512).close();
                BlockDevice device = FileBlockDevice.open(p, 512, direct, false);
                if (memberBytesPerSecond > 0) {
                    device = new PacedBlockDevice(device, memberBytesPerSecond);
                }
                (i < members ? raid5Members : raid0Members).add(device);
            }
            try (Raid5Array raid5 = Raid5Array.create(raid5Members, config, Raid5Options.defaults(), true);
                 Raid0Array raid0 = new Raid0Array("raid0", raid0Members, chunk, config.dataOffsetSectors() * 512)) {
                raid5Members.clear();
                raid0Members.clear();
                System.out.printf(Locale.ROOT, "Raid5Bench: RAID-5 x%d vs RAID-0 x%d, chunk %d KiB, members of %d MiB, %s, %s, "
                        + "%d interleaved rounds, %s%n", members, members - 1, chunk >> 10, memberBytes >> 20,
                        direct ? "O_DIRECT" : "page cache",
                        memberBytesPerSecond > 0 ? "each member paced at " + memberBytesPerSecond / 1_000_000 + " MB/s" : "unpaced",
                        rounds, System.getProperty("java.vm.version"));
                measure(raid5, raid0, rounds);
            }
        } finally {
            for (BlockDevice d : raid5Members) {
                d.close();
            }
            for (BlockDevice d : raid0Members) {
                d.close();
            }
            for (Path p : files) {
                Files.deleteIfExists(p);
            }
            Files.deleteIfExists(dir);
        }
    }

    private static void measure(Raid5Array raid5, Raid0Array raid0, int rounds) throws Exception {
        int row = raid5.geometry().optimalIo();
        Case[] cases = {
            new Case("full-stripe seq write x" + STREAMS, (d, b) -> sequentialWrites(d, b, rowMultiple(d.geometry()))),
            new Case("stripe-sized write +4KiB x" + STREAMS, (d, b) -> shiftedStream(d, b, d.geometry().optimalIo(), 4096)),
            new Case("random 8 MiB read x" + OUTSTANDING, Raid5Bench::randomReads),
            new Case("random 64 KiB write x" + OUTSTANDING, (d, b) -> randomWrites(d, b, 64 * 1024)),
        };
        ByteBuffer[] buffers = new ByteBuffer[OUTSTANDING];
        for (int i = 0; i < OUTSTANDING; i++) {
            buffers[i] = ByteBuffer.allocateDirect(Math.max(READ_SIZE, 2 * row));
            while (buffers[i].hasRemaining()) {
                buffers[i].putLong(ThreadLocalRandom.current().nextLong());
            }
            buffers[i].clear();
        }
        // Write both arrays end to end first, so every read reads written blocks and files are allocated.
        sequentialWrites(raid5, buffers, rowMultiple(raid5.geometry()), raid5.size());
        sequentialWrites(raid0, buffers, rowMultiple(raid0.geometry()), raid0.size());
        BlockDevice[] arrays = {raid5, raid0};
        double[][][] mbps = new double[cases.length][2][rounds];
        double[][][] cpu = new double[cases.length][2][rounds];
        double[][] prereads = new double[cases.length][rounds];
        for (int round = -1; round < rounds; round++) {             // round -1 warms the JIT up, untimed
            for (int c = 0; c < cases.length; c++) {
                for (int a = 0; a < 2; a++) {
                    long pre0 = raid5.stats().counter("member_prereads").sum();
                    long cpu0 = processCpuNanos();
                    long t0 = System.nanoTime();
                    long bytes = cases[c].workload.run(arrays[a], buffers);
                    long wall = System.nanoTime() - t0;
                    long cpuNanos = processCpuNanos() - cpu0;
                    if (round >= 0) {
                        double gib = bytes / (double) (1L << 30);
                        mbps[c][a][round] = bytes / 1e6 / (wall / 1e9);
                        cpu[c][a][round] = cpuNanos / 1e9 / gib;
                        if (a == 0) {
                            prereads[c][round] = (raid5.stats().counter("member_prereads").sum() - pre0) / gib;
                        }
                    }
                }
            }
        }
        System.out.println("| workload | RAID-5 MB/s | RAID-0 MB/s | RAID-5 / RAID-0 | RAID-5 CPU s/GiB | RAID-0 CPU s/GiB | RAID-5 pre-reads/GiB |");
        System.out.println("|---|---:|---:|---:|---:|---:|---:|");
        for (int c = 0; c < cases.length; c++) {
            double[] ratio = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                ratio[r] = mbps[c][0][r] / mbps[c][1][r];
            }
            System.out.printf(Locale.ROOT, "| %s | %.0f | %.0f | %.2f (%.2f..%.2f) | %.3f | %.3f | %.0f |%n", cases[c].name,
                    median(mbps[c][0]), median(mbps[c][1]), median(ratio), min(ratio), max(ratio),
                    median(cpu[c][0]), median(cpu[c][1]), median(prereads[c]));
        }
        System.out.println("(medians of the rounds; the ratio's range in brackets; every round ran RAID-5 then RAID-0 for each workload)");
        System.out.println(raid5.stats());
    }

    private static int rowMultiple(Geometry g) {
        return g.optimalIo() * Math.max(1, (4 << 20) / g.optimalIo());
    }

    private static long sequentialWrites(BlockDevice device, ByteBuffer[] buffers, int ioSize) throws Exception {
        return sequentialWrites(device, buffers, ioSize, Math.min(device.size(), BYTES_PER_RUN));
    }

    /** {@value #STREAMS} streams, each writing its own quarter of the first {@code total} bytes in order. */
    private static long sequentialWrites(BlockDevice device, ByteBuffer[] buffers, int ioSize, long total) throws Exception {
        long region = total / STREAMS / ioSize * ioSize;
        return parallel(STREAMS, t -> {
            ByteBuffer buf = buffers[t].duplicate();
            long start = t * region;
            for (long off = 0; off + ioSize <= region; off += ioSize) {
                device.write(start + off, buf.clear().limit(ioSize));
            }
            return region;
        });
    }

    /** One sequential stream of {@code ioSize} writes starting at {@code shift}, {@value #STREAMS} outstanding. */
    private static long shiftedStream(BlockDevice device, ByteBuffer[] buffers, int ioSize, long shift) throws Exception {
        long count = (Math.min(device.size(), BYTES_PER_RUN) - shift) / ioSize;
        AtomicLong next = new AtomicLong();
        return parallel(STREAMS, t -> {
            ByteBuffer buf = buffers[t].duplicate();
            long moved = 0;
            for (long i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
                device.write(shift + i * ioSize, buf.clear().limit(ioSize));
                moved += ioSize;
            }
            return moved;
        });
    }

    private static long randomReads(BlockDevice device, ByteBuffer[] buffers) throws Exception {
        int perThread = (int) Math.max(1, BYTES_PER_RUN / READ_SIZE / OUTSTANDING);
        return parallel(OUTSTANDING, t -> {
            ThreadLocalRandom r = ThreadLocalRandom.current();
            ByteBuffer buf = buffers[t];
            long slots = device.size() / READ_SIZE;
            for (int i = 0; i < perThread; i++) {
                device.read(r.nextLong(slots) * READ_SIZE, buf.clear().limit(READ_SIZE));
            }
            return (long) perThread * READ_SIZE;
        });
    }

    private static long randomWrites(BlockDevice device, ByteBuffer[] buffers, int ioSize) throws Exception {
        int perThread = (int) Math.max(1, BYTES_PER_RUN / 16 / ioSize / OUTSTANDING);
        return parallel(OUTSTANDING, t -> {
            ThreadLocalRandom r = ThreadLocalRandom.current();
            ByteBuffer buf = buffers[t].duplicate();
            long slots = device.size() / ioSize;
            for (int i = 0; i < perThread; i++) {
                device.write(r.nextLong(slots) * ioSize, buf.clear().limit(ioSize));
            }
            return (long) perThread * ioSize;
        });
    }

    private interface PerThread {
        long run(int thread) throws Exception;
    }

    private static long parallel(int threads, PerThread body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Long>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                final int id = t;
                futures.add(pool.submit(() -> body.run(id)));
            }
            long total = 0;
            for (Future<Long> f : futures) {
                total += f.get();
            }
            return total;
        } finally {
            pool.shutdown();
        }
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private static double min(double[] values) {
        double m = Double.MAX_VALUE;
        for (double v : values) {
            m = Math.min(m, v);
        }
        return m;
    }

    private static double max(double[] values) {
        double m = 0;
        for (double v : values) {
            m = Math.max(m, v);
        }
        return m;
    }

    private static long processCpuNanos() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getProcessCpuTime();
        }
        return ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    }
}
