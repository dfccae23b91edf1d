package io.stripestack.blockdev.readahead;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A quick comparison over a temporary file: sequential 128 KiB reads at queue depth 1 with readahead off,
 * 1 MiB and 4 MiB against 4 MiB reads, and random 4 KiB reads with readahead off and on. It shows the
 * stage's effect on request sizes below and its overhead; it is no disk benchmark (see docs/readahead.md).
 *
 * <p>Built for a shared, loaded machine, where throughput drifts by a factor of two within seconds: the
 * variants being compared run interleaved, in small paired pieces, so that each ratio compares pieces run
 * moments apart. Sequential: the file is cut into regions; every variant reads each region (a fresh
 * stream, so ramp-up counts), in an order rotated from region to region. Random: batches of reads with
 * readahead on and off alternate. Each variant keeps its own stage over its own open file for the whole
 * run. The summary gives the median of the per-region (per-batch-pair) ratios and each variant's total.
 *
 * <p>Usage: {@code ReadaheadBench [file-MiB (default 256)] [directory (default java.io.tmpdir)] [--direct]
 * [--rounds=N (default 3)] [--probe]}. {@code --direct} opens the file with O_DIRECT, so reads below
 * bypass the page cache; {@code --probe} first measures the file itself at several read sizes and queue
 * depths 1 and 2, which shows what the device below gives the prefetch reads.
 */
public final class ReadaheadBench {
    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;
    private static final long REGION_BYTES = 32L * MIB;
    private static final int RANDOM_BATCHES = 40;
    private static final int RANDOM_BATCH_READS = 250;

    /** The file, opened once: a process may open a member file only once. */
    private final FileBlockDevice shared;
    private final ReadaheadBudget budget = new ReadaheadBudget(64L * MIB);

    private ReadaheadBench(Path file, boolean direct) throws IOException {
        this.shared = FileBlockDevice.open(file, 4096, direct, true);
    }

    /** One variant's view of the shared file: counts that variant's reads below and leaves the file open on close. */
    private static final class CountingView implements BlockDevice {
        private final BlockDevice file;
        private final IoStats stats;

        CountingView(BlockDevice file, String label) {
            this.file = file;
            this.stats = new IoStats("bench:" + label);
        }

        @Override
        public String name() {
            return file.name();
        }

        @Override
        public long size() {
            return file.size();
        }

        @Override
        public int logicalBlockSize() {
            return file.logicalBlockSize();
        }

        @Override
        public Geometry geometry() {
            return file.geometry();
        }

        @Override
        public void read(long offset, ByteBuffer dst) throws IOException {
            int length = dst.remaining();
            long started = stats.startIo();
            file.read(offset, dst);
            stats.endRead(started, length);
        }

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            throw new IOException(name() + " is read-only in the bench");
        }

        @Override
        public void flush() {
        }

        @Override
        public IoStats stats() {
            return stats;
        }

