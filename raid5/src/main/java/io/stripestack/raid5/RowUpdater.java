package io.stripestack.raid5;

import io.stripestack.blockdev.IoStats;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.StampedLock;

/**
 * One row update, planned and done: a full-row write (parity from the callers' buffers, no member reads),
 * or a partial write through the row's {@link StripeCache} entry, by read-modify-write or
 * reconstruct-write, whichever reads fewer blocks not already cached; degraded rows rebuild the missing
 * chunk's old contents where parity needs them, or leave the missing member out. With a
 * {@link PartialParityLog}, every update whose parity member is present is logged before it writes, in one
 * entry per run of columns in which it writes the same chunks (up to {@link PartialParityLog.Row#MAX_ENTRIES};
 * beyond that one entry over all its columns), so an entry never names a chunk the update left alone in its
 * columns (see {@link #partialParity}); a full-row write is one entry with no partial parity.
 *
 * <p>Concurrency: every method runs on the thread that owns the row's write slot ({@link WriteScheduler});
 * the row's cache entry and that thread's {@link CallerContext} are its alone. Members are written
 * while holding the row's I/O lock exclusively ({@link #runWrites}), which readers take shared. Nothing
 * here allocates per I/O but the member buffer slices.
 */
final class RowUpdater {
    private static final int BLOCK = StripeCache.BLOCK;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();

    private final StripeGeometry geo;
    private final MemberSet members;
    private final Superblocks superblocks;
    private final StripeCache cache;
    private final MemberIoExecutor io;
    private final Xor xor;
    private final LongAdder fullStripeWrites;
    private final LongAdder rmwWrites;
    private final LongAdder reconstructWrites;
    private final LongAdder memberPrereads;
    private final LongAdder stripeCacheHits;
    /**
     * The partial parity log, or null when the array's consistency policy is not ppl; switched at run time
     * by {@link #switchLog} while the array is suspended (no update in progress). Each update reads it once.
     */
    private volatile PartialParityLog ppl;
    private final int blockSize;

    RowUpdater(StripeGeometry geo, MemberSet members, Superblocks superblocks, StripeCache cache, MemberIoExecutor io,
               Xor xor, IoStats stats, PartialParityLog ppl, int blockSize) {
        this.ppl = ppl;
        this.blockSize = blockSize;
        this.geo = geo;
        this.members = members;
        this.superblocks = superblocks;
        this.cache = cache;
        this.io = io;
        this.xor = xor;
        this.fullStripeWrites = stats.counter("full_stripe_writes");
        this.rmwWrites = stats.counter("rmw_writes");
        this.reconstructWrites = stats.counter("reconstruct_writes");
        this.memberPrereads = stats.counter("member_prereads");
        this.stripeCacheHits = stats.counter("stripe_cache_hits");
    }

    /**
     * Processes one batch of writes to one row (or one discard or sync step) as the row's slot owner:
     * records the write intent in the bitmap, then updates the row. {@code rowLock} is the row's I/O lock,
     * held exclusively only while members are written.
     */
    void process(StampedLock rowLock, RowWrite[] batch, int count, CallerContext ctx) throws IOException {
        processLogged(rowLock, batch, count, ctx, ppl);
    }

    /**
     * Starts or stops logging row updates. The caller holds the array suspended ({@link
     * io.stripestack.blockdev.Quiesce}): no row update is in progress, so none began with the old log
     * or without one. The log in use is retired first: it writes no unit after this, so a log started
     * later owns the areas alone. The new log is in use when this returns.
     */
    void switchLog(PartialParityLog log) {
        PartialParityLog previous = ppl;
        ppl = log;
        if (previous != null) {
            previous.retire();
        }
    }

    private void processLogged(StampedLock rowLock, RowWrite[] batch, int count, CallerContext ctx,
                               PartialParityLog log) throws IOException {
        RowWrite first = batch[0];
        members.checkUsable(first.row * geo.rowBytes + first.inRow, true);
        // Recovery writes only the new member (covered by its recovery offset); check writes nothing.
        boolean intent = superblocks.hasBitmap() && first.op != RowOp.CHECK && first.op != RowOp.RECOVER;
        if (intent) {
            superblocks.beginRowWrite(first.row);
        }
        try {
            processRowOp(rowLock, batch, count, ctx, first, log);
        } finally {
            if (intent) {
                superblocks.endRowWrite(first.row);
            }
        }
    }

