package io.stripestack.bench.readahead;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.readahead.ReadaheadBlockDevice;
import io.stripestack.readahead.ReadaheadBudget;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
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
 * 1 MiB, 3 MiB (the default for a 4-disk md RAID-5 with 512 KiB chunks: two stripes) and 4 MiB against
 * 4 MiB reads, and random 4 KiB reads with readahead off and on. It shows the stage's effect on request
 * sizes below and its overhead; it is no disk benchmark (see docs/readahead.md).
 *
 * <p>Built for a shared, loaded machine, where throughput drifts by a factor of two within seconds: the
 * variants being compared run interleaved, in small paired pieces, so that each ratio compares pieces run
 * moments apart. Sequential: the file is cut into regions; every variant reads each region (a fresh
 * stream, so ramp-up and the window fetched past the region's end count), in an order rotated from
 * region to region. Regions are 32 MiB unless {@code --region-mib} says otherwise; longer ones weigh the
 * start and end of each stream less, as a long sequential read would. Random: batches of reads with
 * readahead on and off alternate. Each variant keeps its own stage over its own open file for the whole
 * run. The summary gives the median of the per-region (per-batch-pair) ratios and each variant's total.
 *
 * <p>Usage: {@code ReadaheadBench [file-MiB (default 256)] [directory (default java.io.tmpdir)] [--direct]
 * [--rounds=N (default 3)] [--region-mib=N (default 32)] [--baseline=CLASSES [--baseline-budget-first]]
 * [--probe]}. {@code --direct}
 * opens the file with O_DIRECT, so reads below bypass the page cache; {@code --probe} first measures the
 * file itself at several read sizes and queue depths 1 and 2, which shows what the device below gives the
 * prefetch reads. {@code --baseline} names the classes directory of another build of this package (say,
 * an earlier commit's); its stage then reads every region too, interleaved with this build's, so a change
 * is judged by ratios taken moments apart rather than by runs minutes apart on a machine that drifts.
 * Run it both with and without {@code --baseline-budget-first} (see the constructor).
 */
public final class ReadaheadBench {
    private static final String PACKAGE = "io.stripestack.readahead.";
    /** Where the stage lived in builds from before the readahead module, which still serve as baselines. */
    private static final String BLOCKDEV_PACKAGE = "io.stripestack.blockdev.readahead.";
    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;
    private static final long DEFAULT_REGION_BYTES = 32L * MIB;
    /** Readahead sizes of the sequential variants: 3 MiB is the default over a 4-disk md RAID-5 with 512 KiB chunks. */
    private static final long[] SEQUENTIAL_READ_AHEAD_KB = {1024, 3072, 4096};
    private static final int RANDOM_BATCHES = 40;
    private static final int RANDOM_BATCH_READS = 250;

    /** The file, opened once: a process may open a member file only once. */
    private final FileBlockDevice shared;
    private static final long BUDGET_BYTES = 64L * MIB;

    private final ReadaheadBudget budget;

    private final Path baselineClasses;
    private final BaselineLoader baselineLoader;
    /** The baseline build's ReadaheadBudget, shared by its stages as {@link #budget} is by ours. */
    private final Object baselineBudget;

    /**
     * With a baseline, {@code baselineBudgetFirst} allocates its budget before ours. It matters: of two
     * stages of one build, the one whose budget was allocated later ran up to 1.5x faster on the shared VM
     * (docs/readahead.md), so a comparison is run both ways.
     */
    private ReadaheadBench(Path file, boolean direct, Path baselineClasses, boolean baselineBudgetFirst)
            throws IOException {
        this.shared = FileBlockDevice.open(file, 4096, direct, true);
        this.baselineClasses = baselineClasses;
        if (baselineClasses == null) {
            this.budget = new ReadaheadBudget(BUDGET_BYTES);
            this.baselineLoader = null;
            this.baselineBudget = null;
            return;
        }
        this.baselineLoader = new BaselineLoader(baselineClasses);
        if (baselineBudgetFirst) {
            this.baselineBudget = newBaselineBudget();
            this.budget = new ReadaheadBudget(BUDGET_BYTES);
        } else {
            this.budget = new ReadaheadBudget(BUDGET_BYTES);
            this.baselineBudget = newBaselineBudget();
        }
    }

    private Object newBaselineBudget() throws IOException {
        try {
            return baselineLoader.loadClass(baselineLoader.stagePackage + "ReadaheadBudget").getConstructor(long.class).newInstance(BUDGET_BYTES);
        } catch (ReflectiveOperationException e) {
            throw new IOException("--baseline " + baselineClasses + " holds no usable " + baselineLoader.stagePackage
                    + "ReadaheadBudget(long); point it at a readahead (or older blockdev) build's classes directory", e);
        }
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

    /** A readahead stage under test: this build's, or the {@code --baseline} build's. */
    private interface Stage {
        BlockDevice device();

        /** {@code setReadAheadKb}: restarts the streams and drops what is prefetched. */
        void setReadAheadKb(long kb);

        /** Bytes of the stage's budget still held, prefetches in flight included. */
        long budgetInUse();
    }

    private Stage currentStage(BlockDevice member) {
        ReadaheadBlockDevice device = new ReadaheadBlockDevice(member, budget);
        return new Stage() {
            @Override
            public BlockDevice device() {
                return device;
            }

            @Override
            public void setReadAheadKb(long kb) {
                device.setReadAheadKb(kb);
            }

            @Override
            public long budgetInUse() {
                return budget.inUseBytes();
            }
        };
    }

    /**
     * Loads the readahead package from another build's classes ahead of the current build's (blockdev
     * comes from the current build), so both stages run side by side in one process. A build from before
     * the readahead module has the stage in {@value #BLOCKDEV_PACKAGE}, which is then loaded instead.
     */
    private static final class BaselineLoader extends URLClassLoader {
        final String stagePackage;

        BaselineLoader(Path classes) throws IOException {
            super(new URL[] {classes.toUri().toURL()}, ReadaheadBench.class.getClassLoader());
            boolean blockdevBuild = !Files.isDirectory(classes.resolve(PACKAGE.replace('.', '/')))
                    && Files.isDirectory(classes.resolve(BLOCKDEV_PACKAGE.replace('.', '/')));
            this.stagePackage = blockdevBuild ? BLOCKDEV_PACKAGE : PACKAGE;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith(stagePackage)) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> loaded = findLoadedClass(name);
                if (loaded == null) {
                    loaded = findClass(name);
                }
                if (resolve) {
                    resolveClass(loaded);
                }
                return loaded;
            }
        }
    }

    /** The baseline build's stage over {@code member}, on that build's own budget, driven reflectively outside the timed loops. */
    private Stage baselineStage(BlockDevice member) throws IOException {
        try {
            Class<?> deviceClass = baselineLoader.loadClass(baselineLoader.stagePackage + "ReadaheadBlockDevice");
            BlockDevice device = (BlockDevice) deviceClass.getConstructor(BlockDevice.class, baselineBudget.getClass())
                    .newInstance(member, baselineBudget);
            Method setReadAheadKb = deviceClass.getMethod("setReadAheadKb", long.class);
            Method inUseBytes = baselineBudget.getClass().getMethod("inUseBytes");
            return new Stage() {
                @Override
                public BlockDevice device() {
                    return device;
                }

                @Override
                public void setReadAheadKb(long kb) {
                    invoke(setReadAheadKb, device, kb);
                }

                @Override
                public long budgetInUse() {
                    return (long) invoke(inUseBytes, baselineBudget);
                }
            };
        } catch (ReflectiveOperationException e) {
            throw new IOException("--baseline " + baselineClasses + " holds no usable " + baselineLoader.stagePackage
                    + "ReadaheadBlockDevice(BlockDevice, ReadaheadBudget); point it at a readahead (or older blockdev) build's"
                    + " classes directory", e);
        }
    }

    private static Object invoke(Method method, Object target, Object... args) {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException("baseline " + method.getName() + " failed", e.getCause());
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("baseline " + method.getName() + " is not accessible", e);
        }
    }

    /** A request size at one read_ahead_kb, with its own stage and file, and the time it has spent. */
    private final class Variant implements AutoCloseable {
        final String label;
        final int requestBytes;
        final long readAheadKb;
        final CountingView member;
        final Stage stage;
        final BlockDevice device;
        final ByteBuffer buffer;
        long nanos;
        long bytes;
        long requests;

        Variant(String label, int requestBytes, long readAheadKb) throws IOException {
            this(label, requestBytes, readAheadKb, false);
        }

        Variant(String label, int requestBytes, long readAheadKb, boolean baseline) throws IOException {
            this.label = baseline ? label + " (baseline)" : label;
            this.requestBytes = requestBytes;
            this.readAheadKb = readAheadKb;
            this.member = new CountingView(shared, this.label);
            this.stage = baseline ? baselineStage(member) : currentStage(member);
            this.device = stage.device();
            this.buffer = alignedBuffer(requestBytes);
            stage.setReadAheadKb(readAheadKb);
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
            stage.setReadAheadKb(readAheadKb);
            while (stage.budgetInUse() > 0) {
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
            System.out.printf("%-48s %10.1f %12d %14.1f %8.1f%n", label, bytes / (double) MIB / (nanos / 1e9),
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
        long regionBytes = DEFAULT_REGION_BYTES;
        Path baseline = null;
        boolean baselineBudgetFirst = false;
        for (String arg : args) {
            if (arg.equals("--direct")) {
                direct = true;
            } else if (arg.equals("--probe")) {
                probe = true;
            } else if (arg.startsWith("--rounds=")) {
                rounds = Integer.parseInt(arg.substring("--rounds=".length()));
            } else if (arg.equals("--baseline-budget-first")) {
                baselineBudgetFirst = true;
            } else if (arg.startsWith("--baseline=")) {
                baseline = Paths.get(arg.substring("--baseline=".length()));
            } else if (arg.startsWith("--region-mib=")) {
                regionBytes = Long.parseLong(arg.substring("--region-mib=".length())) * MIB;
            } else if (arg.startsWith("--")) {
                throw new IllegalArgumentException("unknown option " + arg
                        + "; usage: ReadaheadBench [file-MiB] [directory] [--direct] [--rounds=N] [--region-mib=N] [--baseline=CLASSES [--baseline-budget-first]] [--probe]");
            } else {
                positional.add(arg);
            }
        }
        long fileBytes = (positional.size() > 0 ? Long.parseLong(positional.get(0)) : 256) * MIB;
        if (regionBytes <= 0 || regionBytes % (4 * MIB) != 0 || fileBytes % regionBytes != 0) {
            throw new IllegalArgumentException("file of " + fileBytes / MIB + " MiB: must be a multiple of the "
                    + regionBytes / MIB + " MiB region, itself a positive multiple of 4 MiB");
        }
        Path dir = Paths.get(positional.size() > 1 ? positional.get(1) : System.getProperty("java.io.tmpdir"));
        Path file = Files.createTempFile(dir, "readahead-bench", ".img");
        try {
            fill(file, fileBytes);
            System.out.printf("file %s, %d MiB, %s, %d rounds%n", file, fileBytes / MIB, direct ? "O_DIRECT" : "page cache",
                    rounds);
            ReadaheadBench bench = new ReadaheadBench(file, direct, baseline, baselineBudgetFirst);
            if (probe) {
                bench.probe();
            }
            bench.sequential(rounds, regionBytes);
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

    private void sequential(int rounds, long regionBytes) throws IOException {
        List<Variant> variants = new ArrayList<>();
        try {
            variants.add(new Variant("sequential 128 KiB, readahead off", 128 * KIB, 0));
            for (long kb : SEQUENTIAL_READ_AHEAD_KB) {
                variants.add(new Variant("sequential 128 KiB, readahead " + kb / 1024 + " MiB", 128 * KIB, kb));
            }
            if (baselineLoader != null) {
                for (long kb : SEQUENTIAL_READ_AHEAD_KB) {
                    variants.add(new Variant("sequential 128 KiB, readahead " + kb / 1024 + " MiB", 128 * KIB, kb, true));
                }
            }
            variants.add(new Variant("sequential 4 MiB, readahead off", 4 * MIB, 0));
            int reference = variants.size() - 1;
            long regions = shared.size() / regionBytes;
            int samples = (int) (rounds * regions);
            double[][] ratios = new double[reference][samples];
            double[] mibPerSecond = new double[variants.size()];
            int sample = 0;
            for (int round = 0; round < rounds; round++) {
                for (long region = 0; region < regions; region++, sample++) {
                    for (int k = 0; k < variants.size(); k++) {
                        int v = (int) ((k + region + round) % variants.size());
                        mibPerSecond[v] = variants.get(v).readRegion(region * regionBytes, (region + 1) * regionBytes);
                    }
                    for (int v = 0; v < reference; v++) {
                        ratios[v][sample] = mibPerSecond[v] / mibPerSecond[reference];
                    }
                }
            }
            System.out.printf("%nsequential, queue depth 1: each variant reads every %d MiB region, in rotated order%n",
                    regionBytes / MIB);
            printHeader();
            for (Variant variant : variants) {
                variant.printTotal();
            }
            for (int v = 0; v < reference; v++) {
                printRatio(variants.get(v).label + " / 4 MiB reads", ratios[v]);
            }
            if (baselineLoader != null) {
                for (int k = 0; k < SEQUENTIAL_READ_AHEAD_KB.length; k++) {
                    int current = 1 + k;
                    int baseline = 1 + SEQUENTIAL_READ_AHEAD_KB.length + k;
                    double[] paired = new double[samples];
                    for (int i = 0; i < samples; i++) {
                        paired[i] = ratios[current][i] / ratios[baseline][i];
                    }
                    printRatio(variants.get(current).label + ": this build / baseline", paired);
                }
            }
        } finally {
            for (Variant variant : variants) {
                variant.close();
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
        System.out.printf("%-48s %10s %12s %14s %8s%n", "workload", "MiB/s", "reads below", "avg below KiB", "hit %");
    }

    private static void printRatio(String label, double[] ratios) {
        double[] sorted = ratios.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        double median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        System.out.printf("%-68s median %5.2fx of %d pairs (quartiles %.2f, %.2f)%n", label, median, n,
                sorted[n / 4], sorted[(3 * n) / 4]);
    }
}
