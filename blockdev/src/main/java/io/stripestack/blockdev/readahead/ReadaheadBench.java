package io.stripestack.blockdev.readahead;

import io.stripestack.blockdev.FileBlockDevice;
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

/**
 * A quick comparison over a temporary file, printed as a table: sequential 128 KiB reads at queue depth 1
 * with readahead off and on, 4 MiB reads, and random 4 KiB reads with readahead off and on. It shows the
 * stage's effect on request sizes below and its overhead; it is no disk benchmark (see docs/readahead.md).
 *
 * <p>On a shared machine single runs are noisy, so the workloads run in rounds, interleaved, and the
 * summary gives each workload's median and the median of the per-round ratios the goals are stated in
 * (128 KiB through the stage against 4 MiB reads of the same round; random with readahead on against off).
 *
 * <p>Usage: {@code ReadaheadBench [file-MiB (default 128)] [directory (default java.io.tmpdir)] [--direct]
 * [--rounds=N (default 3)] [--probe]}. {@code --direct} opens the file with O_DIRECT, so reads below
 * bypass the page cache; {@code --probe} first measures the file itself at several read sizes and queue
 * depths 1 and 2, which shows what the device below gives the prefetch reads.
 */
public final class ReadaheadBench {
    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;
    private static final int RANDOM_READS = 20_000;

    private final Path file;
    private final boolean direct;
    private final ReadaheadBudget budget = new ReadaheadBudget(64L * MIB);

    private ReadaheadBench(Path file, boolean direct) {
        this.file = file;
        this.direct = direct;
    }

    /** One line of the table: a request size and pattern at one read_ahead_kb. */
    private record Workload(String label, int requestBytes, long readAheadKb, boolean random) {
    }

    private static final Workload SEQ_OFF = new Workload("sequential 128 KiB, readahead off", 128 * KIB, 0, false);
    private static final Workload SEQ_1M = new Workload("sequential 128 KiB, readahead 1 MiB", 128 * KIB, 1024, false);
    private static final Workload SEQ_4M = new Workload("sequential 128 KiB, readahead 4 MiB", 128 * KIB, 4096, false);
    private static final Workload LARGE = new Workload("sequential 4 MiB, readahead off", 4 * MIB, 0, false);
    private static final Workload RANDOM_OFF = new Workload("random 4 KiB, readahead off", 4 * KIB, 0, true);
    private static final Workload RANDOM_ON = new Workload("random 4 KiB, readahead 1 MiB", 4 * KIB, 1024, true);
    private static final List<Workload> WORKLOADS = List.of(SEQ_OFF, SEQ_1M, SEQ_4M, LARGE, RANDOM_OFF, RANDOM_ON);

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
        long fileBytes = (positional.size() > 0 ? Long.parseLong(positional.get(0)) : 128) * MIB;
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
            bench.rounds(rounds);
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

    /** Sequential reads of the file itself, {@code depth} requests outstanding (one thread each). */
    private void probe() throws Exception {
        System.out.printf("%nthe file itself, sequential reads (MiB/s)%n%-10s %10s %10s%n", "size", "qd 1", "qd 2");
        for (int size : new int[] {128 * KIB, 512 * KIB, MIB, 2 * MIB, 4 * MIB}) {
            System.out.printf("%-10s %10.1f %10.1f%n", size / KIB + " KiB", probe(size, 1), probe(size, 2));
        }
        System.out.println();
    }

