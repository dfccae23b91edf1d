package io.stripestack.raid5;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Scratch state of one calling thread (a caller of read, write or discard, or a sync worker): the row
 * writes it queues, the bitmaps and XOR source lists of the row updates it owns, and chunk-sized
 * buffers allocated on first use. Used only by that thread, except the volatile fields describing its
 * write in progress, which slot owners of other threads read without locks ({@link WriteScheduler}).
 * Preallocated so that no I/O allocates.
 */
final class CallerContext {
    private final int chunk;
    private final int dataDisks;
    /** Zeros, shared by every thread and only ever read. */
    private final ByteBuffer zeroChunk;
    final RowWrite rowWrite = new RowWrite();
    /** One caller's write: the window of rows it queues at once (see WriteScheduler.write). */
    final RowWrite[] pieces = new RowWrite[WriteScheduler.WRITE_WINDOW_ROWS];
    /** {@link WriteScheduler#submit}'s one-entry array for awaitAll. */
    final RowWrite[] single = new RowWrite[1];
    RowWrite[] batch = new RowWrite[8];
    final long[][] written;
    final long[] columns;
    final long[] rebuild;
    final long[][] need;
    /** XOR sources and their start indexes. */
    final ByteBuffer[] srcs;
    final int[] idx;
    /** Native-order views of a full-row batch's source buffers, one per write. */
    private ByteBuffer[] pieceViews = new ByteBuffer[8];
    /** Per data chunk, the batch index of the write covering the current parity column range. */
    final int[] cursor;
    /**
     * This thread's write in progress, for other threads' holds (WriteScheduler.worthHolding): its byte
     * range (writeEnd -1 when none) and the row it is at (-1 before its first row). Written only by
     * this thread.
     */
    volatile long writeStart = -1;
    volatile long writeEnd = -1;
    volatile long writeRow = -1;
    /** End of this thread's last write; read by WriteScheduler.worthHolding to recognise sequential streams. */
    volatile long lastEnd = -1;
    /** This thread is parked waiting for rows other owners process: a holder does not wait for its next piece. */
    volatile boolean parked;
    /** Set when this thread, holding a partial row, was interrupted; re-asserted after its member I/O. */
    boolean interruptedWhileHolding;
    int[] pieceChunk = new int[16];
    /** The chunk walk of this thread's reads and row updates (one walk at a time). */
    final StripeGeometry.Pieces walk = new StripeGeometry.Pieces();
    /** Every block of a chunk set. */
    final long[] allBlocks;
    /** The per-chunk writes of zeros one discard of a row turns into. */
    final RowWrite[] zeroWrites;
    private ByteBuffer parity;
    private ByteBuffer scratch;
    private ByteBuffer accumulator;
    private PartialParityLog.Row pplRow;

    CallerContext(StripeGeometry geo, ByteBuffer zeroChunk) {
        this.chunk = geo.chunk;
        this.dataDisks = geo.dataDisks;
        this.zeroChunk = zeroChunk;
        srcs = new ByteBuffer[geo.members + 1];
        idx = new int[geo.members + 1];
        cursor = new int[geo.dataDisks];
        zeroWrites = new RowWrite[geo.dataDisks];
        int words = (geo.blocksPerChunk + 63) / 64;
        written = new long[geo.dataDisks][words];
        columns = new long[words];
        rebuild = new long[words];
        need = new long[geo.members][words];
        allBlocks = new long[words];
        Bits.setRange(allBlocks, 0, geo.blocksPerChunk);
        for (int i = 0; i < geo.dataDisks; i++) {
            zeroWrites[i] = new RowWrite();
        }
        for (int i = 0; i < pieces.length; i++) {
            pieces[i] = new RowWrite();
        }
    }

    ByteBuffer[] pieceViews(int count) {
        if (pieceViews.length < count) {
            pieceViews = new ByteBuffer[Math.max(count, pieceViews.length * 2)];
        }
        return pieceViews;
    }

    /**
     * Splits a discard of {@code [w.inRow, w.inRow + w.length)} into one zero write per chunk it touches
     * (unused entries cover nothing), for one merged row update. Returns the array, always {@code dataDisks} long.
     */
    RowWrite[] zeroPieces(RowWrite w) {
        int pos = w.inRow;
        int end = w.inRow + w.length;
        for (int i = 0; i < dataDisks; i++) {
            int chunkStart = i * chunk;
            int from = Math.max(pos, chunkStart);
            int to = Math.min(end, chunkStart + chunk);
            zeroWrites[i].set(w.row, from, Math.max(0, to - from), zeroChunk, 0);
        }
        return zeroWrites;
    }

    /**
     * Exactly one chunk, page-aligned (members may be opened with O_DIRECT), native order. The final
     * slice matters: an aligned slice of an allocation that happens to be aligned keeps the extra page,
     * and {@code clear()} would then expose it.
     */
    private ByteBuffer alignedChunk() {
        return ByteBuffer.allocateDirect(chunk + StripeCache.PAGE).alignedSlice(StripeCache.PAGE)
                .slice(0, chunk).order(ByteOrder.nativeOrder());
    }

    ByteBuffer parity() {
        if (parity == null) {
            parity = alignedChunk();
        }
        return parity.clear();
    }

    ByteBuffer scratch() {
        if (scratch == null) {
            scratch = alignedChunk();
        }
        return scratch.clear();
    }

    /** This thread's partial parity log entry, with a chunk of room for the partial parity. */
    PartialParityLog.Row pplRow() {
        if (pplRow == null) {
            pplRow = new PartialParityLog.Row(alignedChunk());
        }
        return pplRow;
    }

    ByteBuffer accumulator() {
        if (accumulator == null) {
            accumulator = alignedChunk();
        }
        return accumulator.clear();
    }
}
