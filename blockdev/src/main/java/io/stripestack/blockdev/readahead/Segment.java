package io.stripestack.blockdev.readahead;

import java.nio.ByteBuffer;

/**
 * One prefetch buffer of a {@link ReadaheadBudget} and, while a stage holds it, the prefetch of one
 * segment-aligned range of that stage's device.
 *
 * <p>Life cycle: FREE (in the budget) -> QUEUED (in the stage's table and prefetch queue) -> LOADING
 * (read from below by a prefetch thread, or by a reader that removed it from the queue) -> READY (its
 * bytes may be served) -> FREE. The segment itself is the queued task, and it sits in a queue only while
 * QUEUED, so a freed and reused segment is never still queued elsewhere. A write, discard,
 * consumption, retired stream or failed read takes it out of the table; {@link #dropped} then tells
 * whoever finishes with it (the prefetch thread for QUEUED and LOADING, the dropper for READY) to return
 * it to the budget instead of installing it. That flag is the sequence check that keeps a prefetch which
 * read old bytes before a write from installing them after the write was acknowledged.
 *
 * <p>Concurrency: every field except {@link #buffer} and {@link #owner} is guarded by the owning stage's
 * lock. {@link #owner} is written before the segment is handed to the executor and read by the prefetch
 * thread after it (the executor's queue orders the two). The buffer's bytes are written only by the
 * loading thread while LOADING, outside the lock, and read only under the lock once READY.
 */
final class Segment implements Runnable {
    enum State { FREE, QUEUED, LOADING, READY }

    final ByteBuffer buffer;
    ReadaheadBlockDevice owner;
    State state = State.FREE;
    /** Segment number in the owner's device: {@code start / segmentBytes}. */
    long index;
    long start;
    int length;
    boolean dropped;
    boolean served;

    Segment(ByteBuffer buffer) {
        this.buffer = buffer;
    }

    void assign(ReadaheadBlockDevice newOwner, long newIndex, long newStart, int newLength) {
        owner = newOwner;
        index = newIndex;
        start = newStart;
        length = newLength;
        state = State.QUEUED;
        dropped = false;
        served = false;
    }

    long end() {
        return start + length;
    }

    /** Runs on the owner's prefetch executor. */
    @Override
    public void run() {
        owner.prefetch(this);
    }
}
