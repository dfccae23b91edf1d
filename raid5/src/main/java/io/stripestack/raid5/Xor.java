package io.stripestack.raid5;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * XOR routines for parity, and the start-up choice between them. Like the kernel's xor.ko (which
 * prints "xor: using function: NAME (N MB/sec)"), every candidate runs for a few milliseconds over
 * chunk-sized buffers once per JVM, and the fastest one is used from then on.
 *
 * <p>Every routine computes {@code dst[d, d+len) ^= src0[s0, s0+len) ^ src1[...] ^ ...} with absolute
 * indices (no buffer position changes). Buffers must all have the same byte order (the array makes its
 * views native-order); lengths are multiples of 8 (the array works in 512-byte blocks).
 *
 * <p>Concurrency: routines are stateless and thread-safe; {@link #best()} is computed once under the
 * class-initialisation lock of a holder class.
 */
public abstract class Xor {
    private static final Logger LOG = LoggerFactory.getLogger(Xor.class);

    private final String name;

    private Xor(String name) {
        this.name = name;
    }

    public final String name() {
        return name;
    }

    /** {@code dst[dstIndex, +length) ^= XOR of srcs[k][srcIndex[k], +length)} for k in [0, count). */
    public abstract void xorInto(ByteBuffer dst, int dstIndex, ByteBuffer[] srcs, int[] srcIndex, int count, int length);

    /** {@code dst = XOR of the sources} over the range (the first source is copied, the rest XORed in). */
    public final void xorAssign(ByteBuffer dst, int dstIndex, ByteBuffer[] srcs, int[] srcIndex, int count, int length) {
        dst.put(dstIndex, srcs[0], srcIndex[0], length);
        if (count > 1) {
            shiftedXorInto(dst, dstIndex, srcs, srcIndex, count, length);
        }
    }

    private void shiftedXorInto(ByteBuffer dst, int dstIndex, ByteBuffer[] srcs, int[] srcIndex, int count, int length) {
        // Reuse the caller's arrays without allocating: rotate source 0 to the end for the duration of the call.
        ByteBuffer first = srcs[0];
        int firstIndex = srcIndex[0];
        for (int k = 1; k < count; k++) {
            srcs[k - 1] = srcs[k];
            srcIndex[k - 1] = srcIndex[k];
        }
        try {
            xorInto(dst, dstIndex, srcs, srcIndex, count - 1, length);
        } finally {
            for (int k = count - 1; k > 0; k--) {
                srcs[k] = srcs[k - 1];
                srcIndex[k] = srcIndex[k - 1];
            }
            srcs[0] = first;
            srcIndex[0] = firstIndex;
        }
    }

    /** Byte at a time, all sources per byte: the obvious loop, kept as the baseline. */
    static final Xor BYTE_LOOP = new Xor("byte-loop") {
        @Override
        public void xorInto(ByteBuffer dst, int d, ByteBuffer[] srcs, int[] s, int count, int length) {
            for (int i = 0; i < length; i++) {
                byte x = dst.get(d + i);
                for (int k = 0; k < count; k++) {
                    x ^= srcs[k].get(s[k] + i);
                }
                dst.put(d + i, x);
            }
        }
    };

    /** 64 bits at a time, one source per pass over the destination. */
    static final Xor LONG_PER_SOURCE = new Xor("long-1src") {
        @Override
        public void xorInto(ByteBuffer dst, int d, ByteBuffer[] srcs, int[] s, int count, int length) {
            for (int k = 0; k < count; k++) {
                ByteBuffer src = srcs[k];
                int si = s[k];
                for (int i = 0; i < length; i += 8) {
                    dst.putLong(d + i, dst.getLong(d + i) ^ src.getLong(si + i));
                }
            }
        }
    };

    /** 64 bits at a time, up to {@code arity} sources folded per pass (like the kernel's xor_N functions). */
    private static final class FixedArity extends Xor {
        private final int arity;

        FixedArity(int arity) {
            super("long-" + arity + "src");
            this.arity = arity;
        }

        @Override
        public void xorInto(ByteBuffer dst, int d, ByteBuffer[] srcs, int[] s, int count, int length) {
            int k = 0;
            while (k < count) {
                int left = count - k;
                if (left >= 4 && arity >= 4) {
                    pass4(dst, d, srcs[k], s[k], srcs[k + 1], s[k + 1], srcs[k + 2], s[k + 2], srcs[k + 3], s[k + 3], length);
                    k += 4;
                } else if (left >= 3 && arity >= 3) {
                    pass3(dst, d, srcs[k], s[k], srcs[k + 1], s[k + 1], srcs[k + 2], s[k + 2], length);
                    k += 3;
                } else if (left >= 2) {
                    pass2(dst, d, srcs[k], s[k], srcs[k + 1], s[k + 1], length);
                    k += 2;
                } else {
                    pass1(dst, d, srcs[k], s[k], length);
                    k += 1;
                }
            }
        }

        private static void pass1(ByteBuffer dst, int d, ByteBuffer a, int ai, int length) {
            for (int i = 0; i < length; i += 8) {
                dst.putLong(d + i, dst.getLong(d + i) ^ a.getLong(ai + i));
            }
        }

        private static void pass2(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi, int length) {
            for (int i = 0; i < length; i += 8) {
                dst.putLong(d + i, dst.getLong(d + i) ^ a.getLong(ai + i) ^ b.getLong(bi + i));
            }
        }

        private static void pass3(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi,
                                  ByteBuffer c, int ci, int length) {
            for (int i = 0; i < length; i += 8) {
                dst.putLong(d + i, dst.getLong(d + i) ^ a.getLong(ai + i) ^ b.getLong(bi + i) ^ c.getLong(ci + i));
            }
        }

        private static void pass4(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi,
                                  ByteBuffer c, int ci, ByteBuffer e, int ei, int length) {
            for (int i = 0; i < length; i += 8) {
                dst.putLong(d + i, dst.getLong(d + i) ^ a.getLong(ai + i) ^ b.getLong(bi + i)
                        ^ c.getLong(ci + i) ^ e.getLong(ei + i));
            }
        }
    }

    static final Xor LONG_2SRC = new FixedArity(2);
    static final Xor LONG_3SRC = new FixedArity(3);
    static final Xor LONG_4SRC = new FixedArity(4);

    /** Every candidate, in the order they are measured. */
    public static List<Xor> candidates() {
        return List.of(BYTE_LOOP, LONG_PER_SOURCE, LONG_2SRC, LONG_3SRC, LONG_4SRC);
    }

    /** The fastest routine on this machine, measured (and logged) on first use. */
    public static Xor best() {
        return Selection.BEST;
    }

    /** What the selection measured for the chosen routine, in MB/s of destination bytes. */
    public static long bestMegabytesPerSecond() {
        return Selection.BEST_MBPS;
    }

    /**
     * Destination megabytes per second of {@code routine} XORing {@code sources} buffers of {@code bytes}
     * into one, run for about {@code millis} ms of wall time (after one untimed warm-up pass). The rate
     * is per CPU second of this thread where the JVM can tell, so a loaded machine that deschedules
     * the thread does not lower it.
     */
    public static long measure(Xor routine, int sources, int bytes, long millis) {
        return new Workload(sources, bytes).rate(routine, millis * 1_000_000L);
    }

    /** Buffers for measuring, filled once; plus the clock. Used by one thread. */
    private static final class Workload {
        private static final java.lang.management.ThreadMXBean THREADS =
                java.lang.management.ManagementFactory.getThreadMXBean();
        private final ByteBuffer dst;
        private final ByteBuffer[] srcs;
        private final int[] idx;
        private final int bytes;
        private final boolean cpuClock;

        Workload(int sources, int bytes) {
            this.bytes = bytes;
            dst = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
            srcs = new ByteBuffer[sources];
            idx = new int[sources];
            for (int k = 0; k < sources; k++) {
                srcs[k] = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
                for (int i = 0; i < bytes; i += 8) {
                    srcs[k].putLong(i, i * 0x9E3779B97F4A7C15L + k);
                }
            }
            boolean cpu = false;
            try {
                cpu = THREADS.isCurrentThreadCpuTimeSupported() && THREADS.getCurrentThreadCpuTime() >= 0;
            } catch (UnsupportedOperationException e) {
                LOG.debug("xor: no thread CPU clock, measuring wall time");
            }
            cpuClock = cpu;
        }

        private long now() {
            return cpuClock ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
        }

        /** MB/s of destination bytes over about {@code wallNanos} of wall time. */
        long rate(Xor routine, long wallNanos) {
            routine.xorInto(dst, 0, srcs, idx, srcs.length, bytes);
            long deadline = System.nanoTime() + wallNanos;
            long start = now();
            long done = 0;
            do {
                routine.xorInto(dst, 0, srcs, idx, srcs.length, bytes);
                done += bytes;
            } while (System.nanoTime() < deadline);
            long nanos = Math.max(1, now() - start);
            return done * 1000L / nanos;
        }

    }

    private static final class Selection {
        static final Xor BEST;
        static final long BEST_MBPS;

        static {
            // Interpreted and C1 code is 10-100x slower than C2 code, and on a loaded machine the JIT's
            // compiler threads lag behind: a figure taken too early is what made some runs log
            // "58 MB/sec". So the candidates first run in interleaved 2 ms rounds until a sweep improves
            // no routine's best by more than 5% and the JIT compiled nothing meanwhile, three sweeps in a
            // row (or 1 s has passed); then each is measured in 5 more rounds, best of all, in CPU time.
            // Four sources of 4 KiB: a typical parity update, in L1/L2.
            List<Xor> candidates = candidates();
            Workload workload = new Workload(4, 4096);
            long[] best = new long[candidates.size()];
            java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
            boolean jitVisible = jit != null && jit.isCompilationTimeMonitoringSupported();
            long deadline = System.nanoTime() + 1_000_000_000L;
            int quietSweeps = 0;
            int sweeps = 0;
            while (quietSweeps < 3 && System.nanoTime() < deadline) {
                long compileMillis = jitVisible ? jit.getTotalCompilationTime() : 0;
                boolean improved = false;
                for (int c = 0; c < candidates.size(); c++) {
                    long r = workload.rate(candidates.get(c), 2_000_000L);
                    improved |= r * 20 > best[c] * 21;
                    best[c] = Math.max(best[c], r);
                }
                boolean compiled = jitVisible && jit.getTotalCompilationTime() != compileMillis;
                quietSweeps = improved || compiled ? 0 : quietSweeps + 1;
                sweeps++;
            }
            for (int round = 0; round < 5; round++) {
                for (int c = 0; c < candidates.size(); c++) {
                    best[c] = Math.max(best[c], workload.rate(candidates.get(c), 2_000_000L));
                }
            }
            LOG.debug("xor: {} warm-up sweeps, {}", sweeps, quietSweeps >= 3 ? "stable" : "stopped at the 1 s bound");
            int winner = 0;
            StringBuilder report = new StringBuilder();
            for (int c = 0; c < candidates.size(); c++) {
                report.append(' ').append(candidates.get(c).name()).append('=').append(best[c]);
                if (best[c] > best[winner]) {
                    winner = c;
                }
            }
            BEST = candidates.get(winner);
            BEST_MBPS = best[winner];
            LOG.info("xor: measuring software checksum speed (MB/sec):{}", report);
            LOG.info("xor: using function: {} ({} MB/sec)", BEST.name(), BEST_MBPS);
        }
    }
}