        @Override
        public void close() {
        }
    }

    /** A request size at one read_ahead_kb, with its own stage and file, and the time it has spent. */
    private final class Variant implements AutoCloseable {
        final String label;
        final int requestBytes;
        final long readAheadKb;
        final CountingView member;
        final ReadaheadBlockDevice device;
        final ByteBuffer buffer;
        long nanos;
        long bytes;
        long requests;

        Variant(String label, int requestBytes, long readAheadKb) throws IOException {
            this.label = label;
            this.requestBytes = requestBytes;
            this.readAheadKb = readAheadKb;
            this.member = new CountingView(shared, label);
            this.device = new ReadaheadBlockDevice(member, budget);
            this.buffer = alignedBuffer(requestBytes);
            device.setReadAheadKb(readAheadKb);
        }

        /** Reads {@code [from, to)} sequentially as a fresh stream; returns MiB/s. */
        double readRegion(long from, long to) throws IOException {
            long started = System.nanoTime();
            for (long at = from; at < to; at += requestBytes) {
                device.read(at, buffer.clear());
            }
            long took = System.nanoTime() - started;
            // Restart the streams and return what the region left prefetched, so each region starts cold,
            // and let prefetches still in flight finish: their reads must not slow the next variant down.
            device.setReadAheadKb(readAheadKb);
            while (budget.inUseBytes() > 0) {
                LockSupport.parkNanos(100_000);
            }
            return account(to - from, (to - from) / requestBytes, took);
        }

        /** Reads {@code count} requests at random aligned offsets; returns MiB/s. */
        double readRandom(SplittableRandom offsets, int count) throws IOException {
            long slots = device.size() / requestBytes;
            long started = System.nanoTime();
            for (int i = 0; i < count; i++) {
                device.read(offsets.nextLong(slots) * requestBytes, buffer.clear());
            }
            return account((long) count * requestBytes, count, System.nanoTime() - started);
        }

        private double account(long readBytes, long readRequests, long took) {
            nanos += took;
            bytes += readBytes;
            requests += readRequests;
            return readBytes / (double) MIB / (took / 1e9);
        }

        void printTotal() {
            long readsBelow = member.stats().readOps();
            double avgBelowKib = readsBelow == 0 ? 0 : member.stats().readBytes() / (double) readsBelow / KIB;
            double hitPercent = 100.0 * device.stats().layerCounter("readahead_hits") / requests;
            System.out.printf("%-36s %10.1f %12d %14.1f %8.1f%n", label, bytes / (double) MIB / (nanos / 1e9),
                    readsBelow, avgBelowKib, hitPercent);
        }

        @Override
        public void close() throws IOException {
            device.close();
        }
    }

    public static void main(String[] args) throws Exception {
        List<String> positional = new ArrayList<>();
        boolean direct = false;
        boolean probe = false;
        int rounds = 3;
        for (String arg : args) {
            if (arg.equals("--direct")) {
                direct = true;
            } else if (arg.equals("--probe")) {
                probe = true;
            } else if (arg.startsWith("--rounds=")) {
                rounds = Integer.parseInt(arg.substring("--rounds=".length()));
            } else if (arg.startsWith("--")) {
                throw new IllegalArgumentException("unknown option " + arg
                        + "; usage: ReadaheadBench [file-MiB] [directory] [--direct] [--rounds=N] [--probe]");
            } else {
                positional.add(arg);
            }
        }
        long fileBytes = (positional.size() > 0 ? Long.parseLong(positional.get(0)) : 256) * MIB;
        if (fileBytes % REGION_BYTES != 0) {
            throw new IllegalArgumentException("file of " + fileBytes / MIB + " MiB: must be a multiple of the "
                    + REGION_BYTES / MIB + " MiB region");
        }
        Path dir = Paths.get(positional.size() > 1 ? positional.get(1) : System.getProperty("java.io.tmpdir"));
        Path file = Files.createTempFile(dir, "readahead-bench", ".img");
        try {
            fill(file, fileBytes);
            System.out.printf("file %s, %d MiB, %s, %d rounds%n", file, fileBytes / MIB, direct ? "O_DIRECT" : "page cache",
                    rounds);
            ReadaheadBench bench = new ReadaheadBench(file, direct);
            if (probe) {
                bench.probe();
            }
            bench.sequential(rounds);
            bench.random(rounds);
            bench.shared.close();
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private static void fill(Path file, long bytes) throws IOException {
        try (FileBlockDevice device = FileBlockDevice.create(file, bytes, 4096)) {
            ByteBuffer chunk = ByteBuffer.allocateDirect(4 * MIB);
            SplittableRandom random = new SplittableRandom(1);
            for (long at = 0; at < bytes; at += chunk.capacity()) {
                chunk.clear();
                while (chunk.remaining() >= 8) {
                    chunk.putLong(random.nextLong());
                }
                device.write(at, chunk.flip());
            }
            device.flush();
        }
    }

    /** Exactly {@code bytes} long (alignedSlice alone may leave up to a page more) and page-aligned for O_DIRECT. */
    private static ByteBuffer alignedBuffer(int bytes) {
        return ByteBuffer.allocateDirect(bytes + 4096).alignedSlice(4096).slice(0, bytes);
    }

    /** Sequential reads of the file itself, {@code depth} requests outstanding (one thread each). */
    private void probe() throws Exception {
        System.out.printf("%nthe file itself, sequential reads (MiB/s)%n%-10s %10s %10s%n", "size", "qd 1", "qd 2");
        for (int size : new int[] {128 * KIB, 512 * KIB, MIB, 2 * MIB, 4 * MIB}) {
            System.out.printf("%-10s %10.1f %10.1f%n", size / KIB + " KiB", probe(size, 1), probe(size, 2));
        }
    }

    private double probe(int size, int depth) throws Exception {
        long requests = shared.size() / size;
        AtomicLong nextRequest = new AtomicLong();
        Thread[] threads = new Thread[depth];
        Exception[] failure = new Exception[1];
        long started = System.nanoTime();
        for (int t = 0; t < depth; t++) {
            threads[t] = new Thread(() -> {
                ByteBuffer buffer = alignedBuffer(size);
                try {
                    for (long i = nextRequest.getAndIncrement(); i < requests; i = nextRequest.getAndIncrement()) {
                        shared.read(i * size, buffer.clear());
                    }
                } catch (IOException e) {
                    failure[0] = e;
                }
            });
            threads[t].start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (failure[0] != null) {
            throw failure[0];
        }
        return requests * (double) size / MIB / ((System.nanoTime() - started) / 1e9);
    }

    private void sequential(int rounds) throws IOException {
        try (Variant off = new Variant("sequential 128 KiB, readahead off", 128 * KIB, 0);
             Variant oneMib = new Variant("sequential 128 KiB, readahead 1 MiB", 128 * KIB, 1024);
             Variant fourMib = new Variant("sequential 128 KiB, readahead 4 MiB", 128 * KIB, 4096);
             Variant large = new Variant("sequential 4 MiB, readahead off", 4 * MIB, 0)) {
            Variant[] variants = {off, oneMib, fourMib, large};
            long regions = off.device.size() / REGION_BYTES;
            int samples = (int) (rounds * regions);
            double[][] ratios = new double[variants.length - 1][samples];
            double[] mibPerSecond = new double[variants.length];
            int sample = 0;
            for (int round = 0; round < rounds; round++) {
                for (long region = 0; region < regions; region++, sample++) {
                    for (int k = 0; k < variants.length; k++) {
                        int v = (int) ((k + region + round) % variants.length);
                        mibPerSecond[v] = variants[v].readRegion(region * REGION_BYTES, (region + 1) * REGION_BYTES);
                    }
                    for (int v = 0; v < variants.length - 1; v++) {
                        ratios[v][sample] = mibPerSecond[v] / mibPerSecond[variants.length - 1];
                    }
                }
            }
            System.out.printf("%nsequential, queue depth 1: each variant reads every %d MiB region, in rotated order%n",
                    REGION_BYTES / MIB);
            printHeader();
            for (Variant variant : variants) {
                variant.printTotal();
            }
            for (int v = 0; v < variants.length - 1; v++) {
                printRatio(variants[v].label + " / 4 MiB reads", ratios[v]);
            }
        }
    }

    private void random(int rounds) throws IOException {
        try (Variant off = new Variant("random 4 KiB, readahead off", 4 * KIB, 0);
             Variant on = new Variant("random 4 KiB, readahead 1 MiB", 4 * KIB, 1024)) {
            int samples = rounds * RANDOM_BATCHES / 2;
            double[] ratios = new double[samples];
            SplittableRandom offsets = new SplittableRandom(2);
            for (int sample = 0; sample < samples; sample++) {
                // Both orders in each sample: two batches of each, on-off then off-on.
                double onFirst = on.readRandom(offsets, RANDOM_BATCH_READS) / off.readRandom(offsets, RANDOM_BATCH_READS);
                double offFirst = 1 / (off.readRandom(offsets, RANDOM_BATCH_READS) / on.readRandom(offsets, RANDOM_BATCH_READS));
                ratios[sample] = Math.sqrt(onFirst * offFirst);
            }
            System.out.printf("%nrandom, queue depth 1: batches of %d reads with readahead on and off alternate%n",
                    RANDOM_BATCH_READS);
            printHeader();
            off.printTotal();
            on.printTotal();
            printRatio("random 4 KiB on / off", ratios);
        }
    }

    private static void printHeader() {
        System.out.printf("%-36s %10s %12s %14s %8s%n", "workload", "MiB/s", "reads below", "avg below KiB", "hit %");
    }

    private static void printRatio(String label, double[] ratios) {
        double[] sorted = ratios.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        double median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        System.out.printf("%-56s median %5.2fx of %d pairs (quartiles %.2f, %.2f)%n", label, median, n,
                sorted[n / 4], sorted[(3 * n) / 4]);
    }
}
