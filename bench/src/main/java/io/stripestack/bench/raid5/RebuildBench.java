package io.stripestack.bench.raid5;

import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Files;
import io.stripestack.raid5.Raid5Options;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Rebuild speed against the members' own sequential bandwidth, measured in the same run, and the
 * latency of foreground reads while a rebuild runs. Member files are created in a temporary directory
 * (deleted at the end); fresh and small, they mostly live in the page cache, so "bandwidth" here is
 * the file path's (pread/pwrite through the page cache), the same path the rebuild uses.
 *
 * <p>Steps: (1) sequential chunk-sized reads of one member file and sequential writes of a new file:
 * the members' bandwidth; (2) fail a member, add a fresh spare, sync_speed_max unlimited, time the
 * rebuild with no foreground load; (3) random 4 KiB reads from one thread, latency with no rebuild;
 * (4) the same during a rebuild at md's default limits (min 1000, max 200000 KiB/s), with its speed.
 *
 * <p>Usage: {@code RebuildBench [members=4] [chunkKiB=512] [memberMiB=128] [dir=/tmp]}. Plain main.
 */
public final class RebuildBench {
    private RebuildBench() {
    }

    public static void main(String[] args) throws Exception {
        int members = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int chunk = (args.length > 1 ? Integer.parseInt(args[1]) : 512) * 1024;
        long memberBytes = (args.length > 2 ? Long.parseLong(args[2]) : 128) << 20;
        Path base = Path.of(args.length > 3 ? args[3] : System.getProperty("java.io.tmpdir"));
        Path dir = Files.createTempDirectory(base, "rebuildbench");
        List<Path> paths = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            paths.add(dir.resolve("member" + i + ".img"));
        }
        List<Path> spares = List.of(dir.resolve("spare0.img"), dir.resolve("spare1.img"));
        List<Path> scratch = new ArrayList<>(List.of(dir.resolve("seqwrite.img")));
        try {
            Raid5Config config = Raid5Config.defaults("rebuild").withChunk(chunk);
            long dataBytes;
            try (Raid5Array array = Raid5Files.create(paths, memberBytes, config, Raid5Options.defaults())) {
                fill(array);
                dataBytes = array.memberBytes() - config.dataOffsetSectors() * 512;
            }
            double readMBps = sequentialRead(paths.get(0), chunk, config.dataOffsetSectors() * 512, dataBytes);
            double writeMBps = sequentialWrite(scratch.get(0), chunk, memberBytes, dataBytes);
            double memberMBps = Math.min(readMBps, writeMBps);
            System.out.printf(Locale.ROOT, "members: %d x %d MiB, chunk %d KiB; data per member %d MiB; load %s%n",
                    members, memberBytes >> 20, chunk >> 10, dataBytes >> 20, loadAverage());
            System.out.printf(Locale.ROOT, "member sequential read  %8.0f MB/s%n", readMBps);
            System.out.printf(Locale.ROOT, "member sequential write %8.0f MB/s%n", writeMBps);

            try (Raid5Array array = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
                array.setSyncSpeedMax(Integer.MAX_VALUE);
                array.failMember(1);
                long start = System.nanoTime();
                Raid5Files.addSpare(array, spares.get(0), 0);
                if (!array.awaitSyncIdle(10, TimeUnit.MINUTES)) {
                    throw new IllegalStateException("rebuild did not finish: " + array.syncProgress());
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                double rebuildMBps = dataBytes / seconds / 1e6;
                System.out.printf(Locale.ROOT, "rebuild, no foreground load %8.0f MB/s (%.2fx the member bandwidth "
                        + "%.0f MB/s) in %.2f s%n", rebuildMBps, rebuildMBps / memberMBps, memberMBps, seconds);

                double[] idle = readLatencies(array, 3000, false);
                System.out.printf(Locale.ROOT, "4 KiB random read, no rebuild:     p50 %6.1f us  p99 %7.1f us%n",
                        idle[0], idle[1]);
                array.setSyncSpeedMax(Raid5Array.DEFAULT_SYNC_SPEED_MAX);
                array.failMember(1);
                long rebuildStart = System.nanoTime();
                Raid5Files.addSpare(array, spares.get(1), 0);
                while (!array.syncAction().equals("recover")) {
                    Thread.onSpinWait();            // the sync thread picks the rebuild up asynchronously
                }
                double[] busy = readLatencies(array, 3000, true);
                long doneSectors = array.syncProgress().doneSectors();
                double during = (System.nanoTime() - rebuildStart) / 1e9;
                System.out.printf(Locale.ROOT, "4 KiB random read, during rebuild: p50 %6.1f us  p99 %7.1f us; "
                        + "rebuild meanwhile %.0f MB/s (%s)%n", busy[0], busy[1],
                        doneSectors * 512 / during / 1e6, array.syncAction());
                array.setSyncSpeedMax(Integer.MAX_VALUE);
                array.awaitSyncIdle(10, TimeUnit.MINUTES);
            }
        } finally {
            for (Path p : paths) {
                Files.deleteIfExists(p);
            }
            for (Path p : spares) {
                Files.deleteIfExists(p);
            }
            for (Path p : scratch) {
                Files.deleteIfExists(p);
            }
            Files.deleteIfExists(dir);
        }
    }

