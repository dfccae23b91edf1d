package io.stripestack.bench.raid5;

import io.stripestack.raid5.Xor;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Every {@link Xor} routine against a plain {@code ByteBuffer.put(ByteBuffer)} copy of the same size, in
 * one run: 2, 3, 4 and 7 sources, 4 KiB and 64 KiB direct native-order buffers (what the array passes),
 * in CPU seconds of the measuring thread so a loaded machine that deschedules it does not lower the
 * figures. Each cell is measured in interleaved rounds (every routine and the copy once per round);
 * the table gives the median and the range.
 *
 * <p>Two rates per cell: MB/s of destination (parity) bytes, and GB/s of memory traffic, counting
 * what the work must read and write: (sources + 2) x the destination bytes for an XOR pass (sources
 * and destination read, destination written), 2 x for the copy. "vs copy" compares traffic.
 *
 * <p>With {@code profile=mixed} every routine first runs over heap, read-only and big-endian buffers,
 * as in the server, where callers pass several buffer classes and the JIT's profile of the
 * buffer-accessor routines becomes megamorphic; {@code profile=direct} (the default) measures
 * a JVM that has only ever seen direct buffers.
 *
 * <p>Usage: {@code XorBench [rounds=5] [millis=100] [profile=direct|mixed]}. Plain main, single
 * thread, no timed asserts.
 */
public final class XorBench {
    private static final int[] SOURCES = {2, 3, 4, 7};
    private static final int[] SIZES = {4 << 10, 64 << 10};
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private XorBench() {
    }

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        long millis = args.length > 1 ? Long.parseLong(args[1]) : 100;
        boolean mixed = args.length > 2 && args[2].equals("mixed");
        if (!THREADS.isCurrentThreadCpuTimeSupported()) {
            throw new IllegalStateException("XorBench needs the thread CPU clock (ThreadMXBean) of this JVM");
        }
        List<Xor> routines = Xor.candidates();
        if (mixed) {
            pollute(routines);
        }
        System.out.printf(Locale.ROOT, "XorBench: %d rounds of %d ms per cell, profile %s, %s, best() = %s%n",
                rounds, millis, mixed ? "mixed" : "direct", System.getProperty("java.vm.version"), Xor.best().name());
        System.out.println("| routine | sources | buffer | MB/s parity (median, min..max) | GB/s traffic | vs copy |");
        System.out.println("|---|---|---|---|---|---|");
        for (int size : SIZES) {
            for (int sources : SOURCES) {
                measureCell(routines, sources, size, rounds, millis);
            }
        }
    }

    private static void measureCell(List<Xor> routines, int sources, int size, int rounds, long millis) {
        ByteBuffer dst = direct(size, -1);
        ByteBuffer[] srcs = new ByteBuffer[sources];
        for (int k = 0; k < sources; k++) {
            srcs[k] = direct(size, k);
        }
        int[] idx = new int[sources];
        ByteBuffer copySource = direct(size, 99);
        int n = routines.size();
        long[][] mbps = new long[n + 1][rounds];
        // One untimed round first: the JIT compiles what it sees running.
        for (int round = -1; round < rounds; round++) {
            for (int r = 0; r <= n; r++) {
                Xor routine = r < n ? routines.get(r) : null;
                long start = THREADS.getCurrentThreadCpuTime();
                long deadline = System.nanoTime() + millis * 1_000_000L;
                long bytes = 0;
                do {
                    if (routine != null) {
                        routine.xorInto(dst, 0, srcs, idx, sources, size);
                    } else {
                        dst.put(0, copySource, 0, size);
                    }
                    bytes += size;
                } while (System.nanoTime() < deadline);
                if (round >= 0) {
                    mbps[r][round] = bytes * 1000 / Math.max(1, THREADS.getCurrentThreadCpuTime() - start);
                }
            }
        }
        long copyTraffic = median(mbps[n]) * 2;
        String buffer = (size >> 10) + " KiB";
        for (int r = 0; r <= n; r++) {
            String name = r < n ? routines.get(r).name() : "copy (put)";
            long traffic = median(mbps[r]) * (r < n ? sources + 2 : 2);
            System.out.printf(Locale.ROOT, "| %s | %d | %s | %d (%d..%d) | %.1f | %.2f |%n", name, sources, buffer,
                    median(mbps[r]), min(mbps[r]), max(mbps[r]), traffic / 1000.0, (double) traffic / copyTraffic);
        }
    }

    /** Runs every routine over the other buffer kinds the server passes, so the JIT profiles them too. */
    private static void pollute(List<Xor> routines) {
        ByteBuffer[] kinds = {
            ByteBuffer.allocate(4096), ByteBuffer.allocate(4096).order(ByteOrder.nativeOrder()),
            direct(4096, 1).asReadOnlyBuffer(), ByteBuffer.allocateDirect(4096), direct(4096, 2),
        };
        for (Xor routine : routines) {
            for (int i = 0; i < 2_000; i++) {
                ByteBuffer dst = kinds[i % 2 == 0 ? 0 : 3].order(kinds[i % kinds.length].order());
                ByteBuffer[] srcs = new ByteBuffer[4];
                for (int k = 0; k < srcs.length; k++) {
                    srcs[k] = kinds[(i + k) % kinds.length].duplicate().order(dst.order());
                }
                routine.xorInto(dst, 0, srcs, new int[4], 1 + i % 4, 512);
            }
        }
    }

    private static ByteBuffer direct(int size, int seed) {
        ByteBuffer buf = ByteBuffer.allocateDirect(size).order(ByteOrder.nativeOrder());
        for (int i = 0; i < size; i += 8) {
            buf.putLong(i, i * 0x9E3779B97F4A7C15L + seed);
        }
        return buf;
    }

    private static long median(long[] values) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private static long min(long[] values) {
        return Arrays.stream(values).min().orElse(0);
    }

    private static long max(long[] values) {
        return Arrays.stream(values).max().orElse(0);
    }
}
