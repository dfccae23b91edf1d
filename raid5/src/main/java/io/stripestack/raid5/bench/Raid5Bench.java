package io.stripestack.raid5.bench;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.raid5.Raid0Array;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Files;
import io.stripestack.raid5.Raid5Options;
import io.stripestack.raid5.Xor;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;

/**
 * RAID-5 over n members against RAID-0 over n-1 members of the same files (seed 000's experiment):
 * random 8 MiB reads with 14 outstanding, full-stripe sequential writes, random 64 KiB writes, and the
 * XOR routines against a plain copy. Prints throughput and process CPU seconds per GiB moved. Member
 * files live in a temporary directory and are deleted at the end; they are small and freshly written,
 * so reads mostly come from the page cache: the numbers compare the engines' CPU cost, not disks.
 *
 * <p>Usage: {@code Raid5Bench [members=5] [chunkKiB=512] [memberMiB=64] [dir=/tmp]}. Plain main, no
 * timed asserts; keep runs short on shared machines.
 */
public final class Raid5Bench {
    private static final int READ_SIZE = 8 << 20;
    private static final int OUTSTANDING = 14;

    private Raid5Bench() {
    }

    public static void main(String[] args) throws Exception {
        int members = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        int chunk = (args.length > 1 ? Integer.parseInt(args[1]) : 512) * 1024;
        long memberBytes = (args.length > 2 ? Long.parseLong(args[2]) : 64) << 20;
        Path base = Path.of(args.length > 3 ? args[3] : System.getProperty("java.io.tmpdir"));
        Path dir = Files.createTempDirectory(base, "raid5bench");
        List<Path> paths = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            paths.add(dir.resolve("member" + i + ".img"));
        }
        List<String[]> table = new ArrayList<>();
        try {
            Raid5Config config = Raid5Config.defaults("bench").withChunk(chunk);
            long dataOffset = config.dataOffsetSectors() * 512;
            try (Raid5Array raid5 = Raid5Files.create(paths, memberBytes, config, Raid5Options.defaults())) {
                int row = raid5.geometry().optimalIo();
                String label = "raid5 " + members + " ";
                table.add(run(label + "full-stripe seq write", raid5,
                        (dev, buf) -> sequentialWrites(dev, buf, row * Math.max(1, (4 << 20) / row))));
                table.add(run(label + "random 8 MiB read x14", raid5, Raid5Bench::randomReads));
                table.add(run(label + "random 64 KiB write x14", raid5, (dev, buf) -> randomWrites(dev, 64 * 1024)));
                System.out.println(raid5.stats());
            }
            // RAID-0 over the first n-1 of the same files, after the RAID-5 array has let go of them.
            List<BlockDevice> zeroMembers = new ArrayList<>();
            for (int i = 0; i < members - 1; i++) {
                zeroMembers.add(FileBlockDevice.open(paths.get(i), 512, false, false));
            }
            try (Raid0Array raid0 = new Raid0Array("raid0", zeroMembers, chunk, dataOffset)) {
                int stripe = raid0.geometry().optimalIo();
                String label = "raid0 " + (members - 1) + " ";
                table.add(run(label + "seq write", raid0,
                        (dev, buf) -> sequentialWrites(dev, buf, stripe * Math.max(1, (4 << 20) / stripe))));
                table.add(run(label + "random 8 MiB read x14", raid0, Raid5Bench::randomReads));
                table.add(run(label + "random 64 KiB write x14", raid0, (dev, buf) -> randomWrites(dev, 64 * 1024)));
            }
        } finally {
            for (Path p : paths) {
                Files.deleteIfExists(p);
            }
            Files.deleteIfExists(dir);
        }
        xorTable(members, Math.min(chunk, 256 * 1024), table);
        System.out.printf(Locale.ROOT, "%-34s %12s %14s%n", "test", "MB/s", "CPU s per GiB");
        for (String[] line : table) {
            System.out.printf(Locale.ROOT, "%-34s %12s %14s%n", line[0], line[1], line[2]);
        }
    }

    private interface Workload {
        /** Runs the workload and returns the bytes moved. */
        long run(BlockDevice device, ByteBuffer[] buffers) throws Exception;
    }

    /** One untimed pass (JIT, page cache), then the measured pass. */
    private static String[] run(String label, BlockDevice device, Workload workload) throws Exception {
        ByteBuffer[] buffers = new ByteBuffer[OUTSTANDING];
        for (int i = 0; i < OUTSTANDING; i++) {
            buffers[i] = ByteBuffer.allocateDirect(READ_SIZE);
        }
        workload.run(device, buffers);
        long cpu0 = processCpuNanos();
        long t0 = System.nanoTime();
        long bytes = workload.run(device, buffers);
        long wall = System.nanoTime() - t0;
        long cpu = processCpuNanos() - cpu0;
        double mbps = bytes / 1e6 / (wall / 1e9);
        double cpuPerGib = (cpu / 1e9) / (bytes / (double) (1L << 30));
        return new String[] {label, String.format(Locale.ROOT, "%.0f", mbps), String.format(Locale.ROOT, "%.3f", cpuPerGib)};
    }

    private static long randomReads(BlockDevice device, ByteBuffer[] buffers) throws Exception {
        int perThread = 8;
        return parallel(OUTSTANDING, t -> {
            ThreadLocalRandom r = ThreadLocalRandom.current();
            ByteBuffer buf = buffers[t];
            long slots = device.size() / READ_SIZE;
            for (int i = 0; i < perThread; i++) {
                long offset = r.nextLong(slots) * READ_SIZE;
                device.read(offset, buf.clear());
            }
            return (long) perThread * READ_SIZE;
        });
    }

    private static long sequentialWrites(BlockDevice device, ByteBuffer[] buffers, int ioSize) throws Exception {
        int threads = 4;
        long region = device.size() / threads / ioSize * ioSize;
        return parallel(threads, t -> {
            ByteBuffer buf = buffers[t].duplicate().clear().limit(ioSize);
            long start = t * region;
            for (long off = 0; off + ioSize <= region; off += ioSize) {
                device.write(start + off, buf.clear().limit(ioSize));
            }
            return region;
        });
    }

    private static long randomWrites(BlockDevice device, int ioSize) throws Exception {
        int perThread = 200;
        return parallel(OUTSTANDING, t -> {
            ThreadLocalRandom r = ThreadLocalRandom.current();
            ByteBuffer buf = ByteBuffer.allocateDirect(ioSize);
            long slots = device.size() / ioSize;
            for (int i = 0; i < perThread; i++) {
                device.write(r.nextLong(slots) * ioSize, buf.clear());
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

    private static void xorTable(int members, int chunk, List<String[]> table) {
        int bytes = chunk;
        for (Xor routine : Xor.candidates()) {
            Xor.measure(routine, members - 1, bytes, 200);          // until the JIT has compiled it
            long mbps = Xor.measure(routine, members - 1, bytes, 100);
            table.add(new String[] {"xor " + routine.name() + " (" + (members - 1) + " src)", Long.toString(mbps), "-"});
        }
        ByteBuffer src = ByteBuffer.allocateDirect(chunk);
        ByteBuffer dst = ByteBuffer.allocateDirect(chunk);
        long mbps = 0;
        for (int round = 0; round < 2; round++) {                   // the first round warms up
            long copied = 0;
            long t0 = System.nanoTime();
            long deadline = t0 + 100_000_000L;
            while (System.nanoTime() < deadline) {
                dst.put(0, src, 0, chunk);
                copied += chunk;
            }
            mbps = copied * 1000 / Math.max(1, System.nanoTime() - t0);
        }
        table.add(new String[] {"memcpy (ByteBuffer.put)", Long.toString(mbps), "-"});
    }

    private static long processCpuNanos() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getProcessCpuTime();
        }
        return ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    }
}