    private static void fill(Raid5Array array) throws Exception {
        int row = array.geometry().optimalIo();
        ByteBuffer buf = ByteBuffer.allocateDirect(row);
        byte[] random = new byte[row];
        ThreadLocalRandom.current().nextBytes(random);
        buf.put(random).flip();
        for (long off = 0; off < array.size(); off += row) {
            array.write(off, buf.clear());
        }
        array.flush();
    }

    private static double sequentialRead(Path file, int chunk, long from, long bytes) throws Exception {
        try (FileBlockDevice d = FileBlockDevice.open(file, 512, false, true)) {
            ByteBuffer buf = ByteBuffer.allocateDirect(chunk);
            long start = System.nanoTime();
            for (long off = from; off < from + bytes; off += chunk) {
                d.read(off, buf.clear());
            }
            return bytes / ((System.nanoTime() - start) / 1e9) / 1e6;
        }
    }

    private static double sequentialWrite(Path file, int chunk, long size, long bytes) throws Exception {
        try (FileBlockDevice d = FileBlockDevice.create(file, size, 512)) {
            ByteBuffer buf = ByteBuffer.allocateDirect(chunk);
            byte[] random = new byte[chunk];
            ThreadLocalRandom.current().nextBytes(random);
            buf.put(random);
            long start = System.nanoTime();
            for (long off = 0; off < bytes; off += chunk) {
                d.write(off, buf.clear());
            }
            d.flush();
            return bytes / ((System.nanoTime() - start) / 1e9) / 1e6;
        }
    }

    /**
     * {@code count} random 4 KiB reads from one thread (stopping early once a rebuild being watched
     * ends); returns p50 and p99 in microseconds.
     */
    private static double[] readLatencies(Raid5Array array, int count, boolean watchRebuild) throws Exception {
        ByteBuffer buf = ByteBuffer.allocateDirect(4096);
        long blocks = array.size() / 4096;
        long[] nanos = new long[count];
        int done = 0;
        for (; done < count; done++) {
            if (watchRebuild && !array.syncAction().equals("recover")) {
                break;
            }
            long off = ThreadLocalRandom.current().nextLong(blocks) * 4096;
            long start = System.nanoTime();
            array.read(off, buf.clear());
            nanos[done] = System.nanoTime() - start;
        }
        long[] sorted = Arrays.copyOf(nanos, Math.max(1, done));
        Arrays.sort(sorted);
        return new double[] {sorted[sorted.length / 2] / 1e3, sorted[(int) (sorted.length * 0.99)] / 1e3};
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }
}