    private void processRowOp(StampedLock rowLock, RowWrite[] batch, int count, CallerContext ctx, RowWrite first,
                              PartialParityLog log) throws IOException {
        switch (first.op) {
            case WRITE -> {
                if (RowWrite.coverRow(batch, count, geo.rowBytes)
                        && MemberSet.missingIn(first.row, members.failedRole, members.recoveredRows) < 0) {
                    writeFullRow(rowLock, batch, count, ctx, log);
                } else {
                    updateRow(rowLock, batch, count, ctx, log);
                }
            }
            case ZERO -> updateRow(rowLock, ctx.zeroPieces(first), geo.dataDisks, ctx, log);
            default -> first.pass.processRow(rowLock, first.row, ctx);
        }
    }

    /**
     * A whole row from the batch's writes (one caller's, or several that together cover the row): parity
     * is XORed from slices of the callers' buffers, n parallel writes, no reads, no copies.
     */
    private void writeFullRow(StampedLock rowLock, RowWrite[] batch, int count, CallerContext ctx,
                              PartialParityLog log) throws IOException {
        long row = batch[0].row;
        sortByOffset(batch, count);
        ByteBuffer[] views = ctx.pieceViews(count);
        for (int k = 0; k < count; k++) {
            views[k] = batch[k].src.slice(batch[k].srcIndex, batch[k].length).order(NATIVE);
        }
        ByteBuffer parity = ctx.parity();
        // Parity column by column range: each range ends where one of the chunks changes source write.
        int[] cursor = ctx.cursor;
        for (int i = 0, k = 0; i < geo.dataDisks; i++) {
            while (batch[k].inRow + batch[k].length <= i * geo.chunk) {
                k++;
            }
            cursor[i] = k;
        }
        for (int column = 0; column < geo.chunk; ) {
            int end = geo.chunk;
            for (int i = 0; i < geo.dataDisks; i++) {
                RowWrite w = batch[cursor[i]];
                ctx.srcs[i] = views[cursor[i]];
                ctx.idx[i] = i * geo.chunk + column - w.inRow;
                end = Math.min(end, w.inRow + w.length - i * geo.chunk);
            }
            xor.xorAssign(parity, column, ctx.srcs, ctx.idx, geo.dataDisks, end - column);
            column = end;
            for (int i = 0; i < geo.dataDisks; i++) {
                RowWrite w = batch[cursor[i]];
                if (w.inRow + w.length - i * geo.chunk == column) {
                    cursor[i]++;
                }
            }
        }
        Arrays.fill(ctx.srcs, null);
        cache.invalidate(row);
        MemberIoExecutor.Batch writes = io.batch();
        long memberOffset = geo.memberOffset(row);
        for (int k = 0; k < count; k++) {
            StripeGeometry.Pieces p = pieces(batch[k], ctx.walk);
            while (p.next()) {
                int m = geo.dataMember(row, p.index);
                writes.add(m, members.roles[m].device, memberOffset + p.inChunk, views[k].slice(p.done, p.length),
                        true);
            }
            views[k] = null;
        }
        int parityMember = geo.parityMember(row);
        writes.add(parityMember, members.roles[parityMember].device, memberOffset, parity.clear(), true);
        if (log == null) {
            runWrites(rowLock, writes, row);
        } else {
            PartialParityLog.Row entry = ctx.pplRow();
            entry.parityRole = parityMember;
            entry.single(row * geo.rowBytes / blockSize, 0, geo.rowBytes);
            entry.membersWritten = allRoles();
            runLoggedWrites(rowLock, writes, row, log, entry);
        }
        fullStripeWrites.increment();
    }

    /** Insertion sort by offset in the row: batches are a handful of writes. */
    private static void sortByOffset(RowWrite[] batch, int count) {
        for (int i = 1; i < count; i++) {
            RowWrite w = batch[i];
            int j = i - 1;
            while (j >= 0 && batch[j].inRow > w.inRow) {
                batch[j + 1] = batch[j];
                j--;
            }
            batch[j + 1] = w;
        }
    }

