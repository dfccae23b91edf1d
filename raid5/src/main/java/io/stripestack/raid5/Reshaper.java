package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.MediumErrorException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * md's reshape of a RAID-5 array onto more members, to another chunk size, or both, online and forwards: the
 * data moves row by row from the old geometry (n members, chunk c) to the new one (n + k members, k >= 0, chunk
 * c'), while the data offset moves down by at least one chunk of the larger size, so a new row is always written
 * where the old geometry's data was already copied from (modern mdadm's way; no backup file). The position
 * reached is checkpointed into every member's superblock (md's reshape_position
 * with the reshape-active and new-offset feature bits), and an assemble resumes from it.
 *
 * <p>Positions are array bytes. Below {@code safe} (the last checkpoint) the new geometry serves
 * ({@link NewGeometryIo}); at or above {@code progress} (how far the mover has claimed) the old parts
 * serve as before; a request touching {@code [safe, progress)} waits until the next checkpoint passes it
 * (md's rule: the region moved but not yet recorded must not change, or a crash would redo its copy from
 * stale old data). The mover claims a batch of rows, waits until no old-geometry request that started before
 * the claim is still running, reads the batch through the old read path, writes it as new rows, and
 * checkpoints when the next batch would overwrite old data above the checkpoint, or every
 * {@value #CHECKPOINT_MILLIS} ms. At the end the array's parts are replaced by standard ones for the new
 * geometry and its size grows.
 *
 * <p>Concurrency: {@link #gate}'s monitor guards {@link #safe}, {@link #progress}, the in-flight counts,
 * {@link #epoch} and {@link #finished}; requests hold no lock while they run. Every request passes the gate: the
 * array publishes a reshape only while it is suspended ({@link io.stripestack.blockdev.Quiesce}), so none that
 * read no reshape is still running when the mover starts. The mover thread
 * ({@code stripestack-<array>-reshape}) alone reads and writes the rows being moved and writes the
 * checkpoints (under the array's state lock, like every superblock write).
 */
final class Reshaper {
    private static final Logger LOG = LoggerFactory.getLogger(Reshaper.class);
    private static final long CHECKPOINT_MILLIS = 200;
    /** Bytes of array data one batch moves at most. */
    private static final int BATCH_BYTES = 4 << 20;

    /** What the superblocks of an interrupted reshape say, split into the old geometry and the targets. */
    record Resume(Md1Superblock oldTemplate, MemberSet.Member[] oldRoles, List<MemberSet.Member> targets,
                  long positionSectors, long newOffsetSectors, int newChunkSectors, Raid5Options oldOptions) {
    }

    private final Raid5Array array;
    private final String name;
    private final ArrayParts old;
    private final StripeGeometry oldGeo;
    private final NewGeometryIo newIo;
    private final StripeGeometry newGeo;
    /** New rows every batch ends on a multiple of (see {@link #batchEnd}): old chunk / new chunk, at least 1. */
    private final int rowUnit;
    private final List<MemberSet.Member> targets;
    private final Raid5Options options;
    private final boolean restorePpl;
    private final Object gate = new Object();
    /** Array bytes in the new geometry and recorded in the superblocks. */
    private long safe;
    /** Array bytes the mover has claimed: requests at or above it use the old geometry. */
    private long progress;
    private final int[] oldInFlight = new int[2];
    private int newInFlight;
    private int epoch;
    private boolean finished;
    /** The last row is moved: every request waits until the new parts serve. */
    private boolean draining;
    private boolean stopping;
    private volatile String stopReason;
    private volatile long speedKiBps;
    private Thread mover;

    Reshaper(Raid5Array array, ArrayParts old, Md1Superblock oldTemplate, List<MemberSet.Member> targets,
             long positionSectors, long newOffsetSectors, int newChunkSectors, Raid5Options options) {
        this.array = array;
        this.name = oldTemplate.setName;
        this.old = old;
        this.oldGeo = old.geo;
        this.targets = List.copyOf(targets);
        this.options = options;
        this.restorePpl = options.consistencyPolicy() == ConsistencyPolicy.PPL;
        Md1Superblock n = oldTemplate.copy();
        n.raidDisks = oldGeo.members + targets.size();
        n.chunkSectors = newChunkSectors;
        n.dataOffsetSectors = newOffsetSectors;
        this.newGeo = StripeGeometry.of(n);
        this.rowUnit = Math.max(1, oldGeo.chunk / newGeo.chunk);
        BlockDevice[] devices = new BlockDevice[newGeo.members];
        for (int r = 0; r < oldGeo.members; r++) {
            devices[r] = old.members.roles[r].device;
        }
        for (int i = 0; i < targets.size(); i++) {
            devices[oldGeo.members + i] = targets.get(i).device;
        }
        this.newIo = new NewGeometryIo(newGeo, devices, Xor.best());
        this.safe = positionSectors * 512;
        this.progress = safe;
    }

    // ----------------------------------------------------------------------------------------- start

    /**
     * Starts reshaping {@code parts}' array to {@code raidDevices} members (its first spares join) with chunks of
     * {@code chunkSectors}: checks that it can, records the reshape in every superblock (position 0) and returns the
     * reshaper, not yet started.
     *
     * @throws IllegalArgumentException or {@link IllegalStateException} saying why not; nothing changed then
     */
    static Reshaper begin(Raid5Array array, ArrayParts parts, Md1Superblock template, int raidDevices,
                          int chunkSectors, boolean keepLog, Raid5Options options) throws IOException {
        MemberSet members = parts.members;
        synchronized (members.lock) {
            members.checkOpen();
            long newOffset = checkCanReshape(parts, template, raidDevices, chunkSectors, keepLog);
            StripeGeometry geo = parts.geo;
            String name = template.setName;
            int needed = raidDevices - geo.members;
            List<MemberSet.Member> targets = new ArrayList<>();
            for (int i = 0; i < needed; i++) {
                targets.add(members.spares.remove(0));
            }
            members.reshapeTargets.addAll(targets);
            parts.superblocks.beginReshapeLocked(raidDevices, chunkSectors, newOffset - template.dataOffsetSectors,
                    targets);
            parts.sync.setAction("frozen");
            LOG.info("{}: reshape to {} members of {} KiB chunks started (from {} of {} KiB); data offset {} -> {} "
                    + "sectors", name, raidDevices, chunkSectors / 2, geo.members, geo.chunk / 1024,
                    template.dataOffsetSectors, newOffset);
            return new Reshaper(array, parts, template, targets, 0, newOffset, chunkSectors, options);
        }
    }

    /**
     * Refuses, saying why, a reshape of {@code parts}' array to {@code raidDevices} members with chunks of
     * {@code chunkSectors} that cannot run now; returns the new data offset in sectors. Called before anything
     * changes (and again, under the state lock, by {@link #begin}). With {@code keepLog} (the array keeps a partial
     * parity log, switched off while the reshape runs, as md requires) the new data offset leaves the log its room:
     * its whole area when that fits, else a header and a chunk of the new size (the least it works with); a reshape
     * that cannot leave either is refused, saying why and what to do.
     */
    static long checkCanReshape(ArrayParts parts, Md1Superblock template, int raidDevices, int chunkSectors,
                                boolean keepLog) {
        String name = template.setName;
        StripeGeometry geo = parts.geo;
        MemberSet members = parts.members;
        if (raidDevices < geo.members) {
            throw new IllegalArgumentException(name + ": raid_disks " + raidDevices + " is fewer than the "
                    + geo.members + " members it has; shrinking an array is not supported");
        }
        if (raidDevices > 64) {
            throw new IllegalArgumentException(name + ": raid_disks " + raidDevices + " exceeds 64");
        }
        long chunkBytes = chunkSectors * 512L;
        if (chunkSectors <= 0 || Long.bitCount(chunkBytes) != 1 || chunkBytes < 4096) {
            throw new IllegalArgumentException(name + ": chunk_size " + chunkBytes + " is not a power of two of at "
                    + "least 4096 bytes");
        }
        if (chunkBytes * raidDevices > (1L << 30)) {
            throw new IllegalArgumentException(name + ": chunk " + chunkBytes + " bytes x " + raidDevices
                    + " members exceeds the 1 GiB row this engine supports; use a smaller chunk");
        }
        if (template.sizeSectors % chunkSectors != 0) {
            throw new IllegalArgumentException(name + ": a chunk of " + chunkBytes / 1024 + " KiB does not divide the "
                    + "member size in use (" + template.sizeSectors / 2 + " KiB); choose a chunk that divides it (md "
                    + "refuses the same; mdadm --grow --size would shrink it first)");
        }
        if (raidDevices == geo.members && chunkBytes == geo.chunk) {
            throw new IllegalArgumentException(name + ": already " + raidDevices + " members of " + chunkBytes / 1024
                    + " KiB chunks; nothing to reshape");
        }
        if (parts.consistencyPolicy == ConsistencyPolicy.BITMAP) {
            throw new IllegalStateException(name + ": the write-intent bitmap lies where the data offset moves to; "
                    + "restart the array with consistency_policy resync (or ppl), grow it, then restart with bitmap");
        }
        int moveSectors = Math.max(template.chunkSectors, chunkSectors);
        long newOffset = newDataOffsetSectors(template, moveSectors, 0);
        if (newOffset < 0) {
            throw new IllegalStateException(name + ": data offset " + template.dataOffsetSectors + " sectors leaves no "
                    + "chunk of " + moveSectors + " sectors free after the superblock to move the data "
                    + "down into (md would need a backup file, which stripestack does not support); an array needs a "
                    + "larger data offset (the default is 2048 sectors) to reshape");
        }
        if (keepLog) {
            long logStart = template.superOffsetSectors + template.pplOffset;
            long leastLog = PplHeader.BYTES / 512 + chunkSectors;
            newOffset = newDataOffsetSectors(template, moveSectors, logStart + template.pplSize);
            if (newOffset < 0) {
                newOffset = newDataOffsetSectors(template, moveSectors, logStart + leastLog);
            }
            if (newOffset < 0) {
                throw new IllegalStateException(name + ": the partial parity log would lose its room: the reshape "
                        + "moves the data offset down from " + template.dataOffsetSectors + " sectors by at least "
                        + moveSectors + " (a chunk of the larger size), and the log, from sector " + logStart
                        + ", needs at least " + leastLog + " sectors (a 4 KiB header and a " + chunkSectors / 2
                        + " KiB chunk). Reshape to a smaller chunk in the same step, or switch the consistency "
                        + "policy to resync first (consistency_policy resync: the write hole stays open; a restart "
                        + "with bitmap gives a write-intent bitmap) and reshape then; arrays created with ppl get a "
                        + "data offset of " + Raid5Config.PPL_DATA_OFFSET_SECTORS + " sectors, as mdadm gives "
                        + "them, which leaves room for both");
            }
        }
        if (members.failed || members.failedRole >= 0) {
            throw new IllegalStateException(name + ": is degraded (member " + members.failedRole
                    + " is not active); rebuild it before growing");
        }
        String action = parts.sync.action();
        if (!action.equals("idle")) {
            throw new IllegalStateException(name + ": sync action " + action + " is running; wait for it to "
                    + "finish (or write idle) before growing");
        }
        int needed = raidDevices - geo.members;
        if (members.spares.size() < needed) {
            throw new IllegalStateException(name + ": growing to " + raidDevices + " members needs " + needed
                    + " spare(s), it has " + members.spares.size() + "; add them first (addSpare / mdadm --add)");
        }
        return newOffset;
    }

    /**
     * The new data offset for a reshape: half of the units of {@code moveSectors} (the larger of the old and new
     * chunk) free between the superblock (and md's bad-block log, and sector {@code keepBelow}: what a partial
     * parity log needs) and the data, at least one, so a later reshape still finds room; -1 when not one unit is
     * free. One unit is enough: a new row then always ends at or before the start of the old row that holds the
     * checkpoint's data (see {@link #rowsWritableAbove}).
     */
    private static long newDataOffsetSectors(Md1Superblock sb, int moveSectors, long keepBelow) {
        long lowest = Math.max(keepBelow, sb.superOffsetSectors + Md1Superblock.BLOCK_BYTES / 512);
        if (sb.hasBadBlockLog() && sb.bblogOffset > 0) {
            lowest = Math.max(lowest, sb.superOffsetSectors + sb.bblogOffset + sb.bblogSize);
        }
        long free = (sb.dataOffsetSectors - lowest) / moveSectors;
        if (free < 1) {
            return -1;
        }
        return sb.dataOffsetSectors - Math.max(1, free / 2) * moveSectors;
    }

    /**
     * Splits what the superblocks of an interrupted reshape say into the old geometry and its targets.
     *
     * @throws Raid5AssembleException when the reshape is not one this engine resumes (degraded, backwards,
     *                                another level or layout, a position not on a new row)
     */
    static Resume resume(String name, Md1Superblock sb, MemberSet.Member[] roles, Raid5Options options)
            throws Raid5AssembleException {
        int oldCount = sb.raidDisks - sb.deltaDisks;
        String problem = null;
        if ((sb.featureMap & Md1Superblock.FEATURE_RESHAPE_BACKWARDS) != 0 || sb.deltaDisks < 0) {
            problem = "the reshape runs backwards or shrinks (delta_disks " + sb.deltaDisks + "); only forwards "
                    + "reshapes that keep or add members are supported -- finish it under Linux";
        } else if (sb.newLevel != sb.level || sb.newLayout != sb.layout) {
            problem = "the reshape changes the level or layout; only the member count and the chunk size are "
                    + "supported -- finish it under Linux";
        } else if (sb.deltaDisks == 0 && sb.newChunkSectors == sb.chunkSectors) {
            problem = "the reshape changes neither the member count nor the chunk size";
        } else if (sb.newChunkSectors <= 0 || Integer.bitCount(sb.newChunkSectors) != 1
                || sb.sizeSectors % sb.newChunkSectors != 0) {
            problem = "new_chunk " + sb.newChunkSectors + " sectors is not a power of two that divides the member "
                    + "size in use (" + sb.sizeSectors + " sectors)";
        } else if ((sb.featureMap & Md1Superblock.FEATURE_NEW_OFFSET) == 0 || sb.newOffset >= 0) {
            problem = "the reshape does not move the data offset down (it needs md's backup file); finish it "
                    + "under Linux";
        } else if (oldCount < 3) {
            problem = "raid_disks " + sb.raidDisks + " minus delta_disks " + sb.deltaDisks + " is not a RAID-5";
        } else if (sb.reshapePosition % ((long) sb.newChunkSectors * (sb.raidDisks - 1)) != 0) {
            problem = "reshape_position " + sb.reshapePosition + " is not on a row of the new geometry";
        }
        for (MemberSet.Member m : roles) {
            if (problem == null && m.state != Raid5Status.MemberState.ACTIVE) {
                problem = "member " + m.role + " is not active: a reshape resumes on a healthy array only -- bring "
                        + "the member back";
            }
        }
        if (problem != null) {
            throw new Raid5AssembleException("cannot resume the reshape of " + name, List.of(problem));
        }
        Md1Superblock oldTemplate = sb.copy();
        oldTemplate.raidDisks = oldCount;
        MemberSet.Member[] oldRoles = new MemberSet.Member[oldCount];
        System.arraycopy(roles, 0, oldRoles, 0, oldCount);
        List<MemberSet.Member> targets = new ArrayList<>();
        for (int r = oldCount; r < roles.length; r++) {
            MemberSet.Member m = roles[r];
            targets.add(new MemberSet.Member(-1, m.device, m.displayName, m.devNumber, m.deviceUuid,
                    m.dataSizeSectors, Raid5Status.MemberState.ACTIVE));
        }
        LOG.warn("{}: resuming the reshape from {} members of {} KiB chunks to {} of {} KiB at array sector {}", name,
                oldCount, sb.chunkSectors / 2, sb.raidDisks, sb.newChunkSectors / 2, sb.reshapePosition);
        return new Resume(oldTemplate, oldRoles, targets, sb.reshapePosition,
                sb.dataOffsetSectors + sb.newOffset, sb.newChunkSectors,
                options.withConsistencyPolicy(ConsistencyPolicy.RESYNC));
    }

    /** Freezes the old geometry's sync actions and starts the mover thread. */
    void start() {
        old.sync.setAction("frozen");
        mover = new Thread(this::run, "stripestack-" + name + "-reshape");
        mover.setDaemon(true);
        mover.start();
    }

    /**
     * Stops the mover after its batch and records the position it reached (the array is closing); returns
     * once the mover has exited.
     */
    void stop() {
        synchronized (gate) {
            stopping = true;
            gate.notifyAll();
        }
        Thread t = mover;
        boolean interrupted = false;
        while (t != null && t.isAlive()) {
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

    /** Waits until the reshape finished or stopped; for tests and the CLI's wait. */
    boolean await(long timeout, TimeUnit unit) throws InterruptedException {
        Thread t = mover;
        t.join(Math.max(1, unit.toMillis(timeout)));
        return !t.isAlive();
    }

    // ----------------------------------------------------------------------------------------- requests

    private static final int NEW = 2;
    private static final int FINISHED = 3;

    /** Reads through the geometry that holds the range; false when the reshape finished (use the array's parts). */
    boolean read(long offset, ByteBuffer dst, int dstIndex, int length) throws IOException {
        int route = enter(offset, length);
        if (route == FINISHED) {
            return false;
        }
        try {
            if (route == NEW) {
                newIo.read(offset, dst, dstIndex, length);
            } else {
                old.reads.read(offset, dst, dstIndex, length);
            }
        } finally {
            leave(route);
        }
        return true;
    }

    /** Writes ({@code src} null: discards) through the geometry that holds the range; false when finished. */
    boolean write(long offset, ByteBuffer src, int srcIndex, int length) throws IOException {
        int route = enter(offset, length);
        if (route == FINISHED) {
            return false;
        }
        try {
            if (route == NEW) {
                newIo.write(offset, src, srcIndex, length);
            } else if (src == null) {
                old.writes.discard(offset, length);
            } else {
                old.writes.write(offset, src, srcIndex, length);
            }
        } finally {
            leave(route);
        }
        return true;
    }

    /** Flushes the old members and the targets; false when finished. */
    boolean flush() throws IOException {
        int route = enter(0, 0);
        if (route == FINISHED) {
            return false;
        }
        try {
            old.members.flush();
            for (MemberSet.Member t : targets) {
                t.device.flush();
            }
        } finally {
            leave(route);
        }
        return true;
    }

    /** Waits while the range touches the moved but unrecorded window; counts the request in. */
    private int enter(long offset, long length) throws IOException {
        synchronized (gate) {
            while (true) {
                if (finished) {
                    return FINISHED;
                }
                boolean degraded = old.members.failed || old.members.failedRole >= 0;
                if ((stopReason != null || degraded) && length > 0 && offset < progress) {
                    throw new MediumErrorException(name + ": the reshape stopped (" + (stopReason != null ? stopReason
                            : "member " + old.members.failedRole + " failed") + "); the reshaped region cannot be "
                            + "served degraded", offset, false);
                }
                if (!draining && offset + length <= safe && length > 0) {
                    newInFlight++;
                    return NEW;
                }
                if (!draining && (offset >= progress || length == 0)) {
                    oldInFlight[epoch]++;
                    return epoch;
                }
                try {
                    gate.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException(name + ": interrupted waiting for the reshape window");
                }
            }
        }
    }

    private void leave(int route) {
        synchronized (gate) {
            if (route == NEW) {
                newInFlight--;
            } else {
                oldInFlight[route]--;
            }
            gate.notifyAll();
        }
    }

    // ----------------------------------------------------------------------------------------- mover

    private void run() {
        try {
            move();
        } catch (IOException | RuntimeException e) {
            stopReason = String.valueOf(e.getMessage());
            LOG.error("{}: the reshape stopped at array byte {}: {}", name, safeBytes(), e.toString());
            synchronized (gate) {
                draining = false;   // a failed finish: requests get the error instead of waiting
                gate.notifyAll();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void move() throws IOException, InterruptedException {
        long oldSize = oldGeo.size;
        int batchRows = Math.max(rowUnit, BATCH_BYTES / newGeo.rowBytes / rowUnit * rowUnit);
        ByteBuffer batch = ByteBuffer.allocateDirect(batchRows * newGeo.rowBytes);
        ByteBuffer parity = ByteBuffer.allocateDirect(batchRows * newGeo.chunk);
        ByteBuffer[] sources = new ByteBuffer[newGeo.dataDisks];
        int[] sourceIndex = new int[newGeo.dataDisks];
        long row = safe / newGeo.rowBytes;
        long lastCheckpoint = System.nanoTime();
        Throttle throttle = new Throttle(row);
        while (row < newGeo.rows) {
            if (stopRequested()) {
                checkpoint();
                return;
            }
            int failedRole = old.members.failedRole;
            if (old.members.failed || failedRole >= 0) {
                throw new IllegalStateException("member " + failedRole + " failed; a reshape does not run degraded");
            }
            long end = batchEnd(row, batchRows);
            if (end <= row) {
                checkpoint();
                lastCheckpoint = System.nanoTime();
                end = batchEnd(row, batchRows);
                if (end <= row) {
                    throw new IllegalStateException("no room to write new row " + row + " (data offset moved "
                            + (oldGeo.dataOffset - newGeo.dataOffset) + " bytes)");
                }
            }
            claim(end * newGeo.rowBytes);
            long from = row * newGeo.rowBytes;
            int bytes = (int) ((end - row) * newGeo.rowBytes);
            int oldBytes = (int) Math.max(0, Math.min(bytes, oldSize - from));
            if (oldBytes > 0) {
                old.reads.read(from, batch, 0, oldBytes);
            }
            for (int i = oldBytes; i < bytes; i++) {
                batch.put(i, (byte) 0);   // beyond the old data: the new space reads as zeros
            }
            newIo.writeWholeRows(row, (int) (end - row), batch, parity, sources, sourceIndex, old.io);
            row = end;
            if (System.nanoTime() - lastCheckpoint >= TimeUnit.MILLISECONDS.toNanos(CHECKPOINT_MILLIS)) {
                checkpoint();
                lastCheckpoint = System.nanoTime();
            }
            throttle.pace(row);
        }
        finish();
    }

    /**
     * Where the batch from new row {@code row} ends: at most {@code batchRows} on, no further than the rows writable
     * above the checkpoint, and, while the chunk shrinks, on a multiple of old chunk / new chunk rows (but the last
     * row): Linux (since 4.3) starts a reshape only from a position on a multiple of the larger chunk times the new
     * data disks, and every batch end may become the recorded position.
     */
    private long batchEnd(long row, int batchRows) {
        long end = Math.min(Math.min(newGeo.rows, row + batchRows), rowsWritableAbove(safeBytes()));
        return end == newGeo.rows ? end : end - end % rowUnit;
    }

    private boolean stopRequested() {
        synchronized (gate) {
            return stopping;
        }
    }

    private long safeBytes() {
        synchronized (gate) {
            return safe;
        }
    }

    /**
     * New rows that may be written while the checkpoint is {@code safeBytes}: their member bytes must end at or
     * before the old row that holds the checkpoint's position, whose data a resume copies again.
     */
    private long rowsWritableAbove(long safeBytes) {
        if (safeBytes >= oldGeo.size) {
            return newGeo.rows;
        }
        long oldRowAtSafe = safeBytes / oldGeo.rowBytes;
        long limit = oldGeo.memberOffset(oldRowAtSafe) - newGeo.dataOffset;
        return limit / newGeo.chunk;
    }

    /** Moves the old/new boundary to {@code bytes} and waits for the old-geometry requests that began before. */
    private void claim(long bytes) throws InterruptedException {
        synchronized (gate) {
            progress = bytes;
            int before = epoch;
            epoch ^= 1;
            while (oldInFlight[before] > 0) {
                gate.wait();
            }
        }
    }

    /** Makes the moved rows durable, then records them in every superblock and lets waiting requests in. */
    private void checkpoint() throws IOException {
        long reached;
        synchronized (gate) {
            reached = progress;
        }
        if (reached == safeBytes()) {
            return;
        }
        newIo.flush();
        synchronized (old.members.lock) {
            old.superblocks.reshapePositionLocked(reached / 512);
        }
        if (old.members.failed) {
            throw new IOException("the superblocks could not be written");
        }
        synchronized (gate) {
            safe = reached;
            gate.notifyAll();
        }
    }

    /**
     * The last row is moved: once no request runs, replaces the array's parts with standard ones for the new
     * geometry (superblocks without the reshape, data offset moved), lets the waiting requests through them
     * and tells the capacity listeners.
     */
    private void finish() throws IOException, InterruptedException {
        synchronized (gate) {
            draining = true;
            while (oldInFlight[0] + oldInFlight[1] + newInFlight > 0) {
                gate.wait();
            }
        }
        newIo.flush();
        Md1Superblock t;
        boolean resyncAfter;
        List<MemberSet.Member> spares;
        synchronized (old.members.lock) {
            t = old.superblocks.finishReshapeLocked();
            resyncAfter = old.sync.resyncPendingLocked();
            spares = List.copyOf(old.members.spares);
        }
        long moved = oldGeo.dataOffset / 512 - newGeo.dataOffset / 512;
        t.resyncOffset = resyncAfter ? 0 : Md1Superblock.RESYNC_DONE;
        MemberSet.Member[] roles = new MemberSet.Member[newGeo.members];
        for (int r = 0; r < newGeo.members; r++) {
            MemberSet.Member m = r < oldGeo.members ? old.members.roles[r] : targets.get(r - oldGeo.members);
            roles[r] = new MemberSet.Member(r, m.device, m.displayName, m.devNumber, m.deviceUuid,
                    m.dataSizeSectors + (r < oldGeo.members ? moved : 0), Raid5Status.MemberState.ACTIVE);
        }
        Raid5Options next = options.withConsistencyPolicy(ConsistencyPolicy.RESYNC);
        if (restorePpl) {
            Md1Superblock placed = t.copy();
            placed.featureMap |= Md1Superblock.FEATURE_PPL;
            PartialParityLog.place(placed);
            String why = PartialParityLog.whyNot(placed);
            if (why == null) {
                next = options;
            } else {
                LOG.warn("{}: after the reshape the partial parity log does not fit ({}); consistency policy resync",
                        name, why);
            }
        }
        array.installParts(t, roles, spares, next);
        // only now: a request checking the old parts' open state must not see them closed before the swap
        old.members.closed = true;
        old.sync.stop();
        old.superblocks.stopBitmapDaemon();
        old.io.close();
        synchronized (gate) {
            progress = newGeo.size;
            finished = true;
            gate.notifyAll();
        }
        LOG.info("{}: reshape done: {} members of {} KiB chunks, {} bytes (was {}), data offset {} sectors", name,
                newGeo.members, newGeo.chunk / 1024, newGeo.size, oldGeo.size, newGeo.dataOffset / 512);
        array.reshapeDone();
    }

    // ----------------------------------------------------------------------------------------- progress

    /** The reshape as md's sync_action "reshape" shows it: member sectors of the new geometry moved. */
    SyncProgress progress() {
        long done;
        synchronized (gate) {
            done = Math.min(progress, newGeo.size) / newGeo.rowBytes;
        }
        long total = newGeo.rows;
        long speed = speedKiBps;
        long leftKiB = (total - done) * (newGeo.chunk / 1024);
        String action = stopReason != null ? "frozen" : "reshape";
        return new SyncProgress(action, newGeo.sectors(done), newGeo.sectors(total), speed,
                speed > 0 ? leftKiB / speed : -1);
    }

    /** The array size when the reshape is done. */
    long newSize() {
        return newGeo.size;
    }

    int newMemberCount() {
        return newGeo.members;
    }

    int newChunkBytes() {
        return newGeo.chunk;
    }

    /**
     * The sync speed limits for the mover (sync_speed_min / max of the array, KiB of member data per second):
     * never above the maximum; above the minimum only while no foreground I/O arrives.
     */
    private final class Throttle {
        private final long startRow;
        private final long startNanos = System.nanoTime();
        private long foregroundOps = -1;

        Throttle(long startRow) {
            this.startRow = startRow;
        }

        void pace(long row) {
            while (true) {
                long elapsed = Math.max(1, System.nanoTime() - startNanos);
                long speed = (long) ((row - startRow) * (newGeo.chunk / 1024) * 1e9 / elapsed);
                speedKiBps = speed;
                long ops = array.stats().readOps() + array.stats().writeOps() + array.stats().inFlight();
                boolean busy = foregroundOps >= 0 && ops != foregroundOps;
                foregroundOps = ops;
                if (speed <= old.sync.speedMin() || (speed <= old.sync.speedMax() && !busy) || stopRequested() || old.members.failedRole >= 0) {
                    return;
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(busy ? 5 : 20));
            }
        }
    }
}
