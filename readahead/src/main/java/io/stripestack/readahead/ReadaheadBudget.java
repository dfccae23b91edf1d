package io.stripestack.readahead;

import java.nio.ByteBuffer;

/**
 * The memory every {@link ReadaheadBlockDevice} of the process prefetches into: a fixed number of
 * equal-sized direct buffers ("segments"), allocated once at construction and shared by all LUNs.
 * Pass the same budget to every readahead stage; the sum of their prefetched data never exceeds
 * {@link #totalBytes()}. Segments start on 4096-byte boundaries in memory, so they suit O_DIRECT below.
 *
 * <p>A stage that finds the budget empty skips that prefetch (and counts it); nothing ever waits for a
 * segment, so an exhausted budget costs readahead, never a foreground read's latency.
 *
 * <p>The segments of a slab lie back to back in memory, so a stage can read several adjacent segments of
 * its device with one read below into a run of adjacent free segments ({@link #tryAcquireRun}): a window
 * is fetched in a few large reads, not one read per segment. Free segments are handed out next-fit from a
 * cursor that moves round the slabs; since a sequential reader frees its segments in the order it got them,
 * the free ones mostly stay in long runs.
 *
 * <p>Concurrency: the free flags are guarded by this object's monitor; {@link #tryAcquireRun} scans at
 * most every segment once and {@link #release} is O(1); neither allocates. A stage calls them while
 * holding its own lock, so the lock order is always stage lock, then budget monitor.
 */
public final class ReadaheadBudget {
    /** Default segment: 128 KiB, the kernel's default read_ahead_kb and the smallest window we issue. */
    public static final int DEFAULT_SEGMENT_BYTES = 128 * 1024;

    /** Segments must hold whole 4096-byte blocks, so they suit both 512- and 4096-byte devices. */
    private static final int SEGMENT_ALIGNMENT = 4096;
    private static final int MAX_SLAB_BYTES = 1 << 29;

    private final int segmentBytes;
    private final int segmentCount;
    /** Every segment, in memory order: those of one slab are adjacent. */
    private final Segment[] segments;
    private final boolean[] free;
    private int freeCount;
    /** Where the next search for free segments starts. */
    private int cursor;

    /** A budget of {@code totalBytes} in {@link #DEFAULT_SEGMENT_BYTES} segments. */
    public ReadaheadBudget(long totalBytes) {
        this(totalBytes, DEFAULT_SEGMENT_BYTES);
    }

    /**
     * @param totalBytes   memory for prefetched data across all stages; a positive multiple of
     *                     {@code segmentBytes}
     * @param segmentBytes size of one prefetch buffer and of one prefetch read; a positive multiple of 4096
     */
    public ReadaheadBudget(long totalBytes, int segmentBytes) {
        if (segmentBytes <= 0 || segmentBytes % SEGMENT_ALIGNMENT != 0) {
            throw new IllegalArgumentException("readahead segment of " + segmentBytes
                    + " bytes: must be a positive multiple of " + SEGMENT_ALIGNMENT);
        }
        if (totalBytes < segmentBytes || totalBytes % segmentBytes != 0
                || totalBytes / segmentBytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("readahead budget of " + totalBytes + " bytes: must be a positive"
                    + " multiple of the " + segmentBytes + "-byte segment");
        }
        this.segmentBytes = segmentBytes;
        this.segmentCount = (int) (totalBytes / segmentBytes);
        this.segments = new Segment[segmentCount];
        this.free = new boolean[segmentCount];
        int perSlab = Math.max(1, MAX_SLAB_BYTES / segmentBytes);
        int left = segmentCount;
        int ordinal = 0;
        while (left > 0) {
            int inSlab = Math.min(perSlab, left);
            // Page-aligned, so segments can take O_DIRECT reads from member files below.
            ByteBuffer slab = ByteBuffer.allocateDirect(inSlab * segmentBytes + SEGMENT_ALIGNMENT)
                    .alignedSlice(SEGMENT_ALIGNMENT);
            for (int i = 0; i < inSlab; i++) {
                segments[ordinal] = new Segment(slab, i * segmentBytes, segmentBytes, ordinal, i == 0);
                free[ordinal++] = true;
            }
            left -= inSlab;
        }
        this.freeCount = segmentCount;
    }

    public int segmentBytes() {
        return segmentBytes;
    }

    public int segmentCount() {
        return segmentCount;
    }

    public long totalBytes() {
        return (long) segmentCount * segmentBytes;
    }

    /** Bytes currently held by stages (queued, loading or holding prefetched data). */
    public synchronized long inUseBytes() {
        return (long) (segmentCount - freeCount) * segmentBytes;
    }

    /**
     * Takes up to {@code wanted} free segments that are adjacent in memory, in memory order, into
     * {@code into}; returns how many (0 when the budget is exhausted). Never blocks.
     */
    synchronized int tryAcquireRun(int wanted, Segment[] into) {
        if (freeCount == 0) {
            return 0;
        }
        int first = cursor;
        while (!free[first]) {
            first = first + 1 == segmentCount ? 0 : first + 1;
        }
        int taken = 0;
        for (int i = first; taken < wanted && i < segmentCount && free[i] && (taken == 0 || !segments[i].startsSlab); i++) {
            free[i] = false;
            into[taken++] = segments[i];
        }
        freeCount -= taken;
        cursor = first + taken == segmentCount ? 0 : first + taken;
        return taken;
    }

    /** Returns a segment to the budget. */
    synchronized void release(Segment segment) {
        free[segment.ordinal] = true;
        freeCount++;
    }

    @Override
    public String toString() {
        return "ReadaheadBudget[" + inUseBytes() + " of " + totalBytes() + " bytes in use, segment " + segmentBytes + "]";
    }
}
