package io.stripestack.blockdev.readahead;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.SplittableRandom;

/**
 * A quick comparison over a temporary file, printed as a table: sequential 128 KiB reads at queue depth 1
 * with readahead off and on, 4 MiB reads, and random 4 KiB reads with readahead off and on. It shows the
 * stage's effect on request sizes below and its overhead; it is no disk benchmark (see docs/readahead.md).
 *
 * <p>Usage: {@code ReadaheadBench [file-MiB (default 128)] [directory (default java.io.tmpdir)] [--direct]};
 * {@code --direct} opens the file with O_DIRECT, so reads below bypass the page cache.
 */
public final class ReadaheadBench {
    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;
    private static final int RANDOM_READS = 20_000;

    private ReadaheadBench() {
    }

    public static void main(String[] args) throws IOException {
        long fileBytes = (args.length > 0 && !args[0].startsWith("--") ? Long.parseLong(args[0]) : 128) * MIB;
        Path dir = Paths.get(args.length > 1 && !args[1].startsWith("--") ? args[1] : System.getProperty("java.io.tmpdir"));
        boolean direct = args.length > 0 && args[args.length - 1].equals("--direct");
        Path file = Files.createTempFile(dir, "readahead-bench", ".img");
        try {
            fill(file, fileBytes);
            ReadaheadBudget budget = new ReadaheadBudget(64L * MIB);
            System.out.printf("file %s, %d MiB, %s%n", file, fileBytes / MIB, direct ? "O_DIRECT" : "page cache");
            System.out.printf("%-34s %10s %10s %12s %14s %10s%n",
                    "workload", "MiB/s", "reads/s", "reads below", "avg below KiB", "hit %");
            run(file, budget, direct, "sequential 128 KiB, readahead off", 128 * KIB, 0, false);
            run(file, budget, direct, "sequential 128 KiB, readahead 1 MiB", 128 * KIB, 1024, false);
            run(file, budget, direct, "sequential 128 KiB, readahead 4 MiB", 128 * KIB, 4096, false);
            run(file, budget, direct, "sequential 4 MiB, readahead off", 4 * MIB, 0, false);
            run(file, budget, direct, "random 4 KiB, readahead off", 4 * KIB, 0, true);
            run(file, budget, direct, "random 4 KiB, readahead 1 MiB", 4 * KIB, 1024, true);
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

    private static void run(Path file, ReadaheadBudget budget, boolean direct, String label, int requestBytes,
            long readAheadKb, boolean random) throws IOException {
        try (FileBlockDevice member = FileBlockDevice.open(file, 4096, direct, true);
             ReadaheadBlockDevice device = new ReadaheadBlockDevice(member, budget)) {
            device.setReadAheadKb(readAheadKb);
            ByteBuffer buffer = ByteBuffer.allocateDirect(requestBytes + 4096).alignedSlice(4096);
            long requests = random ? RANDOM_READS : device.size() / requestBytes;
            long blocks = device.size() / requestBytes;
            SplittableRandom offsets = new SplittableRandom(2);
            long started = System.nanoTime();
            for (long i = 0; i < requests; i++) {
                long offset = (random ? offsets.nextLong(blocks) : i) * requestBytes;
                device.read(offset, buffer.clear());
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            print(label, device, member, requests * (double) requestBytes, requests, seconds);
        }
    }

    private static void print(String label, ReadaheadBlockDevice device, BlockDevice member, double bytes, long requests,
            double seconds) {
        long readsBelow = member.stats().readOps();
        double avgBelowKib = readsBelow == 0 ? 0 : member.stats().readBytes() / (double) readsBelow / KIB;
        double hitPercent = 100.0 * device.stats().layerCounter("readahead_hits") / requests;
        System.out.printf("%-34s %10.1f %10.0f %12d %14.1f %10.1f%n", label, bytes / MIB / seconds,
                requests / seconds, readsBelow, avgBelowKib, hitPercent);
    }
}
