package io.stripestack.bench;

import io.stripestack.blockdev.Sizes;

/**
 * One load pattern for {@link LoadRunner}: what each of {@code queueDepth} threads issues until
 * {@code totalBytes} have moved. Sequential workloads walk {@code [shift, regionBytes)} in {@code ioBytes}
 * steps (the threads take consecutive steps, like one stream with {@code queueDepth} requests outstanding)
 * and wrap around; random workloads pick offsets {@code shift + k x alignment} uniformly inside the region.
 *
 * @param write       writes (the runner's buffers, pseudo-random bytes) instead of reads
 * @param random      random offsets instead of a sequential walk
 * @param ioBytes     bytes per request
 * @param shift       offset of the first request (misalignment), bytes
 * @param alignment   granularity of random offsets, bytes (ignored when sequential)
 * @param queueDepth  requests outstanding at once (one thread each)
 * @param totalBytes  bytes to move, rounded down to whole requests (at least one per thread)
 * @param regionBytes end of the region the requests stay inside
 */
record Workload(boolean write, boolean random, int ioBytes, long shift, int alignment, int queueDepth,
                long totalBytes, long regionBytes) {

    Workload {
        if (ioBytes <= 0 || queueDepth <= 0 || alignment <= 0 || shift < 0) {
            throw new IllegalArgumentException("workload needs positive request size, queue depth and alignment");
        }
        if (shift + ioBytes > regionBytes) {
            throw new IllegalArgumentException("a request of " + ioBytes + " bytes at " + shift
                    + " does not fit in a region of " + regionBytes + " bytes; use larger member files (--member-size)");
        }
    }

    static Workload sequential(boolean write, int ioBytes, long shift, int queueDepth, long totalBytes, long regionBytes) {
        return new Workload(write, false, ioBytes, shift, ioBytes, queueDepth, totalBytes, regionBytes);
    }

    static Workload random(boolean write, int ioBytes, int alignment, int queueDepth, long totalBytes, long regionBytes) {
        return new Workload(write, true, ioBytes, 0, alignment, queueDepth, totalBytes, regionBytes);
    }

    long operations() {
        return Math.max(queueDepth, totalBytes / ioBytes);
    }

    /** The same pattern moving about a quarter of the bytes: the untimed warm-up. */
    Workload warmUp() {
        return new Workload(write, random, ioBytes, shift, alignment, queueDepth, Math.max(totalBytes / 4, ioBytes),
                regionBytes);
    }

    /** Human description, e.g. {@code seq write 3 MiB x4 +81 KiB}. */
    String describe() {
        return (random ? "rand " : "seq ") + (write ? "write " : "read ") + Sizes.format(ioBytes) + " x" + queueDepth
                + (shift == 0 ? "" : " +" + Sizes.format(shift));
    }
}
