package io.stripestack.raid5;

/**
 * Block bitmaps (one bit per 512-byte block of a chunk) stored in {@code long[]} words, bit {@code b}
 * in word {@code b >>> 6}. Stateless helpers; callers own the arrays.
 */
final class Bits {
    private Bits() {
    }

    static void setRange(long[] bits, int from, int to) {
        for (int b = from; b < to; ) {
            int word = b >>> 6;
            int end = Math.min(to, (word + 1) << 6);
            int count = end - b;
            long mask = count == 64 ? -1L : ((1L << count) - 1) << (b & 63);
            bits[word] |= mask;
            b = end;
        }
    }

    static boolean get(long[] bits, int index) {
        return (bits[index >>> 6] & (1L << index)) != 0;
    }

    static void clear(long[] bits) {
        java.util.Arrays.fill(bits, 0L);
    }

    static boolean isEmpty(long[] bits) {
        for (long w : bits) {
            if (w != 0) {
                return false;
            }
        }
        return true;
    }

    /** Whether bits {@code [0, length)} are all set. */
    static boolean isFull(long[] bits, int length) {
        for (int b = 0; b < length; b += 64) {
            int count = Math.min(64, length - b);
            long mask = count == 64 ? -1L : (1L << count) - 1;
            if ((bits[b >>> 6] & mask) != mask) {
                return false;
            }
        }
        return true;
    }

    /** First set bit at or after {@code from}, or {@code limit} if none before it. */
    static int nextSet(long[] bits, int from, int limit) {
        int word = from >>> 6;
        if (word >= bits.length || from >= limit) {
            return limit;
        }
        long w = bits[word] & (-1L << (from & 63));
        while (true) {
            if (w != 0) {
                return Math.min(limit, (word << 6) + Long.numberOfTrailingZeros(w));
            }
            if (++word >= bits.length) {
                return limit;
            }
            w = bits[word];
        }
    }

    /** First clear bit at or after {@code from}, or {@code limit} if none before it. */
    static int nextClear(long[] bits, int from, int limit) {
        int word = from >>> 6;
        if (word >= bits.length || from >= limit) {
            return limit;
        }
        long w = ~bits[word] & (-1L << (from & 63));
        while (true) {
            if (w != 0) {
                return Math.min(limit, (word << 6) + Long.numberOfTrailingZeros(w));
            }
            if (++word >= bits.length) {
                return limit;
            }
            w = ~bits[word];
        }
    }
}
