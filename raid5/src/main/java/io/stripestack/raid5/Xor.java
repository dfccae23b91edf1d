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
 * indices (no buffer position changes). Lengths are multiples of 8 (the array works in 512-byte blocks).
 * The raw routines give the right bytes for any byte orders; the buffer-accessor ones need all buffers
 * in one order (the array makes its views native-order).
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

    /**
     * Up to {@code arity} sources folded into the destination per pass over it, like the kernel's xor_N
     * functions: each pass reads the destination and N sources and writes the destination once, so
     * fewer passes mean less memory traffic. Loops have a fixed number of sources; a loop over the
     * sources inside the loop over the bytes keeps the JIT from keeping the sum in a register, which
     * measured 3-11 GB/s where fixed-arity loops reach the buffers' bandwidth.
     */
    private abstract static class FixedArity extends Xor {
        private final int arity;

        FixedArity(String kind, int arity) {
            super(kind + "-" + arity + "src");
            this.arity = arity;
        }

        @Override
        public final void xorInto(ByteBuffer dst, int d, ByteBuffer[] srcs, int[] s, int count, int length) {
            if ((length & 7) != 0) {
                throw new IllegalArgumentException("XOR length " + length + " is not a multiple of 8 bytes;"
                        + " the array XORs whole 512-byte blocks");
            }
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

        abstract void pass1(ByteBuffer dst, int d, ByteBuffer a, int ai, int length);

        abstract void pass2(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi, int length);

        abstract void pass3(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi,
                            ByteBuffer c, int ci, int length);

        abstract void pass4(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi,
                            ByteBuffer c, int ci, ByteBuffer e, int ei, int length);
    }

    /**
     * Fixed arity through the buffers' own absolute getLong/putLong: portable, bounds-checked per
     * access, kept as the reference the raw routines are compared with. Buffers must share one byte
     * order. Slower than it looks: JDK 17's C2 does not vectorize buffer accessors, and where callers
     * pass buffers of several classes (direct, heap, read-only, views) the accessor calls stop being
     * inlined.
     */
    private static final class BufferLongs extends FixedArity {
        BufferLongs(int arity) {
            super("long", arity);
        }

        @Override
        void pass1(ByteBuffer dst, int d, ByteBuffer a, int ai, int length) {
            for (int i = 0; i < length; i += 8) {
                dst.putLong(d + i, dst.getLong(d + i) ^ a.getLong(ai + i));
            }
        }

        @Override
        void pass2(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi, int length) {
            for (int i = 0; i < length; i += 8) {
                dst.putLong(d + i, dst.getLong(d + i) ^ a.getLong(ai + i) ^ b.getLong(bi + i));
            }
        }

        @Override
        void pass3(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi,
                   ByteBuffer c, int ci, int length) {
            for (int i = 0; i < length; i += 8) {
                dst.putLong(d + i, dst.getLong(d + i) ^ a.getLong(ai + i) ^ b.getLong(bi + i) ^ c.getLong(ci + i));
            }
        }

        @Override
        void pass4(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi,
                   ByteBuffer c, int ci, ByteBuffer e, int ei, int length) {
            for (int i = 0; i < length; i += 8) {
                dst.putLong(d + i, dst.getLong(d + i) ^ a.getLong(ai + i) ^ b.getLong(bi + i)
                        ^ c.getLong(ci + i) ^ e.getLong(ei + i));
            }
        }
    }

    /**
     * Fixed arity on raw memory through {@link RawMemory}: one bounds check per buffer per pass, then
     * plain 64-bit loads and stores with no call into the buffer classes, so the loop does not depend
     * on which buffer classes the callers pass. XOR works byte by byte, and a long is loaded and stored
     * in the same (native) order, so any byte orders, even mixed, give the right bytes.
     *
     * <p>Each pass has two loops. When every buffer is direct (the array's own buffers) the loop
     * addresses native memory only; when any buffer is on the heap it goes through base object plus
     * offset. Kept apart because C2 compiles an Unsafe access whose base may be either an object or
     * null with memory barriers around it: one shared loop ran at half speed once the JVM had seen heap
     * buffers (XorBench profile=mixed).
     */
    private static final class RawLongs extends FixedArity {
        RawLongs(int arity) {
            super("raw", arity);
        }

        @Override
        void pass1(ByteBuffer dst, int d, ByteBuffer a, int ai, int length) {
            Object dBase = RawMemory.writableBase(dst);
            long dAt = RawMemory.address(dst, d, length);
            Object aBase = RawMemory.base(a);
            long aAt = RawMemory.address(a, ai, length);
            if (dBase == null && aBase == null) {
                for (int i = 0; i < length; i += 8) {
                    RawMemory.putLong(dAt + i, RawMemory.getLong(dAt + i) ^ RawMemory.getLong(aAt + i));
                }
            } else {
                for (int i = 0; i < length; i += 8) {
                    RawMemory.putLong(dBase, dAt + i, RawMemory.getLong(dBase, dAt + i) ^ RawMemory.getLong(aBase, aAt + i));
                }
            }
            RawMemory.keepAlive(dst);
            RawMemory.keepAlive(a);
        }

        @Override
        void pass2(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi, int length) {
            Object dBase = RawMemory.writableBase(dst);
            long dAt = RawMemory.address(dst, d, length);
            Object aBase = RawMemory.base(a);
            long aAt = RawMemory.address(a, ai, length);
            Object bBase = RawMemory.base(b);
            long bAt = RawMemory.address(b, bi, length);
            if (dBase == null && aBase == null && bBase == null) {
                for (int i = 0; i < length; i += 8) {
                    RawMemory.putLong(dAt + i, RawMemory.getLong(dAt + i)
                            ^ RawMemory.getLong(aAt + i) ^ RawMemory.getLong(bAt + i));
                }
            } else {
                for (int i = 0; i < length; i += 8) {
                    RawMemory.putLong(dBase, dAt + i, RawMemory.getLong(dBase, dAt + i)
                            ^ RawMemory.getLong(aBase, aAt + i) ^ RawMemory.getLong(bBase, bAt + i));
                }
            }
            RawMemory.keepAlive(dst);
            RawMemory.keepAlive(a);
            RawMemory.keepAlive(b);
        }

        @Override
        void pass3(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi,
                   ByteBuffer c, int ci, int length) {
            Object dBase = RawMemory.writableBase(dst);
            long dAt = RawMemory.address(dst, d, length);
            Object aBase = RawMemory.base(a);
            long aAt = RawMemory.address(a, ai, length);
            Object bBase = RawMemory.base(b);
            long bAt = RawMemory.address(b, bi, length);
            Object cBase = RawMemory.base(c);
            long cAt = RawMemory.address(c, ci, length);
            if (dBase == null && aBase == null && bBase == null && cBase == null) {
                for (int i = 0; i < length; i += 8) {
                    RawMemory.putLong(dAt + i, RawMemory.getLong(dAt + i)
                            ^ RawMemory.getLong(aAt + i) ^ RawMemory.getLong(bAt + i) ^ RawMemory.getLong(cAt + i));
                }
            } else {
                for (int i = 0; i < length; i += 8) {
                    RawMemory.putLong(dBase, dAt + i, RawMemory.getLong(dBase, dAt + i)
                            ^ RawMemory.getLong(aBase, aAt + i) ^ RawMemory.getLong(bBase, bAt + i)
                            ^ RawMemory.getLong(cBase, cAt + i));
                }
            }
            RawMemory.keepAlive(dst);
            RawMemory.keepAlive(a);
            RawMemory.keepAlive(b);
            RawMemory.keepAlive(c);
        }

        @Override
        void pass4(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi,
                   ByteBuffer c, int ci, ByteBuffer e, int ei, int length) {
            Object dBase = RawMemory.writableBase(dst);
            long dAt = RawMemory.address(dst, d, length);
            Object aBase = RawMemory.base(a);
            long aAt = RawMemory.address(a, ai, length);
            Object bBase = RawMemory.base(b);
            long bAt = RawMemory.address(b, bi, length);
            Object cBase = RawMemory.base(c);
            long cAt = RawMemory.address(c, ci, length);
            Object eBase = RawMemory.base(e);
            long eAt = RawMemory.address(e, ei, length);
            if (dBase == null && aBase == null && bBase == null && cBase == null && eBase == null) {
                for (int i = 0; i < length; i += 8) {
                    RawMemory.putLong(dAt + i, RawMemory.getLong(dAt + i)
                            ^ RawMemory.getLong(aAt + i) ^ RawMemory.getLong(bAt + i)
                            ^ RawMemory.getLong(cAt + i) ^ RawMemory.getLong(eAt + i));
                }
            } else {
                for (int i = 0; i < length; i += 8) {
                    RawMemory.putLong(dBase, dAt + i, RawMemory.getLong(dBase, dAt + i)
                            ^ RawMemory.getLong(aBase, aAt + i) ^ RawMemory.getLong(bBase, bAt + i)
                            ^ RawMemory.getLong(cBase, cAt + i) ^ RawMemory.getLong(eBase, eAt + i));
                }
            }
            RawMemory.keepAlive(dst);
            RawMemory.keepAlive(a);
            RawMemory.keepAlive(b);
            RawMemory.keepAlive(c);
            RawMemory.keepAlive(e);
        }
    }

    /**
     * Fixed arity in native code ({@link NativeXor}, vectorized by gcc: {@code sse2} is the x86-64 baseline,
     * {@code avx2} needs that CPU extension) when every buffer of the pass is direct; a pass touching a heap
     * buffer runs the raw Java loop instead (the native code sees addresses only).
     */
    private static final class NativeLongs extends FixedArity {
        private final int avx2;
        private final RawLongs heapPasses = new RawLongs(4);

        NativeLongs(boolean avx2) {
            super(avx2 ? "avx2" : "sse2", 4);
            this.avx2 = avx2 ? 1 : 0;
        }

        @Override
        void pass1(ByteBuffer dst, int d, ByteBuffer a, int ai, int length) {
            if (!dst.isDirect() || !a.isDirect()) {
                heapPasses.pass1(dst, d, a, ai, length);
                return;
            }
            RawMemory.writableBase(dst);
            NativeXor.pass1(avx2, RawMemory.address(dst, d, length), RawMemory.address(a, ai, length), length);
            RawMemory.keepAlive(dst);
            RawMemory.keepAlive(a);
        }

        @Override
        void pass2(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi, int length) {
            if (!dst.isDirect() || !a.isDirect() || !b.isDirect()) {
                heapPasses.pass2(dst, d, a, ai, b, bi, length);
                return;
            }
            RawMemory.writableBase(dst);
            NativeXor.pass2(avx2, RawMemory.address(dst, d, length), RawMemory.address(a, ai, length),
                    RawMemory.address(b, bi, length), length);
            RawMemory.keepAlive(dst);
            RawMemory.keepAlive(a);
            RawMemory.keepAlive(b);
        }

        @Override
        void pass3(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi,
                   ByteBuffer c, int ci, int length) {
            if (!dst.isDirect() || !a.isDirect() || !b.isDirect() || !c.isDirect()) {
                heapPasses.pass3(dst, d, a, ai, b, bi, c, ci, length);
                return;
            }
            RawMemory.writableBase(dst);
            NativeXor.pass3(avx2, RawMemory.address(dst, d, length), RawMemory.address(a, ai, length),
                    RawMemory.address(b, bi, length), RawMemory.address(c, ci, length), length);
            RawMemory.keepAlive(dst);
            RawMemory.keepAlive(a);
            RawMemory.keepAlive(b);
            RawMemory.keepAlive(c);
        }

        @Override
        void pass4(ByteBuffer dst, int d, ByteBuffer a, int ai, ByteBuffer b, int bi,
                   ByteBuffer c, int ci, ByteBuffer e, int ei, int length) {
            if (!dst.isDirect() || !a.isDirect() || !b.isDirect() || !c.isDirect() || !e.isDirect()) {
                heapPasses.pass4(dst, d, a, ai, b, bi, c, ci, e, ei, length);
                return;
            }
            RawMemory.writableBase(dst);
            NativeXor.pass4(avx2, RawMemory.address(dst, d, length), RawMemory.address(a, ai, length),
                    RawMemory.address(b, bi, length), RawMemory.address(c, ci, length),
                    RawMemory.address(e, ei, length), length);
            RawMemory.keepAlive(dst);
            RawMemory.keepAlive(a);
            RawMemory.keepAlive(b);
            RawMemory.keepAlive(c);
            RawMemory.keepAlive(e);
        }
    }

    /**
     * Raw access to a ByteBuffer's bytes through sun.misc.Unsafe (module jdk.unsupported, readable
     * without flags): the backing array (null for direct memory) and the {@code address} field of
     * java.nio.Buffer, which JDK 17 keeps for both kinds (the native address of byte 0 of a direct
     * buffer, the array base offset plus the buffer's offset of a heap one). That layout is an
     * implementation detail, so it is verified once when this class initialises; where it is missing or
     * differs, {@link #AVAILABLE} is false and the raw routines are not candidates.
     *
     * <p>Nothing here may read or write outside a buffer: {@link #address} checks the range against the
     * buffer's limit before any access, as the buffers' own absolute accessors would.
     */
    private static final class RawMemory {
        private static final sun.misc.Unsafe UNSAFE;
        private static final long ADDRESS_FIELD;
        private static final long ARRAY_FIELD;
        static final boolean AVAILABLE;

        static {
            sun.misc.Unsafe unsafe = null;
            long address = -1;
            long array = -1;
            boolean verified = false;
            try {
                java.lang.reflect.Field theUnsafe = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
                theUnsafe.setAccessible(true);
                unsafe = (sun.misc.Unsafe) theUnsafe.get(null);
                address = unsafe.objectFieldOffset(java.nio.Buffer.class.getDeclaredField("address"));
                array = unsafe.objectFieldOffset(ByteBuffer.class.getDeclaredField("hb"));
                verified = layoutHolds(unsafe, address, array);
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                LOG.warn("xor: raw buffer access unavailable ({}): parity uses the buffer accessors, about 4x slower;"
                        + " run on a JDK 17 runtime that includes module jdk.unsupported", e.toString());
            }
            UNSAFE = unsafe;
            ADDRESS_FIELD = address;
            ARRAY_FIELD = array;
            AVAILABLE = verified;
        }

        private RawMemory() {
        }

        /** Writes through the raw view of a heap slice and a direct slice and reads back through the buffers. */
        private static boolean layoutHolds(sun.misc.Unsafe unsafe, long addressField, long arrayField) {
            ByteBuffer heap = ByteBuffer.wrap(new byte[32], 8, 16).slice().order(ByteOrder.nativeOrder());
            ByteBuffer direct = ByteBuffer.allocateDirect(32).position(8).limit(24).slice().order(ByteOrder.nativeOrder());
            for (ByteBuffer probe : new ByteBuffer[] {heap, direct}) {
                Object base = unsafe.getObject(probe, arrayField);
                if ((base == null) != probe.isDirect()) {
                    LOG.warn("xor: this JDK's ByteBuffer layout is not the one JDK 17 has: parity uses the buffer"
                            + " accessors, about 4x slower; run on JDK 17");
                    return false;
                }
                long at = unsafe.getLong(probe, addressField);
                unsafe.putLong(base, at + 4, 0x0102030405060708L);
                if (probe.getLong(4) != 0x0102030405060708L || probe.get(3) != 0 || probe.get(12) != 0) {
                    LOG.warn("xor: this JDK's ByteBuffer addresses are not the ones JDK 17 has: parity uses the"
                            + " buffer accessors, about 4x slower; run on JDK 17");
                    return false;
                }
            }
            return true;
        }

        /** The array behind a heap buffer, or null for direct memory. */
        static Object base(ByteBuffer buf) {
            return UNSAFE.getObject(buf, ARRAY_FIELD);
        }

        static Object writableBase(ByteBuffer buf) {
            if (buf.isReadOnly()) {
                throw new java.nio.ReadOnlyBufferException();
            }
            return base(buf);
        }

        /** Raw offset of {@code buf}'s byte {@code index}, after checking {@code [index, index+length)} is below its limit. */
        static long address(ByteBuffer buf, int index, int length) {
            java.util.Objects.checkFromIndexSize(index, length, buf.limit());
            return UNSAFE.getLong(buf, ADDRESS_FIELD) + index;
        }

        /** A long of native memory; {@code at} comes from {@link #address} of a direct buffer. */
        static long getLong(long at) {
            return UNSAFE.getLong(at);
        }

        static void putLong(long at, long value) {
            UNSAFE.putLong(at, value);
        }

        static long getLong(Object base, long at) {
            return UNSAFE.getLong(base, at);
        }

        static void putLong(Object base, long at, long value) {
            UNSAFE.putLong(base, at, value);
        }

        /**
         * Keeps direct buffers reachable until their raw addresses are no longer used: a direct buffer's
         * memory is freed when the buffer is collected, and only the raw address is live in the loop.
         */
        static void keepAlive(ByteBuffer buf) {
            java.lang.ref.Reference.reachabilityFence(buf);
        }
    }

    static final Xor LONG_2SRC = new BufferLongs(2);
    static final Xor LONG_3SRC = new BufferLongs(3);
    static final Xor LONG_4SRC = new BufferLongs(4);
    static final Xor RAW_2SRC = new RawLongs(2);
    static final Xor RAW_3SRC = new RawLongs(3);
    static final Xor RAW_4SRC = new RawLongs(4);

    /** Native routines, only where both the library and raw buffer addresses are available. */
    private static final List<Xor> NATIVE = !RawMemory.AVAILABLE || !NativeXor.AVAILABLE ? List.of()
            : NativeXor.AVX2 ? List.of(new NativeLongs(false), new NativeLongs(true)) : List.of(new NativeLongs(false));

    /** Every candidate, in the order they are measured. */
    public static List<Xor> candidates() {
        List<Xor> java = RawMemory.AVAILABLE
                ? List.of(BYTE_LOOP, LONG_2SRC, LONG_3SRC, LONG_4SRC, RAW_2SRC, RAW_3SRC, RAW_4SRC)
                : List.of(BYTE_LOOP, LONG_2SRC, LONG_3SRC, LONG_4SRC);
        if (NATIVE.isEmpty()) {
            return java;
        }
        List<Xor> all = new java.util.ArrayList<>(java);
        all.addAll(NATIVE);
        return List.copyOf(all);
    }

    /** The native routines this JVM loaded (empty if none; see {@link NativeXor}). */
    public static List<Xor> nativeRoutines() {
        return NATIVE;
    }

    /** Why there are no native routines, or null if there are. */
    public static String nativeUnavailableReason() {
        if (!RawMemory.AVAILABLE) {
            return "raw buffer addresses are unavailable on this JDK";
        }
        return NativeXor.UNAVAILABLE_REASON;
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
