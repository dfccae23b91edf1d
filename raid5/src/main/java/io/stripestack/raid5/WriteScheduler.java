package io.stripestack.raid5;

import io.stripestack.blockdev.MediumErrorException;
import java.io.IOException;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.StampedLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who updates a row, and when: every write, discard and sync step becomes one {@link RowWrite} per row,
 * queued on the row's write slot (rows are hashed onto {@value #SLOTS} slots); the slot's owner batches the
 * queued writes of its row and hands them to {@link RowUpdater} as one row update.
 *
 * <h2>Concurrency</h2>
 * <ul>
 *   <li>Each slot has a queue of pending row writes and at most one <em>owner</em> thread (the caller
 *       whose request reached the idle slot first, or the one the previous owner hands over to). A caller
 *       queues the rows of its request on their slots together, up to {@link #WRITE_WINDOW_ROWS} at a time,
 *       and then waits for them ({@code awaitAll}), parked ({@link LockSupport}) until an owner completes
 *       one of its rows or hands it a slot; it processes every slot handed to it before it parks again, so
 *       it may own several slots at once. The owner takes the queued writes for the same row that do not
 *       overlap each other (md-style batching: concurrent writes that together fill a row need no
 *       pre-reads), processes them as one row update, completes them, and hands the slot to the next
 *       waiter. An owner whose writes cover the row only partly may first wait for a write that will add
 *       to the row ({@code worthHolding}), but only while other work is under way that keeps the array busy
 *       or will bring that write: no timer (md's delayed stripes, released once the array has nothing else
 *       to do). It waits on {@link #holdSignal}'s monitor, without its slot's: arrivals on its slot, a
 *       row update ending, a caller parking or ending its write wake it. An owner waits for no
 *       other slot, and a hold waits only for a caller that is neither parked nor holding a row it reached
 *       later than this one (see worthHolding), so no cycle of waits forms. The slot's queue and owner
 *       flag are guarded by the slot's monitor (a queued write's done and lead flags are volatile, read by
 *       its parked caller); the row's cache entry and the owner's per-thread buffers are used only by the
 *       owner.</li>
 *   <li>Each slot also has a {@link StampedLock}: row updates hold it exclusively only while writing
 *       members; reads hold it shared (for every row they touch, taken in ascending slot order, so no
 *       lock cycle can form). A read therefore sees every block either before or after a racing write,
 *       never half of one, and a degraded read rebuilds from a consistent row.</li>
 *   <li>The callers' threads publish their write in progress (byte range, highest row queued, parked or
 *       not) in volatile fields of their {@link CallerContext}, and {@link #updates} counts the
 *       row updates running and finished; owners read them without locks to decide on a hold (a stale answer costs a
 *       hold or a pre-read, never a wrong result: the wake-ups below are ordered after the change they
 *       announce, and a holder reads the state under {@link #holdSignal} before it waits).</li>
 * </ul>
 */
final class WriteScheduler {
    private static final Logger LOG = LoggerFactory.getLogger(WriteScheduler.class);
    static final int SLOTS = 1024;
    /**
     * Calling threads whose writes in progress a slot owner can see at once; a thread beyond them is
     * simply not waited for (a missed hold, never a wrong result).
     */
    static final int TRACKED_WRITERS = 64;
    /** Rows of one caller's write queued before it waits for them (see write). */
    static final int WRITE_WINDOW_ROWS = 16;

    private final String name;
    private final StripeGeometry geo;
    private final RowUpdater updater;
    private final Slot[] slots = new Slot[SLOTS];
    private final ThreadLocal<CallerContext> contexts;
    /**
     * The calling threads' contexts, published when created, so that a slot owner can ask which writes are
     * in progress ({@link #worthHolding}). An entry is free again once its thread ended, whether or not the
     * garbage collector has cleared the context yet: a load that starts new threads (a thread pool renewing its
     * workers, a benchmark's rounds) would otherwise fill the table with ended threads, and a stream's writers
     * beyond it would never be waited for.
     */
    private final AtomicReferenceArray<TrackedWriter> writers = new AtomicReferenceArray<>(TRACKED_WRITERS);
    /** One past the highest entry of {@code writers} ever taken. */
    private final AtomicInteger writersInUse = new AtomicInteger();
    /**
     * Row updates being processed right now (members being read or written; the low 32 bits: the work a
     * stream's hold waits on) and row updates finished (the high 32 bits, wrapping: what bounds such a hold).
     * One atomic add when an update starts ({@code 1}) and one when it ends ({@link #UPDATE_DONE} - 1).
     */
    private final AtomicLong updates = new AtomicLong();
    private static final long UPDATE_DONE = 1L << 32;
    /**
     * Row updates that may finish elsewhere while a stream's partial row waits (md's preread_bypass_threshold):
     * a hold that continues a stream ends after them even if other work still runs, so a steady load elsewhere
     * cannot starve it.
     */
    static final int HOLD_BYPASS_UPDATES = 2 * WRITE_WINDOW_ROWS;
    /** Owners holding a partial row right now; the events a hold waits for notify only when there is one. */
    private final AtomicInteger holders = new AtomicInteger();
    /** The monitor holders wait on (see the class comment); guards nothing, the events are in volatile fields. */
    private final Object holdSignal = new Object();
    private final LongAdder heldWrites;

    /** A write slot: see the class comment. */
    private static final class Slot {
        final StampedLock ioLock = new StampedLock();
        final ArrayDeque<RowWrite> pending = new ArrayDeque<>(16);
        boolean busy;
        /** The owner is waiting for more writes to its row (see worthHolding): arrivals wake it. */
        boolean holding;
        /** A write was queued while the owner held; cleared when the owner takes the queued writes. */
        volatile boolean arrived;
    }

    /** @param zeroChunk one chunk of zeros, the source of discards */
    WriteScheduler(String name, StripeGeometry geo, RowUpdater updater, ByteBuffer zeroChunk, LongAdder heldWrites) {
        this.name = name;
        this.geo = geo;
        this.updater = updater;
        this.heldWrites = heldWrites;
        for (int i = 0; i < SLOTS; i++) {
            slots[i] = new Slot();
        }
        this.contexts = ThreadLocal.withInitial(() -> track(new CallerContext(geo, zeroChunk)));
    }

    /**
     * A tracked caller: its context, weakly (the thread's own reference keeps it), and its thread, whose end
     * frees the entry.
     */
    private static final class TrackedWriter extends WeakReference<CallerContext> {
        final Thread thread;

        TrackedWriter(CallerContext context, Thread thread) {
            super(context);
            this.thread = thread;
        }

        boolean free() {
            return get() == null || !thread.isAlive();
        }
    }

    /** Publishes a new thread's context for {@link #worthHolding}, in the first free entry if any. */
    private CallerContext track(CallerContext context) {
        TrackedWriter ref = new TrackedWriter(context, Thread.currentThread());
        for (int i = 0; i < TRACKED_WRITERS; i++) {
            TrackedWriter old = writers.get(i);
            if ((old == null || old.free()) && writers.compareAndSet(i, old, ref)) {
                writersInUse.accumulateAndGet(i + 1, Math::max);
                break;
            }
        }
        return context;
    }

    /** The calling thread's context. */
    CallerContext context() {
        return contexts.get();
    }

    /** Writes {@code length} bytes of {@code src} from {@code srcIndex} at array byte {@code offset}. */
    void write(long offset, ByteBuffer src, int srcIndex, int length) throws IOException {
        CallerContext ctx = contexts.get();
        RowWrite[] pieces = ctx.pieces;
        long pos = offset;
        int left = length;
        ctx.writeRow = -1;
        ctx.writeStart = offset;
        ctx.writeEnd = offset + length;
        try {
            // A window of rows is queued at once and then awaited: the request's tail row can be completed by
            // the next request while this one still waits for its earlier rows, so consecutive requests that
            // share a row (a stream not aligned to rows) do not wait for one another row by row.
            while (left > 0) {
                int queued = 0;
                while (left > 0 && queued < pieces.length) {
                    long row = pos / geo.rowBytes;
                    int inRow = (int) (pos - row * geo.rowBytes);
                    int len = Math.min(left, geo.rowBytes - inRow);
                    RowWrite w = pieces[queued++];
                    w.set(row, inRow, len, src, srcIndex);
                    ctx.writeRow = row;
                    enqueue(w);
                    pos += len;
                    srcIndex += len;
                    left -= len;
                }
                awaitAll(pieces, queued, ctx);
            }
        } finally {
            ctx.writeEnd = -1;
            ctx.lastEnd = offset + length;
            if (holders.get() > 0) {
                wakeHolders();   // a holder waiting for this write's piece of its row waits no longer
            }
            for (RowWrite w : pieces) {
                w.src = null;
            }
        }
    }

    /** Zeros {@code [offset, offset + length)}, one row update per row. */
    void discard(long offset, long length) throws IOException {
        CallerContext ctx = contexts.get();
        RowWrite w = ctx.rowWrite;
        long pos = offset;
        long end = offset + length;
        while (pos < end) {
            long row = pos / geo.rowBytes;
            int inRow = (int) (pos - row * geo.rowBytes);
            int len = (int) Math.min(end - pos, geo.rowBytes - inRow);
            w.setZero(row, inRow, len);
            submit(w, ctx);
            pos += len;
        }
    }

    /** Queues {@code w} on its row's slot and waits until it is done (processing it if it falls to this thread). */
    void submit(RowWrite w, CallerContext ctx) throws IOException {
        ctx.single[0] = w;
        enqueue(w);
        awaitAll(ctx.single, 1, ctx);
    }

    /**
     * Queues {@code w} on its row's slot for the calling thread. If the slot was idle the caller becomes its
     * owner ({@code w.lead}) and must process it in {@link #awaitAll}; otherwise the owner will batch it or hand
     * the slot over to it.
     */
    private void enqueue(RowWrite w) {
        Slot slot = slots[slotIndex(w.row)];
        boolean wake;
        synchronized (slot) {
            w.done = false;
            w.error = null;
            w.waiter = Thread.currentThread();
            slot.pending.addLast(w);
            wake = slot.holding;
            if (wake) {
                slot.arrived = true;
            }
            w.lead = !slot.busy;
            slot.busy = true;
        }
        if (wake) {
            wakeHolders();
        }
    }

    /** Tells every holder to look again (a write arrived, an update ended, a caller parked or ended its write). */
    private void wakeHolders() {
        synchronized (holdSignal) {
            holdSignal.notifyAll();
        }
    }

    /**
     * Waits until the calling thread's queued writes {@code ws[0, count)} are all done, processing every one
     * handed to it (in queue order of the slots, ascending rows) as its slot's owner; then throws the first
     * error among them. Waits through interrupts (an owner may be using the callers' buffers) and re-asserts
     * the interrupt afterwards: an interrupted FileChannel operation would close the member's channel.
     */
    private void awaitAll(RowWrite[] ws, int count, CallerContext ctx) throws IOException {
        boolean interrupted = false;
        for (;;) {
            boolean waiting = false;
            boolean processed = false;
            for (int i = 0; i < count; i++) {
                RowWrite w = ws[i];
                if (w.done) {
                    continue;
                }
                if (w.lead) {
                    interrupted |= ownSlot(slots[slotIndex(w.row)], ctx);
                    processed = true;
                } else {
                    waiting = true;
                }
            }
            if (!waiting) {
                break;
            }
            // Processing parks on member I/O, which may swallow the unpark of a write done meanwhile: look again
            // before parking. Parking right after a pass that processed nothing loses no wake-up (the permit).
            if (!processed) {
                ctx.parked = true;
                if (holders.get() > 0) {
                    wakeHolders();   // a holder waiting for this caller's next piece waits no longer
                }
                LockSupport.park(this);
                ctx.parked = false;
                interrupted |= Thread.interrupted();
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        for (int i = 0; i < count; i++) {
            IOException e = ws[i].error;
            if (e != null) {
                for (int j = i; j < count; j++) {
                    ws[j].error = null;
                }
                throw e instanceof MediumErrorException me
                        ? new MediumErrorException(me.getMessage(), me.offset(), true, me)
                        : new IOException(e.getMessage(), e);
            }
        }
    }

    /**
     * Processes one batch as the slot's owner (the caller's own write is first in it), then hands over.
     * Returns true if the thread was interrupted while holding (the caller re-asserts it afterwards: an
     * interrupted FileChannel operation would close the member's channel).
     */
    private boolean ownSlot(Slot slot, CallerContext ctx) {
        int count;
        synchronized (slot) {
            count = collectBatch(slot, ctx);
        }
        boolean interrupted = false;
        if (ctx.batch[0].op == RowOp.WRITE && !RowWrite.coverRow(ctx.batch, count, geo.rowBytes)
                && worthHolding(ctx.batch[0].row, ctx, updates.get() >>> 32)) {
            heldWrites.increment();
            holders.incrementAndGet();
            try {
                count = hold(slot, ctx, count);
            } finally {
                holders.decrementAndGet();
            }
            interrupted = ctx.interruptedWhileHolding;
            ctx.interruptedWhileHolding = false;
        }
        IOException error = null;
        updates.incrementAndGet();
        try {
            updater.process(slot.ioLock, ctx.batch, count, ctx);
        } catch (IOException e) {
            error = e;
        } catch (RuntimeException e) {
            error = new IOException(name + ": internal error writing row " + ctx.batch[0].row + ": " + e, e);
            LOG.error("{}: internal error writing row {}", name, ctx.batch[0].row, e);
        } finally {
            updates.addAndGet(UPDATE_DONE - 1);
            if (holders.get() > 0) {
                wakeHolders();   // the array may be idle now, or a stream's hold past its bound
            }
        }
        Thread self = Thread.currentThread();
        RowWrite next;
        synchronized (slot) {
            for (int i = 0; i < count; i++) {
                RowWrite w = ctx.batch[i];
                w.error = error;
                w.done = true;
            }
            next = slot.pending.peekFirst();
            if (next == null) {
                slot.busy = false;
            } else {
                next.lead = true;
            }
        }
        // Wake the batch's callers and the next owner; each waits in awaitAll (the write is theirs again now).
        for (int i = 0; i < count; i++) {
            Thread waiter = ctx.batch[i].waiter;
            ctx.batch[i] = null;
            if (waiter != self) {
                LockSupport.unpark(waiter);
            }
        }
        if (next != null && next.waiter != self) {
            LockSupport.unpark(next.waiter);
        }
        return interrupted;
    }

    /**
     * Waits, as the owner of {@code slot} whose batch of {@code count} writes covers its row only partly, until
     * the queued writes cover the row or a hold is no longer worth it (no timer: see {@link #worthHolding}).
     * The writes taken meanwhile join the batch; returns its new count. An interrupt ends the hold and is
     * recorded in {@code ctx.interruptedWhileHolding} (not re-asserted before the member I/O).
     */
    private int hold(Slot slot, CallerContext ctx, int count) {
        long row = ctx.batch[0].row;
        long since = updates.get() >>> 32;
        while (true) {
            synchronized (slot) {
                count = addToBatch(slot, ctx, count);
                slot.arrived = false;
                if (RowWrite.coverRow(ctx.batch, count, geo.rowBytes)) {
                    slot.holding = false;
                    return count;
                }
                slot.holding = true;
            }
            synchronized (holdSignal) {
                // Read under the monitor every waker takes after its change: no wake-up is lost.
                if (!slot.arrived) {
                    if (!worthHolding(row, ctx, since)) {
                        break;
                    }
                    try {
                        holdSignal.wait();
                    } catch (InterruptedException e) {
                        ctx.interruptedWhileHolding = true;
                        break;
                    }
                }
            }
        }
        synchronized (slot) {
            slot.holding = false;
            return addToBatch(slot, ctx, count);
        }
    }

    /** Takes the first pending write and the following ones of the same row that overlap none taken. */
    private static int collectBatch(Slot slot, CallerContext ctx) {
        RowWrite first = slot.pending.pollFirst();
        ctx.batch[0] = first;
        if (first.op != RowOp.WRITE) {
            return 1;
        }
        return addToBatch(slot, ctx, 1);
    }

    /** Adds the pending writes that follow, while they are writes to the batch's row overlapping none taken. */
    private static int addToBatch(Slot slot, CallerContext ctx, int taken) {
        RowWrite first = ctx.batch[0];
        int count = taken;
        outer:
        while (!slot.pending.isEmpty()) {
            RowWrite next = slot.pending.peekFirst();
            if (next.row != first.row || next.op != RowOp.WRITE) {
                break;
            }
            for (int i = 0; i < count; i++) {
                if (next.overlaps(ctx.batch[i])) {
                    break outer;
                }
            }
            slot.pending.pollFirst();
            if (count == ctx.batch.length) {
                ctx.batch = Arrays.copyOf(ctx.batch, count * 2);
            }
            ctx.batch[count++] = next;
        }
        return count;
    }

    /**
     * Whether the slot owner, whose batch covers {@code row} only partly, should wait for more writes to the
     * row (md's delayed stripes) because one is on its way and other work keeps the array busy meanwhile, so
     * that the row becomes a full-row write without pre-reads:
     * <ul>
     *   <li>another caller's write in progress covers part of the row and has not queued it yet (callers
     *       queue their rows in ascending order), and that caller is not parked: it is queuing or processing
     *       its earlier rows, so it will come (e.g. the next request's head meeting this request's tail); or</li>
     *   <li>the owner's own request continues a sequential stream (it starts where another write, in
     *       progress or the last one of some caller, ends), another caller's write of the stream is in
     *       progress (it ends at most a row before this request starts), and some row update is being
     *       processed: the stream's next requests are issued as earlier ones complete. Such a hold also
     *       ends once {@value #HOLD_BYPASS_UPDATES} row updates finished since {@code since} (a count of
     *       finished updates), so steady work elsewhere does not starve it.</li>
     * </ul>
     * With idle members and no caller on its way the answer is no, at once: a lone writer (queue depth one)
     * is never held, nor a sequential writer whose only company is unrelated writes elsewhere on the array,
     * nor one whose stream neighbours are all parked (they wait for rows this thread or a holder owns). A
     * holder waits for no caller that is parked, and every caller it waits for has queued only rows below
     * this one, so holders never wait for each other in a cycle. Reads other threads' fields without their
     * locks: a stale answer only costs a hold or a pre-read.
     */
    private boolean worthHolding(long row, CallerContext self, long since) {
        long rowStart = row * geo.rowBytes;
        long rowEnd = rowStart + geo.rowBytes;
        long start = self.writeStart;
        boolean sequential = self.lastEnd == start;
        boolean streamInProgress = false;
        int tracked = writersInUse.get();
        for (int i = 0; i < tracked; i++) {
            TrackedWriter ref = writers.get(i);
            CallerContext c = ref == null ? null : ref.get();
            if (c == null || c == self) {
                continue;
            }
            long end = c.writeEnd;
            if (end >= 0) {
                if (end > rowStart && c.writeStart < rowEnd && c.writeRow < row && !c.parked) {
                    return true;
                }
                streamInProgress |= end <= start && end >= start - geo.rowBytes;
            }
            sequential |= end == start || c.lastEnd == start;
        }
        long now = updates.get();
        return sequential && streamInProgress && (int) now > 0 && (now >>> 32) - since <= HOLD_BYPASS_UPDATES;
    }

    /**
     * Takes the shared row lock of every row in {@code [firstRow, lastRow]}, in ascending slot order (a
     * read's view of its rows: no row update writes members meanwhile). Release with {@link #unlockRowsShared}.
     */
    void lockRowsShared(long firstRow, long lastRow) {
        if (lastRow - firstRow + 1 >= SLOTS) {
            for (Slot s : slots) {
                s.ioLock.readLock();
            }
            return;
        }
        int s0 = slotIndex(firstRow);
        int s1 = slotIndex(lastRow);
        if (s0 <= s1) {
            for (int s = s0; s <= s1; s++) {
                slots[s].ioLock.readLock();
            }
        } else {
            for (int s = 0; s <= s1; s++) {
                slots[s].ioLock.readLock();
            }
            for (int s = s0; s < SLOTS; s++) {
                slots[s].ioLock.readLock();
            }
        }
    }

    void unlockRowsShared(long firstRow, long lastRow) {
        if (lastRow - firstRow + 1 >= SLOTS) {
            for (Slot s : slots) {
                s.ioLock.tryUnlockRead();
            }
            return;
        }
        for (long row = firstRow; row <= lastRow; row++) {
            slots[slotIndex(row)].ioLock.tryUnlockRead();
        }
    }

    private static int slotIndex(long row) {
        return (int) (row & (SLOTS - 1));
    }
}