    private double probe(int size, int depth) throws Exception {
        try (FileBlockDevice member = FileBlockDevice.open(file, 4096, direct, true)) {
            long requests = member.size() / size;
            AtomicLong nextRequest = new AtomicLong();
            Thread[] threads = new Thread[depth];
            Exception[] failure = new Exception[1];
            long started = System.nanoTime();
            for (int t = 0; t < depth; t++) {
                threads[t] = new Thread(() -> {
                    ByteBuffer buffer = ByteBuffer.allocateDirect(size + 4096).alignedSlice(4096);
                    try {
                        for (long i = nextRequest.getAndIncrement(); i < requests; i = nextRequest.getAndIncrement()) {
                            member.read(i * size, buffer.clear());
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
    }

    private void rounds(int rounds) throws IOException {
        double[][] mibPerSecond = new double[WORKLOADS.size()][rounds];
        System.out.printf("%-5s %-36s %10s %10s %12s %14s %10s%n",
                "round", "workload", "MiB/s", "reads/s", "reads below", "avg below KiB", "hit %");
        for (int round = 0; round < rounds; round++) {
            for (int w = 0; w < WORKLOADS.size(); w++) {
                mibPerSecond[w][round] = run(round, WORKLOADS.get(w));
            }
        }
        System.out.printf("%nmedians of %d rounds%n", rounds);
        for (int w = 0; w < WORKLOADS.size(); w++) {
            System.out.printf("%-42s %10.1f MiB/s%n", WORKLOADS.get(w).label(), median(mibPerSecond[w]));
        }
        printRatio("sequential 128 KiB at 1 MiB / 4 MiB reads", mibPerSecond, SEQ_1M, LARGE);
        printRatio("sequential 128 KiB at 4 MiB / 4 MiB reads", mibPerSecond, SEQ_4M, LARGE);
        printRatio("sequential 128 KiB off / 4 MiB reads", mibPerSecond, SEQ_OFF, LARGE);
        printRatio("random 4 KiB on / off", mibPerSecond, RANDOM_ON, RANDOM_OFF);
    }

    private static void printRatio(String label, double[][] mibPerSecond, Workload numerator, Workload denominator) {
        double[] a = mibPerSecond[WORKLOADS.indexOf(numerator)];
        double[] b = mibPerSecond[WORKLOADS.indexOf(denominator)];
        double[] ratios = new double[a.length];
        for (int i = 0; i < a.length; i++) {
            ratios[i] = a[i] / b[i];
        }
        System.out.printf("%-42s %10.2fx (per round: %s)%n", label, median(ratios), Arrays.toString(round2(ratios)));
    }

    private static double[] round2(double[] values) {
        double[] rounded = new double[values.length];
        for (int i = 0; i < values.length; i++) {
            rounded[i] = Math.round(values[i] * 100) / 100.0;
        }
        return rounded;
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    private double run(int round, Workload workload) throws IOException {
        try (FileBlockDevice member = FileBlockDevice.open(file, 4096, direct, true);
             ReadaheadBlockDevice device = new ReadaheadBlockDevice(member, budget)) {
            device.setReadAheadKb(workload.readAheadKb());
            int requestBytes = workload.requestBytes();
            ByteBuffer buffer = ByteBuffer.allocateDirect(requestBytes + 4096).alignedSlice(4096);
            long requests = workload.random() ? RANDOM_READS : device.size() / requestBytes;
            long blocks = device.size() / requestBytes;
            SplittableRandom offsets = new SplittableRandom(2 + round);
            long started = System.nanoTime();
            for (long i = 0; i < requests; i++) {
                long offset = (workload.random() ? offsets.nextLong(blocks) : i) * requestBytes;
                device.read(offset, buffer.clear());
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            double mibPerSecond = requests * (double) requestBytes / MIB / seconds;
            long readsBelow = member.stats().readOps();
            double avgBelowKib = readsBelow == 0 ? 0 : member.stats().readBytes() / (double) readsBelow / KIB;
            double hitPercent = 100.0 * device.stats().layerCounter("readahead_hits") / requests;
            System.out.printf("%-5d %-36s %10.1f %10.0f %12d %14.1f %10.1f%n", round, workload.label(), mibPerSecond,
                    requests / seconds, readsBelow, avgBelowKib, hitPercent);
            return mibPerSecond;
        }
    }
}
