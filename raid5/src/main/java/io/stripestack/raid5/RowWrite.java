package io.stripestack.raid5;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * One caller's write, discard or sync step on one row, queued on the row's write slot
 * ({@link WriteScheduler}). Reused per thread ({@link CallerContext}): a caller fills it, queues it and
 * waits until it is done; meanwhile the slot owner (maybe another thread) reads it.
 */
final class RowWrite {
    RowOp op = RowOp.WRITE;
    /** The sync pass a sync step belongs to (it processes the row), else null. */
    SyncEngine.SyncPass pass;
    long row;
    /** Byte range {@code [inRow, inRow + length)} of the row's data. */
    int inRow;
    int length;
    /** The caller's bytes, from {@code srcIndex}; only read. */
    ByteBuffer src;
    int srcIndex;
    /**
     * Written under the slot monitor, read by the waiting caller without it (WriteScheduler.awaitAll): done
     * once processed ({@code error} is written before it), lead once the slot is the caller's to process.
     */
    volatile boolean done;
    volatile boolean lead;
    IOException error;
    /** The calling thread, woken by the owner when the write is done or the slot handed to it. */
    Thread waiter;

    void set(long row, int inRow, int length, ByteBuffer src, int srcIndex) {
        this.op = RowOp.WRITE;
        this.row = row;
        this.inRow = inRow;
        this.length = length;
        this.src = src;
        this.srcIndex = srcIndex;
    }

    /** Zeros over {@code [inRow, inRow + length)} of the row (a discard). */
    void setZero(long row, int inRow, int length) {
        set(row, inRow, length, null, 0);
        this.op = RowOp.ZERO;
    }

    /** A step of {@code syncPass} on the row (processed by whichever thread owns the row's slot). */
    void setSync(long row, SyncEngine.SyncPass syncPass) {
        set(row, 0, 0, null, 0);
        this.op = syncPass.op;
        this.pass = syncPass;
    }

    boolean overlaps(RowWrite other) {
        return row == other.row && inRow < other.inRow + other.length && other.inRow < inRow + length;
    }

    /** True if the batch's writes (which never overlap) cover the whole row of {@code rowBytes}. */
    static boolean coverRow(RowWrite[] batch, int count, int rowBytes) {
        long bytes = 0;
        for (int i = 0; i < count; i++) {
            bytes += batch[i].length;
        }
        return bytes == rowBytes;
    }
}