    /**
     * Everything but a lone healthy full-row write: the batch's writes are merged into the row's cache
     * entry, the blocks still missing for the parity are pre-read, parity is recomputed over the touched
     * columns and the touched ranges are written.
     */
    private void updateRow(StampedLock rowLock, RowWrite[] batch, int count, CallerContext ctx, PartialParityLog log)
            throws IOException {
        long row = batch[0].row;
        StripeCache.Entry e = acquireEntry(row);
        boolean keep = false;
        try {
            long[][] written = ctx.written;
            long[] columns = ctx.columns;
            for (long[] bits : written) {
                Bits.clear(bits);
            }
            Bits.clear(columns);
            for (int k = 0; k < count; k++) {
                markWritten(batch[k], written, columns, ctx.walk);
            }
            int firstWritten = 0;
            int lastWritten = geo.dataDisks - 1;
            boolean logged = log != null && !Bits.isEmpty(columns);
            if (logged) {
                while (Bits.isEmpty(written[firstWritten])) {
                    firstWritten++;
                }
                while (Bits.isEmpty(written[lastWritten])) {
                    lastWritten--;
                }
                fillGaps(columns);
            }
            boolean fullRow = true;
            for (int i = 0; i < geo.dataDisks && fullRow; i++) {
                fullRow = Bits.isFull(written[i], geo.blocksPerChunk);
            }
            int parityMember = geo.parityMember(row);
            int missing;
            int missingIndex;
            boolean readModifyWrite;
            while (true) {
                members.checkUsable(row * geo.rowBytes, true);
                missing = MemberSet.missingIn(row, members.failedRole, members.recoveredRows);
                missingIndex = missing < 0 ? -2 : missing == parityMember ? -1 : geo.dataIndexOf(row, missing);
                readModifyWrite = planReads(e, ctx, missingIndex, logged, firstWritten, lastWritten);
                if (preRead(row, e, ctx, parityMember)) {
                    break;
                }
            }
            if (missingIndex >= 0) {
                rebuildIntoEntry(e, ctx, missingIndex);
            }
            if (readModifyWrite) {
                xorWrittenIntoParity(e, ctx);
            }
            for (int k = 0; k < count; k++) {
                copyIntoEntry(batch[k], e, ctx.walk);
            }
            if (readModifyWrite) {
                xorWrittenIntoParity(e, ctx);
            } else if (missingIndex != -1) {
                recomputeParity(e, ctx);
            }
            MemberIoExecutor.Batch writes = io.batch();
            long memberOffset = geo.memberOffset(row);
            for (int i = 0; i < geo.dataDisks; i++) {
                int m = geo.dataMember(row, i);
                if (m != missing) {
                    addRuns(writes, m, memberOffset, e.chunk(i), written[i], true);
                }
            }
            if (missingIndex != -1) {
                addRuns(writes, parityMember, memberOffset, e.chunk(geo.dataDisks), columns, true);
            }
            if (!logged || missingIndex == -1) {
                runWrites(rowLock, writes, row);
            } else {
                runLoggedWrites(rowLock, writes, row, log,
                        partialParity(e, ctx, row, parityMember, firstWritten, lastWritten));
            }
            for (int i = 0; i < geo.dataDisks; i++) {
                orInto(e.valid[i], written[i]);
            }
            if (missingIndex == -1) {
                andNotInto(e.valid[geo.dataDisks], columns);
            } else {
                orInto(e.valid[geo.dataDisks], columns);
            }
            if (fullRow) {
                fullStripeWrites.increment();
            } else if (readModifyWrite) {
                rmwWrites.increment();
            } else {
                reconstructWrites.increment();
            }
            keep = true;
        } finally {
            cache.release(e, keep);
        }
    }

