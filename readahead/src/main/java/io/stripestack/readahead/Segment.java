package io.stripestack.readahead;

import java.nio.ByteBuffer;

/**
 * One prefetch buffer of a {@link ReadaheadBudget} and, while a stage holds it, the prefetch of one
 * segment-aligned range of that stage's device.
 *
 * <p>Runs: a stage prefetches a window's adjacent segments with one read below when the budget can give
 * it segments that are adjacent in memory too (see {@link ReadaheadBudget#tryAcquireRun}). Such a run is
 * queued as its first segment, the {@link #runHead}; the others link from it through {@link #nextInRun}
 * and are read with it, into {@link #runView}, a view of the whole slab the run lies in. A lone segment is
 * a run of one.
 *
 * <p>Life cycle: FREE (in the budget) -> QUEUED (in the stage's table; its run head in the prefetch queue)
 * -> LOADING (its run read from below by a prefetch thread, or by a reader that removed the head from the
 * queue) -> READY (its bytes may be served) -> FREE. Only a run head is ever queued, and only while its run
 * is QUEUED, so a freed and reused segment is never still queued elsewhere. A write, discard, consumption,
 * retired stream or failed read takes a segment out of the table; {@link #dropped} then tells whoever
 * finishes with it (the loader of its run for QUEUED and LOADING, the dropper for READY) to return it to
 * the budget instead of installing it. That flag is the sequence check that keeps a prefetch which read
 * old bytes before a write from installing them after the write was acknowledged.
 *
 * <p>Concurrency: every mutable field except {@link #owner} is guarded by the owning stage's lock while
 * the stage holds the segment. {@link #owner} is written before the head is handed to the executor and
 * read by the prefetch thread after it (the executor's queue orders the two). The bytes are written only
 * by the loader of the run while LOADING, outside the lock, and read only under the lock once READY.
 */
final class Segment implements Runnable {
    enum State { FREE, QUEUED, LOADING, READY }

    /** This segment's bytes: a slice of its slab. */
    final ByteBuffer buffer;
    /** A view of the whole slab, used (position and limit set by the loader) when this segment heads a run. */
    final ByteBuffer runView;
    /** Where {@link #buffer} starts in the slab. */
    final int slabOffset;
    /** Position in the budget's memory order. */
    final int ordinal;
    /** First of its slab: it does not follow the previous segment in memory. */
    final boolean startsSlab;
    ReadaheadBlockDevice owner;
    State state = State.FREE;
    /** Segment number in the owner's device: {@code start / segmentBytes}. */
    long index;
    long start;
    int length;
    boolean dropped;
    boolean served;
    /** The first segment of the run this one is read with (itself for the first). */
    Segment runHead;
    /** The next segment of the run, adjacent on the device and in memory; null at the run's end. */
    Segment nextInRun;

    Segment(ByteBuffer slab, int slabOffset, int capacity, int ordinal, boolean startsSlab) {
        this.buffer = slab.slice(slabOffset, capacity);
        this.runView = slab.duplicate();
        this.slabOffset = slabOffset;
        this.ordinal = ordinal;
        this.startsSlab = startsSlab;
    }

    void assign(ReadaheadBlockDevice newOwner, long newIndex, long newStart, int newLength, Segment head) {
        owner = newOwner;
        index = newIndex;
        start = newStart;
        length = newLength;
        state = State.QUEUED;
        dropped = false;
        served = false;
        runHead = head;
        nextInRun = null;
    }

    long end() {
        return start + length;
    }

    /** The bytes of the run this segment heads: its own and those of every segment linked after it. */
    ByteBuffer runBuffer() {
        int bytes = 0;
        for (Segment segment = this; segment != null; segment = segment.nextInRun) {
            bytes += segment.length;
        }
        runView.clear().position(slabOffset).limit(slabOffset + bytes);
        return runView;
    }

    /** Runs on the owner's prefetch executor; only a run head is ever queued. */
    @Override
    public void run() {
        owner.prefetch(this);
    }
}
