package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.Quiesce;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.StampedLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * md's sync actions, one engine for all of them: resync (recompute parity after an unclean stop or on
 * request), recover (rebuild a failed role onto a spare), check (count parity mismatches) and repair
 * (rewrite them); with md's sync_action, progress, mismatch_cnt and sync_speed_min/max.
 *
 * <ul>
 *   <li><b>Threads</b>: one background thread per array ({@code stripestack-<array>-sync}, started on first
 *       need) runs the passes, with a helper thread per pass taking alternate rows so one row's member reads
 *       overlap another's XOR and write. A row is processed by that row's write-slot owner, exactly like a
 *       write ({@link WriteScheduler}), so sync and foreground writes never interleave within a row.</li>
 *   <li><b>Locks</b>: the sync state (requested action, frozen, resync needed, the running pass) is guarded
 *       by the array's state lock ({@link MemberSet#lock}) unless volatile; the fields I/O and status read
 *       are volatile. Rows complete in order: a pass's watermark and checkpoint bookkeeping are guarded by
 *       the pass's monitor; its speed meter by its own.</li>
 *   <li><b>Rebuild checkpoint</b>: {@link MemberSet#recoveredRows} moves from {@code r} to {@code r + 1} only
 *       while row {@code r}'s slot is owned (see MemberSet). The checkpoint is saved in the new member's
 *       superblock ({@code recovery_offset}) about every second and at close, each time after flushing the
 *       new member, and a later assemble resumes from it; the new member is also flushed every 32 MiB of
 *       rebuilt data (write-back overlaps the rebuild) and once more before the superblock that makes it
 *       active.</li>
 *   <li><b>Speed</b>: bounded like md: below sync_speed_min KiB/s the sync never waits; above it, it yields
 *       while foreground I/O is arriving and never exceeds sync_speed_max.</li>
 * </ul>
 */
final class SyncEngine {
    private static final Logger LOG = LoggerFactory.getLogger(SyncEngine.class);
    private static final int SYNC_WORKERS = 2;
    /** Marks a pass that stopped on an error (as opposed to a request or a state change). */
    private static final String ERROR_PREFIX = "error: ";
    private static final long CHECKPOINT_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** Rebuilt bytes between flushes of the new member that only start its write-back (no checkpoint). */
    private static final int WRITEBACK_BYTES = 32 << 20;

    private final String name;
    private final StripeGeometry geo;
    private final MemberSet members;
    private final Superblocks superblocks;
    private final IoStats stats;
    private final WriteScheduler writes;
    private final RowUpdater updater;
    private final MemberIoExecutor io;
    private final Xor xor;
    /** The state lock (see MemberSet). */
    private final Object lock;
    /** The array's: every sync step is entered like a request, so a suspender (a policy switch) waits for it. */
    private final Quiesce quiesce;

    private Thread syncThread;
    /** An operator's check/repair request, or null. */
    private RowOp requestedScrub;
    private boolean frozen;
    /** Parity may be stale above resyncDoneRows (unclean shutdown or an explicit resync request). */
    private boolean needsResync;
    private volatile long resyncDoneRows;
    /** The pending resync may skip regions the bitmap records as clean (set at an unclean open). */
    private volatile boolean resyncDirtyRegionsOnly;
    /** Set to make the running pass stop after its current row. */
    private volatile boolean stopSync;
    private volatile RowOp runningSync;
    /** Rows the running pass has completed, for its progress. */
    private volatile long progressRows;
    private volatile long syncSpeedKiBps;
    private volatile long mismatchSectors;
    private volatile int syncSpeedMin = Raid5Array.DEFAULT_SYNC_SPEED_MIN;
    private volatile int syncSpeedMax = Raid5Array.DEFAULT_SYNC_SPEED_MAX;
    /** Why the last pass stopped early, for {@link #resync()}. */
    private String syncStopReason;

    /**
     * @param opened       the superblock the array was opened with: an unclean one needs a resync, from its
     *                     resync offset
     * @param bitmapLoaded the members' bitmap was read at assembly: the resync may skip its clean regions
     */
    SyncEngine(String name, StripeGeometry geo, MemberSet members, Superblocks superblocks, WriteScheduler writes,
               RowUpdater updater, MemberIoExecutor io, Xor xor, IoStats stats, Md1Superblock opened,
               boolean bitmapLoaded, Quiesce quiesce) {
        this.name = name;
        this.quiesce = quiesce;
        this.geo = geo;
        this.members = members;
        this.superblocks = superblocks;
        this.stats = stats;
        this.writes = writes;
        this.updater = updater;
        this.io = io;
        this.xor = xor;
        this.lock = members.lock;
        if (!opened.isClean()) {
            needsResync = true;
            long resumeSectors = opened.resyncOffset;
            resyncDoneRows = resumeSectors > 0 ? Math.min(geo.rows, resumeSectors / opened.chunkSectors) : 0;
            resyncDirtyRegionsOnly = bitmapLoaded;
        }
    }

    /** Starts what the array needs at open: a resync after an unclean stop, a rebuild onto a spare. */
    void start() {
        synchronized (lock) {
            if (needsResync && members.failedRole < 0) {
                WriteIntentBitmap bitmap = superblocks.bitmap();
                LOG.warn("{}: the array was not shut down cleanly; resyncing parity in the background from member "
                        + "sector {}, {}", name, geo.sectors(resyncDoneRows), resyncDirtyRegionsOnly
                        ? bitmap.dirtyBits() + " of " + bitmap.bits() + " bitmap regions (the others had no write in flight)"
                        : "every row (no usable write-intent bitmap)");
            }
            members.startRecoveryLocked();
            wakeLocked();
        }
    }

    /** The running pass's action, or null. */
    RowOp running() {
        return runningSync;
    }

    /** Sets whether the running pass stops after its current row; the caller holds the state lock. */
    void requestStopLocked(boolean stop) {
        stopSync = stop;
    }

    /** Parity may be stale somewhere (a resync is pending or running); the caller holds the state lock. */
    boolean resyncPendingLocked() {
        return needsResync;
    }

    /** Rows below which a pending resync is done. */
    long resyncDoneRows() {
        return resyncDoneRows;
    }

    /** See {@link Raid5Array#resync()}. */
    void resync() throws IOException {
        synchronized (lock) {
            if (members.failedRole >= 0) {
                throw new IOException(name + ": cannot resync parity while degraded (member " + members.failedRole
                        + " is not active); replace the member first");
            }
            needsResync = true;
            resyncDirtyRegionsOnly = false;
            resyncDoneRows = 0;
            syncStopReason = null;
            frozen = false;
            wakeLocked();
            boolean interrupted = false;
            while (needsResync && syncStopReason == null && !members.closed) {
                try {
                    lock.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            if (needsResync) {
                throw new IOException(name + ": resync did not complete: "
                        + (syncStopReason != null ? syncStopReason : "the array was closed"));
            }
        }
    }

    /** See {@link Raid5Array#syncAction()}. */
    String action() {
        RowOp running = runningSync;
        if (running != null) {
            return running.label;
        }
        synchronized (lock) {
            return frozen ? "frozen" : "idle";
        }
    }

    /** See {@link Raid5Array#setSyncAction(String)}. */
    void setAction(String action) {
        synchronized (lock) {
            switch (action) {
                case "idle" -> {
                    requestedScrub = null;
                    frozen = false;
                    if (runningSync == RowOp.CHECK || runningSync == RowOp.REPAIR) {
                        stopSync = true;
                    }
                }
                case "frozen" -> {
                    frozen = true;
                    stopSync = runningSync != null;
                }
                case "check", "repair" -> {
                    requireIdleAndHealthy(action);
                    requestedScrub = action.equals("check") ? RowOp.CHECK : RowOp.REPAIR;
                    frozen = false;
                }
                case "resync" -> {
                    requireIdleAndHealthy(action);
                    needsResync = true;
                    resyncDirtyRegionsOnly = false;
                    resyncDoneRows = 0;
                    frozen = false;
                }
                case "recover" -> {
                    int failedRole = members.failedRole;
                    if (failedRole < 0) {
                        throw new IllegalStateException(name + ": nothing to recover: every member is active");
                    }
                    if (members.roles[failedRole].state != Raid5Status.MemberState.REBUILDING
                            && members.spares.isEmpty()) {
                        throw new IllegalStateException(name + ": cannot recover member " + failedRole
                                + ": there is no spare -- add one (addSpare) and the rebuild starts by itself");
                    }
                    frozen = false;
                    members.startRecoveryLocked();
                }
                default -> throw new IllegalArgumentException(name + ": unknown sync action '" + action
                        + "'; use idle, frozen, check, repair, resync or recover");
            }
            wakeLocked();
        }
    }

    private void requireIdleAndHealthy(String action) {
        if (members.failed || members.failedRole >= 0) {
            throw new IllegalStateException(name + ": cannot " + action + " a degraded array (member "
                    + members.failedRole + " is not active); replace the member first");
        }
        RowOp running = runningSync;
        if (running != null || needsResync) {
            throw new IllegalStateException(name + ": " + (running != null ? running.label : "resync")
                    + " is in progress; wait for it, or write idle to stop a check or repair first");
        }
    }

    SyncProgress progress() {
        RowOp running = runningSync;
        long total = geo.sectors(geo.rows);
        if (running == null) {
            return new SyncProgress(action(), 0, total, 0, -1);
        }
        long done = geo.sectors(progressRows);
        long speed = syncSpeedKiBps;
        long eta = speed > 0 ? (total - done) / 2 / speed : -1;
        return new SyncProgress(running.label, done, total, speed, eta);
    }

    long mismatchCount() {
        return mismatchSectors;
    }

    int speedMin() {
        return syncSpeedMin;
    }

    void setSpeedMin(int kibPerSecond) {
        if (kibPerSecond < 1) {
            throw new IllegalArgumentException(name + ": sync_speed_min " + kibPerSecond + " KiB/s must be at least 1");
        }
        syncSpeedMin = kibPerSecond;
        LOG.info("{}: sync_speed_min {} KiB/s", name, kibPerSecond);
    }

    int speedMax() {
        return syncSpeedMax;
    }

    void setSpeedMax(int kibPerSecond) {
        if (kibPerSecond < 1) {
            throw new IllegalArgumentException(name + ": sync_speed_max " + kibPerSecond + " KiB/s must be at least 1");
        }
        syncSpeedMax = kibPerSecond;
        LOG.info("{}: sync_speed_max {} KiB/s", name, kibPerSecond);
    }

    /** See {@link Raid5Array#awaitSyncIdle}. */
    boolean awaitIdle(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        synchronized (lock) {
            while (!members.closed && (runningSync != null || (!frozen && nextSyncLocked() != null))) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(lock, left);
            }
            return true;
        }
    }

    /** What the sync thread should do next, by md's priority: recovery, resync, requested scrub. */
    private RowOp nextSyncLocked() {
        if (members.failed || members.closed) {
            return null;
        }
        int failedRole = members.failedRole;
        if (failedRole >= 0 && members.roles[failedRole].state == Raid5Status.MemberState.REBUILDING) {
            return RowOp.RECOVER;
        }
        if (failedRole >= 0) {
            return null;
        }
        if (needsResync) {
            return RowOp.RESYNC;
        }
        return requestedScrub;
    }

    /** Starts the sync thread if it is needed and not running, and wakes it; the caller holds the state lock. */
    void wakeLocked() {
        lock.notifyAll();
        if (syncThread == null && !members.closed && nextSyncLocked() != null) {
            syncThread = new Thread(this::syncLoop, "stripestack-" + name + "-sync");
            syncThread.setDaemon(true);
            syncThread.start();
        }
    }

    /** Makes the sync thread finish its current row and exit (the array is closing: members.closed is set). */
    void stop() {
        Thread t;
        synchronized (lock) {
            stopSync = true;
            lock.notifyAll();
            t = syncThread;
        }
        if (t == null || t == Thread.currentThread()) {
            return;
        }
        boolean interrupted = false;
        while (t.isAlive()) {
            try {
                t.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void syncLoop() {
        while (true) {
            RowOp op;
            long from;
            synchronized (lock) {
                while (!members.closed && (frozen || nextSyncLocked() == null)) {
                    try {
                        lock.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                if (members.closed) {
                    return;
                }
                op = nextSyncLocked();
                from = op == RowOp.RECOVER ? members.recoveredRows : op == RowOp.RESYNC ? resyncDoneRows : 0;
                if (op == RowOp.CHECK || op == RowOp.REPAIR) {
                    mismatchSectors = 0;
                }
                stopSync = false;
                syncStopReason = null;
                progressRows = from;
                syncSpeedKiBps = 0;
                runningSync = op;
                LOG.info("{}: {} started at member sector {} of {}", name, op.label, geo.sectors(from),
                        geo.sectors(geo.rows));
            }
            String stopped = runPass(op, from);
            if (stopped == null && op == RowOp.RESYNC) {
                // the superblocks may say ppl once it is recorded: the parity the pass wrote must be on disk first,
                // or a disk cache could keep the superblock and lose parity a replay would then not rewrite
                try {
                    members.flush();
                } catch (IOException e) {
                    stopped = ERROR_PREFIX + "flushing the members after the pass: " + e.getMessage();
                }
            }
            synchronized (lock) {
                finishPassLocked(op, stopped);
                runningSync = null;
                syncSpeedKiBps = 0;
                lock.notifyAll();
            }
        }
    }

    /**
     * Runs one pass from row {@code from} with {@value #SYNC_WORKERS} workers (this thread and a helper),
     * so one row's member reads overlap another's XOR and write. Rows are taken in order and complete in
     * order ({@link #completeRow}); a worker stops taking rows when asked to stop, and finishes
     * every row it took. Returns null when the pass completed, else why it stopped.
     */
    private String runPass(RowOp op, long from) {
        SyncPass pass = new SyncPass(op, from);
        Thread[] helpers = new Thread[SYNC_WORKERS - 1];
        for (int i = 0; i < helpers.length; i++) {
            helpers[i] = new Thread(() -> syncWorker(pass), Thread.currentThread().getName() + "-" + (i + 2));
            helpers[i].setDaemon(true);
            helpers[i].start();
        }
        syncWorker(pass);
        boolean interrupted = false;
        for (Thread helper : helpers) {
            while (helper.isAlive()) {
                try {
                    helper.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (pass.error != null) {
            return ERROR_PREFIX + pass.error;
        }
        long reached;
        synchronized (pass) {
            reached = pass.watermark;
        }
        if (reached < geo.rows) {
            return members.closed ? "the array was closed" : members.failed ? "the array failed" : "stopped";
        }
        int role = members.failedRole;
        if (op == RowOp.RECOVER && role >= 0 && members.rebuildingOnto(pass.recoverDevice)) {
            // The superblock that makes the new member active must not become durable before its last rows.
            try {
                pass.recoverDevice.flush();
            } catch (IOException e) {
                members.memberFailed(role, pass.recoverDevice, e);
                return "the new member failed flushing its last rows";
            }
        }
        return null;
    }

    /** One pass's shared state; {@code next} is atomic, the rest is guarded by the pass's monitor. */
    final class SyncPass {
        final RowOp op;
        final AtomicLong next;
        final SpeedMeter meter;
        long watermark;
        /** Rows actually read and written, for the speed limits (skipped clean regions cost nothing). */
        final AtomicLong processed = new AtomicLong();
        final boolean dirtyRegionsOnly;
        long lastCheckpoint = System.nanoTime();
        /** Recover: rows below this were flushed to the new member by a worker; one flush at a time. */
        long flushedRows;
        boolean flushing;
        volatile String error;

        /** For recover: the device being rebuilt when the pass started; the pass ends if it is replaced. */
        final BlockDevice recoverDevice;

        SyncPass(RowOp op, long from) {
            this.op = op;
            this.recoverDevice = op == RowOp.RECOVER ? members.rebuildTarget() : null;
            this.dirtyRegionsOnly = superblocks.hasBitmap() && (op == RowOp.RESYNC ? resyncDirtyRegionsOnly
                    : op == RowOp.RECOVER && members.rebuildFromBitmap);
            this.next = new AtomicLong(from);
            this.meter = new SpeedMeter(0);
            this.watermark = from;
            this.flushedRows = from;
        }

        boolean stopping() {
            return stopSync || members.closed || members.failed || error != null
                    || (op == RowOp.RECOVER && !members.rebuildingOnto(recoverDevice));
        }

        /**
         * This pass's step on {@code row}, run by the row's slot owner (see {@link RowUpdater#process}).
         * Every chunk but the one being rebuilt is read from the members (check, repair and resync re-read
         * even cached blocks: they test what the members hold). recover: the rebuilding member's chunk is
         * the XOR of the others and is written to it, then the checkpoint moves past the row.
         * check/repair/resync: parity is recomputed and compared page by page; repair and resync write it
         * back when it differs.
         */
        void processRow(StampedLock rowLock, long row, CallerContext ctx) throws IOException {
            int target = -1;
            if (op == RowOp.RECOVER) {
                target = members.failedRole;
                if (!members.rebuildingOnto(recoverDevice) || members.recoveredRows > row) {
                    return;                          // the rebuild was aborted meanwhile; the pass sees it
                }
                if (dirtyRegionsOnly && !superblocks.bitmap().isDirty(row)) {
                    completeRow(this, row, 0);       // a re-added member's row unwritten since it failed (MemberReAdd)
                    return;
                }
            } else if (members.failedRole >= 0) {
                throw new IOException(name + ": cannot " + op.label + " while degraded (member " + members.failedRole
                        + " is not active)");
            }
            int parityMember = geo.parityMember(row);
            int targetIndex = target < 0 ? -1 : target == parityMember ? geo.dataDisks : geo.dataIndexOf(row, target);
            StripeCache.Entry e = updater.acquireEntry(row);
            boolean keep = false;
            try {
                for (int i = 0; i <= geo.dataDisks; i++) {
                    long[] need = ctx.need[i];
                    if (i == targetIndex) {
                        Bits.clear(need);
                        continue;
                    }
                    if (op != RowOp.RECOVER) {
                        Bits.clear(e.valid[i]);
                    }
                    Bits.setRange(need, 0, geo.blocksPerChunk);
                    RowUpdater.andNotInto(need, e.valid[i]);
                }
                if (!updater.preRead(row, e, ctx, parityMember)) {
                    members.checkUsable(row * geo.rowBytes, false);
                    throw new IOException(name + ": a member failed during " + op.label + " of row " + row);
                }
                long memberOffset = geo.memberOffset(row);
                MemberIoExecutor.Batch writes = io.batch();
                if (op == RowOp.RECOVER) {
                    int count = 0;
                    for (int i = 0; i <= geo.dataDisks; i++) {
                        if (i != targetIndex) {
                            ctx.srcs[count] = e.chunk(i);
                            ctx.idx[count++] = 0;
                        }
                    }
                    ByteBuffer rebuilt = e.chunk(targetIndex);
                    xor.xorAssign(rebuilt, 0, ctx.srcs, ctx.idx, count, geo.chunk);
                    Arrays.fill(ctx.srcs, null);
                    Bits.setRange(e.valid[targetIndex], 0, geo.blocksPerChunk);
                    writes.add(target, recoverDevice, memberOffset, rebuilt.slice(0, geo.chunk), true);
                    updater.runWrites(rowLock, writes, row);
                    completeRow(this, row, 0);    // does nothing if the rebuild ended meanwhile
                } else {
                    ByteBuffer computed = ctx.parity();
                    for (int i = 0; i < geo.dataDisks; i++) {
                        ctx.srcs[i] = e.chunk(i);
                        ctx.idx[i] = 0;
                    }
                    xor.xorAssign(computed, 0, ctx.srcs, ctx.idx, geo.dataDisks, geo.chunk);
                    Arrays.fill(ctx.srcs, null);
                    ByteBuffer stored = e.chunk(geo.dataDisks);
                    int mismatchedPages = 0;
                    for (int page = 0; page < geo.chunk; page += StripeCache.PAGE) {
                        for (int b = page; b < page + StripeCache.PAGE; b += 8) {
                            if (computed.getLong(b) != stored.getLong(b)) {
                                mismatchedPages++;
                                break;
                            }
                        }
                    }
                    if (mismatchedPages > 0) {
                        LOG.debug("{}: {}: row {} has {} mismatching parity pages", name, op.label, row, mismatchedPages);
                        if (op != RowOp.CHECK) {
                            stored.put(0, computed, 0, geo.chunk);
                            updater.addRuns(writes, parityMember, memberOffset, stored, ctx.allBlocks, true);
                            updater.runWrites(rowLock, writes, row);
                        }
                    }
                    completeRow(this, row, op == RowOp.RESYNC ? 0 : mismatchedPages * (StripeCache.PAGE / 512L));
                }
                keep = true;
            } finally {
                updater.releaseEntry(e, keep);
            }
        }
    }

    private void syncWorker(SyncPass pass) {
        CallerContext ctx = writes.context();
        RowWrite w = ctx.rowWrite;
        while (!pass.stopping()) {
            long row = pass.next.getAndIncrement();
            if (row >= geo.rows) {
                return;
            }
            if (pass.dirtyRegionsOnly && pass.op == RowOp.RESYNC && !superblocks.bitmap().isDirty(row)) {
                completeRow(pass, row, 0);  // no write was in flight there: parity is consistent
                continue;
            }
            pass.meter.throttle(pass);
            w.setSync(row, pass);
            quiesce.enter();
            try {
                writes.submit(w, ctx);
            } catch (IOException e) {
                LOG.error("{}: {} stopped at row {}: {}", name, pass.op.label, row, e.getMessage());
                pass.error = e.getMessage();
            } finally {
                w.pass = null;
                quiesce.exit();
            }
            pass.processed.incrementAndGet();
            if (pass.op == RowOp.RECOVER && pass.error == null && members.rebuildingOnto(pass.recoverDevice)) {
                checkpointRecovery(pass);
            }
        }
    }

    /**
     * Writes the rebuild checkpoint to the superblocks about once a second. The new member is flushed
     * first: the recorded offset must never be ahead of what is durable on it. Between checkpoints the
     * new member is also flushed every 32 MiB ({@link #WRITEBACK_BYTES}) of rebuilt data, so the kernel
     * writes it back while the other workers rebuild the next rows instead of all at the end (a rebuild
     * shorter than the checkpoint interval otherwise pays its whole write-back after its last row).
     * One worker flushes at a time ({@code pass.flushing}); the others keep rebuilding meanwhile.
     */
    private void checkpointRecovery(SyncPass pass) {
        long rowsNow = members.recoveredRows;
        boolean checkpoint;
        synchronized (pass) {
            checkpoint = System.nanoTime() - pass.lastCheckpoint >= CHECKPOINT_NANOS;
            boolean writebackDue = rowsNow - pass.flushedRows >= Math.max(1, WRITEBACK_BYTES / geo.chunk);
            if (pass.flushing || (!checkpoint && !writebackDue)) {
                return;
            }
            pass.flushing = true;
        }
        try {
            int role = members.failedRole;
            if (role < 0) {
                return;
            }
            MemberSet.Member target = members.roles[role];
            BlockDevice device = pass.recoverDevice;
            try {
                device.flush();
            } catch (IOException e) {
                members.memberFailed(role, device, e);
                return;
            }
            if (!checkpoint) {
                return;
            }
            synchronized (lock) {
                if (members.failedRole == role && target.state == Raid5Status.MemberState.REBUILDING
                        && target.device == device) {
                    superblocks.recoveryCheckpointLocked(rowsNow);
                }
            }
        } finally {
            synchronized (pass) {
                pass.flushing = false;
                pass.flushedRows = Math.max(pass.flushedRows, rowsNow);
                if (checkpoint) {
                    pass.lastCheckpoint = System.nanoTime();
                }
            }
        }
    }

    /**
     * Called by the owner of {@code row}'s slot once the row is done: waits until every earlier row of
     * the pass is done, then moves the watermark (and, for recover, the checkpoint) past it. Returns
     * false if the pass stopped with an error meanwhile (the row's result is then not counted).
     */
    boolean completeRow(SyncPass pass, long row, long mismatched) {
        synchronized (pass) {
            while (pass.watermark != row) {
                if (pass.error != null || members.failed || members.closed
                        || (pass.op == RowOp.RECOVER && !members.rebuildingOnto(pass.recoverDevice))) {
                    return false;
                }
                try {
                    pass.wait(10);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            if (pass.op == RowOp.RECOVER) {
                if (!members.rebuildingOnto(pass.recoverDevice)) {
                    return false;
                }
                members.recoveredRows = row + 1;
            } else if (pass.op == RowOp.RESYNC) {
                resyncDoneRows = row + 1;
            } else {
                mismatchSectors += mismatched;
            }
            pass.watermark = row + 1;
            progressRows = row + 1;
            pass.notifyAll();
            return true;
        }
    }

    private void finishPassLocked(RowOp op, String stopped) {
        syncStopReason = stopped;
        if (op == RowOp.CHECK || op == RowOp.REPAIR) {
            requestedScrub = null;
        }
        if (stopped != null) {
            LOG.info("{}: {} stopped at member sector {}: {}", name, op.label, geo.sectors(progressRows), stopped);
            if (stopped.startsWith(ERROR_PREFIX) && nextSyncLocked() == op) {
                // Nothing changed that would make a retry succeed: wait for the operator instead of spinning.
                frozen = true;
                LOG.error("{}: {} failed and is frozen; fix the cause, then write idle (or the action) to retry",
                        name, op.label);
            }
            return;
        }
        switch (op) {
            case RECOVER -> {
                MemberSet.Member m = members.rebuildCompleteLocked();
                if (m == null) {
                    return;                      // the new member failed after its last row
                }
                // Recovery wrote every row's missing chunk from the others: every row is consistent now.
                needsResync = false;
                resyncDirtyRegionsOnly = false;
                superblocks.writeLocked(false);
                LOG.info("{}: rebuild of member {} ({}) complete; the array is clean", name, m.role, m.displayName);
            }
            case RESYNC -> {
                needsResync = false;
                resyncDirtyRegionsOnly = false;
                if (superblocks.hasPartialParityLogLocked()) {
                    superblocks.writeLocked(false);   // now the members may say ppl
                }
                LOG.info("{}: resync complete", name);
            }
            case CHECK, REPAIR -> LOG.info("{}: {} complete, mismatch_cnt {}", name, op.label, mismatchSectors);
            default -> throw new IllegalStateException(op.label);
        }
    }

    /**
     * md's sync throttle, used by the sync workers only: progress marks every half second over a window
     * of about two seconds give the current speed; above sync_speed_max the thread sleeps, above
     * sync_speed_min it also sleeps while foreground I/O keeps arriving.
     */
    private final class SpeedMeter {
        private static final int MARKS = 4;
        private static final long MARK_STEP = TimeUnit.MILLISECONDS.toNanos(500);
        private final long[] markTime = new long[MARKS];
        private final long[] markRow = new long[MARKS];
        private int last;
        private long foregroundOps = -1;

        SpeedMeter(long fromRow) {
            long now = System.nanoTime();
            Arrays.fill(markTime, now);
            Arrays.fill(markRow, fromRow);
        }

        synchronized void throttle(SyncPass pass) {
            while (!pass.stopping()) {
                long row = pass.processed.get();
                long now = System.nanoTime();
                if (now - markTime[last] >= MARK_STEP) {
                    last = (last + 1) % MARKS;
                    markTime[last] = now;
                    markRow[last] = row;
                }
                int oldest = (last + 1) % MARKS;
                long elapsed = now - markTime[oldest];
                long kib = (row - markRow[oldest]) * (geo.chunk / 1024);
                long speed = (long) (kib * 1e9 / Math.max(elapsed, 1_000_000));
                syncSpeedKiBps = speed;
                long ops = stats.readOps() + stats.writeOps() + stats.inFlight();
                boolean busy = foregroundOps >= 0 && ops != foregroundOps;
                foregroundOps = ops;
                if (speed <= syncSpeedMin || (speed <= syncSpeedMax && !busy)) {
                    return;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(busy ? 5 : 20));
            }
        }
    }
}