    /** The row's stripe cache entry, pinned for this slot owner until {@link #releaseEntry}; waits for a free one. */
    StripeCache.Entry acquireEntry(long row) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return cache.acquire(row);
                } catch (InterruptedException ie) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Unpins the entry; {@code keep} false drops its contents (the update failed midway). */
    void releaseEntry(StripeCache.Entry e, boolean keep) {
        cache.release(e, keep);
    }

    /** Points {@code cursor} at the chunk pieces of one row write. */
    private StripeGeometry.Pieces pieces(RowWrite w, StripeGeometry.Pieces cursor) {
        return geo.pieces(cursor, w.row * geo.rowBytes + w.inRow, w.length);
    }

    private void markWritten(RowWrite w, long[][] written, long[] columns, StripeGeometry.Pieces cursor) {
        StripeGeometry.Pieces p = pieces(w, cursor);
        while (p.next()) {
            Bits.setRange(written[p.index], p.inChunk / BLOCK, (p.inChunk + p.length) / BLOCK);
            Bits.setRange(columns, p.inChunk / BLOCK, (p.inChunk + p.length) / BLOCK);
        }
    }

    private void copyIntoEntry(RowWrite w, StripeCache.Entry e, StripeGeometry.Pieces cursor) {
        StripeGeometry.Pieces p = pieces(w, cursor);
        while (p.next()) {
            e.chunk(p.index).put(p.inChunk, w.src, w.srcIndex + p.done, p.length);
        }
    }

    /**
     * Decides which blocks must be read before the parity can be computed and puts them in
     * {@code ctx.need} (index {@code dataDisks} = parity). Returns true for read-modify-write.
     *
     * @param missingIndex data index of the missing member, -1 if parity is missing, -2 if none is
     * @param widened       whether the update is logged: its columns are one run and the chunks
     *                      firstLogged..lastLogged count as written
     * @param firstLogged   with a partial parity log: the first data chunk the log entry names as written;
     *                      read-modify-write then needs the old contents of chunks firstLogged..lastLogged
     *                      over all touched columns, to take them out of the old parity (0 without a log)
     * @param lastLogged    the last such chunk ({@code dataDisks - 1} without a log)
     */
    private boolean planReads(StripeCache.Entry e, CallerContext ctx, int missingIndex, boolean widened,
                              int firstLogged, int lastLogged) {
        long[][] need = ctx.need;
        long[][] written = ctx.written;
        long[] columns = ctx.columns;
        long[][] valid = e.valid;
        int words = e.words();
        for (long[] bits : need) {
            Bits.clear(bits);
        }
        if (missingIndex == -1) {
            return false;                       // parity member gone: data is written, nothing to compute
        }
        if (missingIndex >= 0) {
            // Columns where the missing chunk's old contents are needed and not cached: rebuild them from
            // the old parity and the old data of every other chunk.
            long[] rebuild = ctx.rebuild;
            for (int w = 0; w < words; w++) {
                rebuild[w] = columns[w] & ~written[missingIndex][w] & ~valid[missingIndex][w];
                for (int i = 0; i < geo.dataDisks; i++) {
                    if (i != missingIndex) {
                        need[i][w] = (rebuild[w] | (columns[w] & ~written[i][w])) & ~valid[i][w];
                    }
                }
                need[geo.dataDisks][w] = rebuild[w] & ~valid[geo.dataDisks][w];
            }
            return false;
        }
        long rmw = 0;
        long rcw = 0;
        long rmwUncached = 0;
        long rcwUncached = 0;
        for (int w = 0; w < words; w++) {
            long k = columns[w];
            for (int i = 0; i < geo.dataDisks; i++) {
                long wr = written[i][w];
                long v = valid[i][w];
                long old = widened && i >= firstLogged && i <= lastLogged ? k : wr;
                rmw += Long.bitCount(old & ~v);
                rmwUncached += Long.bitCount(old);
                rcw += Long.bitCount(k & ~wr & ~v);
                rcwUncached += Long.bitCount(k & ~wr);
            }
            rmw += Long.bitCount(k & ~valid[geo.dataDisks][w]);
            rmwUncached += Long.bitCount(k);
        }
        boolean readModifyWrite = rmw < rcw;
        if (Math.min(rmw, rcw) < Math.min(rmwUncached, rcwUncached)) {
            stripeCacheHits.increment();
        }
        for (int w = 0; w < words; w++) {
            long k = columns[w];
            for (int i = 0; i < geo.dataDisks; i++) {
                long wr = written[i][w];
                long old = widened && i >= firstLogged && i <= lastLogged ? k : wr;
                need[i][w] = (readModifyWrite ? old : k & ~wr) & ~valid[i][w];
            }
            need[geo.dataDisks][w] = readModifyWrite ? k & ~valid[geo.dataDisks][w] : 0;
        }
        return readModifyWrite;
    }

    /** Reads every needed run into the entry, in parallel. Returns false if a member failed (replan). */
    boolean preRead(long row, StripeCache.Entry e, CallerContext ctx, int parityMember) throws IOException {
        MemberIoExecutor.Batch reads = io.batch();
        long memberOffset = geo.memberOffset(row);
        int[] pieceChunk = ctx.pieceChunk;
        int pieces = 0;
        for (int i = 0; i <= geo.dataDisks; i++) {
            int m = i == geo.dataDisks ? parityMember : geo.dataMember(row, i);
            int before = reads.size();
            addRuns(reads, m, memberOffset, e.chunk(i), ctx.need[i], false);
            for (int p = before; p < reads.size(); p++) {
                if (pieces == pieceChunk.length) {
                    pieceChunk = ctx.pieceChunk = Arrays.copyOf(pieceChunk, pieces * 2);
                }
                pieceChunk[pieces++] = i;
            }
        }
        if (pieces == 0) {
            return true;
        }
        memberPrereads.add(pieces);
        reads.run();
        try {
            return recordPreReads(reads, e, ctx, memberOffset, pieces);
        } finally {
            reads.clear();
        }
    }

    private boolean recordPreReads(MemberIoExecutor.Batch reads, StripeCache.Entry e, CallerContext ctx,
                                   long memberOffset, int pieces) {
        int[] pieceChunk = ctx.pieceChunk;
        boolean ok = true;
        for (int p = 0; p < pieces; p++) {
            int from = (int) ((reads.offset(p) - memberOffset) / BLOCK);
            if (reads.error(p) != null) {
                members.memberFailed(reads.member(p), reads.device(p), reads.error(p));
                ok = false;
            } else {
                int to = Bits.nextClear(ctx.need[pieceChunk[p]], from, geo.blocksPerChunk);
                Bits.setRange(e.valid[pieceChunk[p]], from, to);
            }
        }
        return ok;
    }

    /** Rebuilds the missing data chunk's old contents where the plan needs them: parity ^ other chunks. */
    private void rebuildIntoEntry(StripeCache.Entry e, CallerContext ctx, int missingIndex) {
        long[] rebuild = ctx.rebuild;
        ctx.srcs[0] = e.chunk(geo.dataDisks);
        int count = 1;
        for (int i = 0; i < geo.dataDisks; i++) {
            if (i != missingIndex) {
                ctx.srcs[count++] = e.chunk(i);
            }
        }
        ByteBuffer target = e.chunk(missingIndex);
        for (int b = Bits.nextSet(rebuild, 0, geo.blocksPerChunk); b < geo.blocksPerChunk; ) {
            int end = Bits.nextClear(rebuild, b, geo.blocksPerChunk);
            for (int k = 0; k < count; k++) {
                ctx.idx[k] = b * BLOCK;
            }
            xor.xorAssign(target, b * BLOCK, ctx.srcs, ctx.idx, count, (end - b) * BLOCK);
            b = Bits.nextSet(rebuild, end, geo.blocksPerChunk);
        }
        orInto(e.valid[missingIndex], rebuild);
        Arrays.fill(ctx.srcs, null);
    }

    /** parity ^= data over each chunk's written blocks (called before and after the new data is copied in). */
    private void xorWrittenIntoParity(StripeCache.Entry e, CallerContext ctx) {
        ByteBuffer parity = e.chunk(geo.dataDisks);
        for (int i = 0; i < geo.dataDisks; i++) {
            long[] bits = ctx.written[i];
            ctx.srcs[0] = e.chunk(i);
            for (int b = Bits.nextSet(bits, 0, geo.blocksPerChunk); b < geo.blocksPerChunk; ) {
                int end = Bits.nextClear(bits, b, geo.blocksPerChunk);
                ctx.idx[0] = b * BLOCK;
                xor.xorInto(parity, b * BLOCK, ctx.srcs, ctx.idx, 1, (end - b) * BLOCK);
                b = Bits.nextSet(bits, end, geo.blocksPerChunk);
            }
        }
        ctx.srcs[0] = null;
    }

    /** parity = XOR of all data chunks over the touched columns. */
    private void recomputeParity(StripeCache.Entry e, CallerContext ctx) {
        ByteBuffer parity = e.chunk(geo.dataDisks);
        for (int i = 0; i < geo.dataDisks; i++) {
            ctx.srcs[i] = e.chunk(i);
        }
        long[] columns = ctx.columns;
        for (int b = Bits.nextSet(columns, 0, geo.blocksPerChunk); b < geo.blocksPerChunk; ) {
            int end = Bits.nextClear(columns, b, geo.blocksPerChunk);
            for (int i = 0; i < geo.dataDisks; i++) {
                ctx.idx[i] = b * BLOCK;
            }
            xor.xorAssign(parity, b * BLOCK, ctx.srcs, ctx.idx, geo.dataDisks, (end - b) * BLOCK);
            b = Bits.nextSet(columns, end, geo.blocksPerChunk);
        }
        Arrays.fill(ctx.srcs, null);
    }

    void addRuns(MemberIoExecutor.Batch batch, int member, long memberOffset, ByteBuffer chunkBuffer,
                         long[] bits, boolean write) {
        for (int b = Bits.nextSet(bits, 0, geo.blocksPerChunk); b < geo.blocksPerChunk; ) {
            int end = Bits.nextClear(bits, b, geo.blocksPerChunk);
            batch.add(member, members.roles[member].device, memberOffset + (long) b * BLOCK,
                    chunkBuffer.slice(b * BLOCK, (end - b) * BLOCK), write);
            b = Bits.nextSet(bits, end, geo.blocksPerChunk);
        }
    }

    /**
     * The log entries of an update whose parity and the old data of chunks firstWritten..lastWritten over the touched
     * columns are in the cache: one per run of columns in which the update writes the same chunks (from the first to
     * the last it writes there), each with the partial parity of those columns, the parity XOR those chunks, i.e. the
     * XOR of the chunks the update leaves alone there; none is needed where it writes every chunk. An update whose
     * columns fall in more than {@link PartialParityLog.Row#MAX_ENTRIES} such runs gets one entry over all its columns
     * and chunks firstWritten..lastWritten.
     */
    private PartialParityLog.Row partialParity(StripeCache.Entry e, CallerContext ctx, long row, int parityMember,
                                               int firstWritten, int lastWritten) {
        long[] columns = ctx.columns;
        long[][] written = ctx.written;
        PartialParityLog.Row entry = ctx.pplRow();
        entry.parityRole = parityMember;
        entry.membersWritten = 1L << parityMember;
        for (int i = firstWritten; i <= lastWritten; i++) {
            entry.membersWritten |= 1L << geo.dataMember(row, i);
        }
        entry.entries = 0;
        int ppAt = 0;
        int from = Bits.nextSet(columns, 0, geo.blocksPerChunk);
        int end = Bits.nextClear(columns, from, geo.blocksPerChunk);
        for (int b = from; b < end; ) {
            int lo = firstWritten;
            while (lo <= lastWritten && !Bits.get(written[lo], b)) {
                lo++;
            }
            if (lo > lastWritten) {
                b++;   // a column between two written ones that no write touches: no entry needed there
                continue;
            }
            int hi = lastWritten;
            while (!Bits.get(written[hi], b)) {
                hi--;
            }
            int to = b + 1;
            while (to < end && sameHull(written, to, lo, hi, firstWritten, lastWritten)) {
                to++;
            }
            if (entry.entries == PartialParityLog.Row.MAX_ENTRIES) {
                return widened(e, ctx, entry, row, from, end, firstWritten, lastWritten);
            }
            ppAt += addEntry(e, ctx, entry, row, b, to, lo, hi, ppAt);
            b = to;
        }
        return entry;
    }

    /** Whether column block {@code b} is written in chunks {@code lo} to {@code hi} at its ends, as its neighbour. */
    private static boolean sameHull(long[][] written, int b, int lo, int hi, int firstWritten, int lastWritten) {
        if (!Bits.get(written[lo], b) || !Bits.get(written[hi], b)) {
            return false;
        }
        for (int i = firstWritten; i < lo; i++) {
            if (Bits.get(written[i], b)) {
                return false;
            }
        }
        for (int i = hi + 1; i <= lastWritten; i++) {
            if (Bits.get(written[i], b)) {
                return false;
            }
        }
        return true;
    }

    /** One entry over all the update's columns and chunks firstWritten..lastWritten. */
    private PartialParityLog.Row widened(StripeCache.Entry e, CallerContext ctx, PartialParityLog.Row entry, long row,
                                         int from, int to, int firstWritten, int lastWritten) {
        entry.entries = 0;
        addEntry(e, ctx, entry, row, from, to, firstWritten, lastWritten, 0);
        return entry;
    }

    /**
     * Adds the entry of column blocks {@code [from, to)} written in chunks {@code lo..hi}, its partial parity at
     * {@code ppAt} of the row's buffer; returns the partial parity's bytes.
     */
    private int addEntry(StripeCache.Entry e, CallerContext ctx, PartialParityLog.Row entry, long row, int from, int to,
                         int lo, int hi, int ppAt) {
        int length = (to - from) * BLOCK;
        int set = hi - lo + 1;
        if (set == geo.dataDisks) {
            entry.add((row * geo.rowBytes + (long) from * BLOCK) / blockSize, 0, geo.dataDisks * length);
            return 0;
        }
        ctx.srcs[0] = e.chunk(geo.dataDisks);
        ctx.idx[0] = from * BLOCK;
        for (int i = 0; i < set; i++) {
            ctx.srcs[1 + i] = e.chunk(lo + i);
            ctx.idx[1 + i] = from * BLOCK;
        }
        xor.xorAssign(entry.pp, ppAt, ctx.srcs, ctx.idx, 1 + set, length);
        Arrays.fill(ctx.srcs, null);
        entry.add((row * geo.rowBytes + (long) lo * geo.chunk + (long) from * BLOCK) / blockSize, length, set * length);
        return length;
    }

    private long allRoles() {
        return geo.members == 64 ? -1L : (1L << geo.members) - 1;
    }

    /** Sets every bit between the first and the last set one: the columns one log entry covers. */
    private void fillGaps(long[] columns) {
        int first = Bits.nextSet(columns, 0, geo.blocksPerChunk);
        int last = first;
        for (int b = first; b < geo.blocksPerChunk; ) {
            int end = Bits.nextClear(columns, b, geo.blocksPerChunk);
            last = end;
            b = Bits.nextSet(columns, end, geo.blocksPerChunk);
        }
        Bits.setRange(columns, first, last);
    }

    /** {@link #runWrites} once the entry is durable in the partial parity log. */
    private void runLoggedWrites(StampedLock rowLock, MemberIoExecutor.Batch writes, long row, PartialParityLog log,
                                 PartialParityLog.Row entry) throws IOException {
        PartialParityLog logged = log;
        try {
            while (logged != null && !logged.log(entry)) {
                logged = ppl;   // that log was retired (not while the array runs: switches suspend it)
            }
        } catch (IOException | RuntimeException e) {
            writes.clear();
            throw e;
        }
        try {
            runWrites(rowLock, writes, row);
        } finally {
            if (logged != null) {
                logged.done(entry);
            }
        }
    }

    /** Runs member writes while holding the row's slot exclusively; failing members are marked faulty. */
    void runWrites(StampedLock rowLock, MemberIoExecutor.Batch batch, long row) throws IOException {
        long stamp = rowLock.writeLock();
        try {
            batch.run();
        } finally {
            rowLock.unlockWrite(stamp);
        }
        for (int i = 0; i < batch.size(); i++) {
            if (batch.error(i) != null) {
                members.memberFailed(batch.member(i), batch.device(i), batch.error(i));
            }
        }
        batch.clear();
        members.checkUsable(row * geo.rowBytes, true);
    }

    private static void orInto(long[] target, long[] bits) {
        for (int w = 0; w < target.length; w++) {
            target[w] |= bits[w];
        }
    }

    static void andNotInto(long[] target, long[] bits) {
        for (int w = 0; w < target.length; w++) {
            target[w] &= ~bits[w];
        }
    }
}
