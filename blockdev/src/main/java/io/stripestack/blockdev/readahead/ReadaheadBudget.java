package io.stripestack.blockdev.readahead;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;

/**
 * The memory every {@link ReadaheadBlockDevice} of the process prefetches into: a fixed number of
 * equal-sized direct buffers ("segments"), allocated once at construction and shared by all LUNs.
 * Pass the same budget to every readahead stage; the sum of their prefetched data never exceeds
 * {@link #totalBytes()}. Segments start on 4096-byte boundaries in memory, so they suit O_DIRECT below.
 *
 * <p>A stage that finds the budget empty skips that prefetch (and counts it); nothing ever waits for a
 * segment, so an exhausted budget costs readahead, never a foreground read's latency.
 *
 * <p>The segment is also the unit of prefetch I/O: a stage reads ahead in segment-aligned reads of one
 * segment each (the kernel likewise splits readahead into requests of at most max_sectors_kb), issued
 * in parallel on the stage's prefetch threads.
 *
 * <p>Concurrency: the free list is guarded by this object's monitor; {@link #tryAcquire} and
 * {@link #release} are O(1) and allocate nothing. A stage calls them while holding its own lock, so the
 * lock order is always stage lock, then budget monitor.
 */
public final class ReadaheadBudget {
    /** Default segment: 128 KiB, the kernel's default read_ahead_kb and the smallest window we issue. */
    public static final int DEFAULT_SEGMENT_BYTES = 128 * 1024;

    /** Segments must hold whole 4096-byte blocks, so they suit both 512- and 4096-byte devices. */
    private static final int SEGMENT_ALIGNMENT = 4096;
    private static final int MAX_SLAB_BYTES = 1 << 29;

    private final int segmentBytes;
    private final int segmentCount;
    private final ArrayDeque<Segment> free;

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
        this.free = new ArrayDeque<>(segmentCount);
        int perSlab = Math.max(1, MAX_SLAB_BYTES / segmentBytes);
        int left = segmentCount;
        while (left > 0) {
            int inSlab = Math.min(perSlab, left);
            // Page-aligned, so segments can take O_DIRECT reads from member files below.
            ByteBuffer slab = ByteBuffer.allocateDirect(inSlab * segmentBytes + SEGMENT_ALIGNMENT)
                    .alignedSlice(SEGMENT_ALIGNMENT);
            for (int i = 0; i < inSlab; i++) {
                free.addLast(new Segment(slab.slice(i * segmentBytes, segmentBytes)));
            }
            left -= inSlab;
        }
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
        return (long) (segmentCount - free.size()) * segmentBytes;
    }

    /** A free segment, or null when the budget is exhausted. Never blocks. */
    synchronized Segment tryAcquire() {
        return free.pollFirst();
    }

    /** Returns a segment; the most recently used is handed out first, as its memory is the warmest. */
    synchronized void release(Segment segment) {
        free.addFirst(segment);
    }

    @Override
    public String toString() {
        return "ReadaheadBudget[" + inUseBytes() + " of " + totalBytes() + " bytes in use, segment " + segmentBytes + "]";
    }
}
