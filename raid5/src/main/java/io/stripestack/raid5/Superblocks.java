package io.stripestack.raid5;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the members' md v1.2 superblocks and write-intent bitmap record: events, dev_roles, the array's
 * active/clean state and resync offset, a rebuilding member's recovery offset; and the bitmap's dirty
 * regions around every row update, cleared by a daemon once idle.
 *
 * <p>Concurrency: the superblock template and {@link #recoveryCheckpointRows} are guarded by the array's
 * state lock ({@link MemberSet#lock}); every method named {@code ...Locked} expects it held. The
 * {@link WriteIntentBitmap} has its own monitor, taken by every row update for a moment
 * ({@link #beginRowWrite}) and held while a newly dirty region is recorded on the members; code holding it
 * never takes the state lock (lock order: state lock, then bitmap), which is why the bitmap writer walks
 * the members without it. The bitmap daemon ({@code stripestack-<array>-bitmap}, a scheduled thread)
 * clears idle regions every {@value WriteIntentBitmap#DAEMON_SLEEP_SECONDS} seconds.
 */
final class Superblocks {
    private static final Logger LOG = LoggerFactory.getLogger(Superblocks.class);

    private final String name;
    private final StripeGeometry geo;
    /** Array-wide superblock fields and dev_roles; guarded by the state lock. */
    private final Md1Superblock template;
    /** The write-intent bitmap, or null when the members have no room for one (see WriteIntentBitmap). */
    private final WriteIntentBitmap bitmap;
    private final WriteIntentBitmap.Members bitmapWriter = this::writeBitmapToMembers;
    /** The bitmap images written to the members (the layer counter {@code bitmap_writes}). */
    private final LongAdder bitmapWrites;
    private final MemberSet members;
    /**
     * Whether the members keep a partial parity log (at the template's ppl offset and size) instead of a
     * bitmap; guarded by the state lock, switched by {@link #switchPartialParityLogLocked}.
     */
    private boolean partialParityLog;
    private SyncEngine sync;
    private ScheduledExecutorService bitmapDaemon;
    /** The recovered rows known durable on the new member: what its superblock's recovery_offset says. */
    private long recoveryCheckpointRows;

    Superblocks(String name, StripeGeometry geo, Md1Superblock template, WriteIntentBitmap bitmap,
                boolean partialParityLog, MemberSet members, LongAdder bitmapWrites) {
        if (bitmap != null && partialParityLog) {
            throw new IllegalArgumentException(name + ": an array keeps a write-intent bitmap or a partial parity log, "
                    + "not both (md stores them in the same place)");
        }
        this.partialParityLog = partialParityLog;
        this.name = name;
        this.geo = geo;
        this.template = template;
        this.bitmap = bitmap;
        this.members = members;
        this.bitmapWrites = bitmapWrites;
        this.recoveryCheckpointRows = members.recoveredRows;
    }

    /** Set once by the array before any thread starts: the resync state goes into resync_offset. */
    void connect(SyncEngine sync) {
        this.sync = sync;
    }

    boolean hasBitmap() {
        return bitmap != null;
    }

    WriteIntentBitmap bitmap() {
        return bitmap;
    }

    long events() {
        synchronized (members.lock) {
            return template.events;
        }
    }

    /** The set UUID as mdadm prints it. */
    String uuid() {
        synchronized (members.lock) {
            return Md1Superblock.formatUuid(template.setUuid);
        }
    }

    /** The smallest device a spare may be: data offset + the member size the superblocks record. */
    long memberBytesNeeded() {
        return geo.dataOffset + template.sizeSectors * 512;
    }

    /**
     * The superblock fields a partial parity log would take on this array, placed as md places it; null, with
     * {@code why[0]} set, when it does not fit.
     */
    Md1Superblock partialParityLogPlacementLocked(String[] why) {
        Md1Superblock placed = template.copy();
        placed.featureMap |= Md1Superblock.FEATURE_PPL;
        PartialParityLog.place(placed);
        why[0] = PartialParityLog.whyNot(placed);
        return why[0] == null ? placed : null;
    }

    /** Whether the array keeps a partial parity log (the members say so once no resync is pending). */
    boolean hasPartialParityLogLocked() {
        return partialParityLog;
    }

    /** Records on every member that a partial parity log is kept from now on (or no longer). */
    void switchPartialParityLogLocked(boolean on, Md1Superblock placement) {
        if (bitmap != null) {
            throw new IllegalStateException(name + ": an array with a write-intent bitmap cannot keep a partial parity log");
        }
        if (on) {
            template.pplOffset = placement.pplOffset;
            template.pplSize = placement.pplSize;
            template.featureMap |= Md1Superblock.FEATURE_PPL;
        } else {
            template.featureMap &= ~Md1Superblock.FEATURE_ANY_PPL;
        }
        partialParityLog = on;
        writeLocked(false);
    }

    /**
     * Records a reshape to {@code raidDevices} members of {@code newChunkSectors} chunks at position 0 on every
     * member: md's reshape fields, the reshape-active and new-offset feature bits, and the targets' new roles. The
     * template keeps the old member count and chunk (this geometry's); the superblocks say the new count and
     * new_chunk, as md's do.
     */
    void beginReshapeLocked(int raidDevices, int newChunkSectors, long newOffsetDelta, List<MemberSet.Member> targets) {
        template.featureMap |= Md1Superblock.FEATURE_RESHAPE_ACTIVE | Md1Superblock.FEATURE_NEW_OFFSET;
        template.deltaDisks = raidDevices - geo.members;
        template.newLevel = template.level;
        template.newLayout = template.layout;
        template.newChunkSectors = newChunkSectors;
        template.newOffset = (int) newOffsetDelta;
        template.reshapePosition = 0;
        for (int i = 0; i < targets.size(); i++) {
            template.devRoles[targets.get(i).devNumber] = geo.members + i;
        }
        writeLocked(false);
    }

    /** A copy of the array-wide superblock fields. */
    Md1Superblock templateCopyLocked() {
        return template.copy();
    }

    /** Records that the reshape has moved {@code arraySectors} of the array (md's reshape_position). */
    void reshapePositionLocked(long arraySectors) {
        template.reshapePosition = arraySectors;
        writeLocked(false);
    }

    /** The template of the finished reshape's geometry: the new member count, chunk and data offset, no reshape. */
    Md1Superblock finishReshapeLocked() {
        Md1Superblock t = template.copy();
        t.raidDisks = geo.members + t.deltaDisks;
        t.chunkSectors = t.newChunkSectors;
        t.dataOffsetSectors += t.newOffset;
        t.featureMap &= ~(Md1Superblock.FEATURE_RESHAPE_ACTIVE | Md1Superblock.FEATURE_NEW_OFFSET);
        t.deltaDisks = 0;
        t.newOffset = 0;
        t.reshapePosition = 0;
        return t;
    }

    /** A new dev_roles entry with the spare role; returns its device number. */
    int addSpareDeviceLocked() {
        int devNumber = template.devRoles.length;
        template.devRoles = Arrays.copyOf(template.devRoles, devNumber + 1);
        template.devRoles[devNumber] = Md1Superblock.ROLE_SPARE;
        return devNumber;
    }

    /** Device {@code devNumber} takes {@code role} and is rebuilt from row 0. */
    void rebuildStartsLocked(int devNumber, int role) {
        recoveryCheckpointRows = 0;
        template.devRoles[devNumber] = role;
    }

    /** Device {@code devNumber} holds {@code role} again, in sync (a forced return: {@link ForcedReturn}). */
    void memberBackLocked(int devNumber, int role) {
        template.devRoles[devNumber] = role;
    }

    /** Records that the rebuilding member holds {@code rows} durable rows (it was flushed). */
    void recoveryCheckpointLocked(long rows) {
        recoveryCheckpointRows = rows;
        writeLocked(false);
    }

    /**
     * The close of a usable array after its members were flushed: the rebuild checkpoint becomes
     * {@code recoveredRows}, the bitmap is cleared when nothing needs its bits, and the superblocks say clean.
     */
    void closeCleanLocked(long recoveredRows, boolean bitsNeeded) {
        recoveryCheckpointRows = recoveredRows;
        if (bitmap != null && !bitsNeeded) {
            bitmap.clearAll();
        }
        writeLocked(true);
    }

    /**
     * Bumps the event count and writes the superblock of every member that holds a role (active or
     * rebuilding) and of every spare; faulty and missing members' device numbers are recorded as faulty,
     * the rebuilding member's with its role and recovery checkpoint. {@code clean} says whether the
     * array is being closed with nothing in flight: resync_offset is then "done", or the resync
     * checkpoint if a resync is unfinished; while open it is 0 (md's "active"). A member whose superblock
     * write fails is faulty in turn; a spare whose write fails is dropped.
     */
    void writeLocked(boolean clean) {
        Md1Superblock t = template;
        t.events++;
        t.utime = Md1Superblock.mdTime(System.currentTimeMillis());
        t.resyncOffset = !clean ? 0 : sync.resyncPendingLocked() ? geo.sectors(sync.resyncDoneRows())
                : Md1Superblock.RESYNC_DONE;
        MemberSet.Member[] roles = members.roles;
        for (int d = 0; d < t.devRoles.length; d++) {
            int role = t.devRoles[d];
            if (role < geo.members) {
                MemberSet.Member holder = roles[role];
                if (holder.devNumber != d || !holder.holdsRole()) {
                    t.devRoles[d] = Md1Superblock.ROLE_FAULTY;
                }
            }
        }
        // A log names only the rows written since it started: while parity may be stale elsewhere (a resync
        // pending or running) the members must not say ppl, or a restart would replay the log and skip the resync.
        boolean logRecorded = partialParityLog && !sync.resyncPendingLocked();
        List<MemberSet.Member> newlyFailed = new ArrayList<>();
        long bitmapFailed = 0;
        if (bitmap != null) {
            // md updates the bitmap's events before the superblocks': a bitmap older than its superblock is stale.
            bitmap.setEvents(t.events);
            bitmapFailed = bitmap.write(bitmapWriter);
        }
        for (MemberSet.Member m : roles) {
            if (!m.holdsRole()) {
                continue;
            }
            if ((bitmapFailed & (1L << m.role)) != 0 || !writeSuperblock(t, m, logRecorded)) {
                newlyFailed.add(m);
            }
        }
        for (MemberSet.Member target : members.reshapeTargets) {
            if (!writeSuperblock(t, target, logRecorded)) {
                // the reshape writes this device next and stops on the same error; nothing is served from it yet
                LOG.error("{}: the reshape target {} lost its superblock", name, target.displayName);
            }
        }
        for (MemberSet.Member spare : members.spares) {
            if (!writeSuperblock(t, spare, logRecorded)) {
                members.spares.remove(spare);
                t.devRoles[spare.devNumber] = Md1Superblock.ROLE_FAULTY;
                members.retired.add(spare.device);
            }
        }
        members.superblockWritesFailedLocked(newlyFailed);
        if (!newlyFailed.isEmpty() && !members.failed) {
            writeLocked(clean);
        }
    }

    /** Writes one device's superblock; false (logged) if the write fails. */
    private boolean writeSuperblock(Md1Superblock t, MemberSet.Member m, boolean logRecorded) {
        Md1Superblock sb = t.copy();
        sb.devNumber = m.devNumber;
        sb.deviceUuid = m.deviceUuid;
        sb.dataSizeSectors = m.dataSizeSectors;
        boolean rebuilding = m.role >= 0 && m.state == Raid5Status.MemberState.REBUILDING;
        sb.featureMap = (rebuilding ? Md1Superblock.FEATURE_RECOVERY_OFFSET : 0)
                | (bitmap != null ? Md1Superblock.FEATURE_BITMAP : 0)
                | (logRecorded ? PartialParityLog.featureBits(t) : 0)
                | (t.featureMap & (Md1Superblock.FEATURE_RESHAPE_ACTIVE | Md1Superblock.FEATURE_NEW_OFFSET));
        if (t.isReshaping()) {
            sb.raidDisks = t.raidDisks + t.deltaDisks;   // md records the new count during a reshape
        }
        sb.bitmapOffset = bitmap != null ? WriteIntentBitmap.OFFSET_SECTORS : 0;
        sb.recoveryOffset = rebuilding ? geo.sectors(recoveryCheckpointRows) : 0;
        try {
            m.device.write(Md1Superblock.OFFSET_BYTES, sb.encode());
            m.device.flush();
            return true;
        } catch (IOException e) {
            LOG.error("{}: writing the superblock of {} ({}) failed: {}", name,
                    m.role >= 0 ? "member " + m.role : "spare", m.displayName, e.getMessage());
            return false;
        }
    }

    // ----------------------------------------------------------------------------------------- bitmap

    /**
     * Marks {@code row}'s region dirty before a row update changes the members (recorded on them first if it
     * was clean); a member whose bitmap write fails is marked faulty. Pair with {@link #endRowWrite}.
     */
    void beginRowWrite(long row) {
        long failedRoles = bitmap.startWrite(row, bitmapWriter);
        if (failedRoles != 0) {
            members.bitmapWriteFailed(failedRoles);
        }
    }

    void endRowWrite(long row) {
        bitmap.endWrite(row);
    }

    /**
     * {@link WriteIntentBitmap.Members}: runs under the bitmap's monitor, so it takes no array lock. Each member's
     * copy is one durable write (a disk's FUA; O_DSYNC on a file), not a write and a flush: a bit set must be on
     * the member before the row's writes, which needs no earlier write made durable (md writes the bitmap page
     * with FUA), and a cleared bit follows the daemon's flush of every member.
     */
    private long writeBitmapToMembers(ByteBuffer block) {
        bitmapWrites.increment();
        long offset = WriteIntentBitmap.memberOffset(template.superOffsetSectors);
        long failedRoles = 0;
        for (MemberSet.Member m : members.roles) {
            if (!m.holdsRole()) {
                continue;
            }
            try {
                m.device.writeDurable(offset, block.duplicate());
            } catch (IOException e) {
                LOG.error("{}: writing the write-intent bitmap of member {} ({}) failed: {}", name, m.role,
                        m.displayName, e.getMessage());
                failedRoles |= 1L << m.role;
            }
        }
        // Spares carry the bitmap too (mdadm ignores the bitmap feature of a member whose bitmap it cannot
        // read); a spare's failure shows when its superblock is written next.
        for (MemberSet.Member spare : members.spares) {
            try {
                spare.device.writeDurable(offset, block.duplicate());
            } catch (IOException e) {
                LOG.warn("{}: writing the write-intent bitmap of spare {} failed: {}", name, spare.displayName,
                        e.getMessage());
            }
        }
        return failedRoles;
    }

    /** Starts the bitmap daemon, if there is a bitmap. */
    void startBitmapDaemon() {
        if (bitmap == null) {
            return;
        }
        bitmapDaemon = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "stripestack-" + name + "-bitmap");
            t.setDaemon(true);
            return t;
        });
        bitmapDaemon.scheduleWithFixedDelay(this::bitmapDaemonPass, WriteIntentBitmap.DAEMON_SLEEP_SECONDS,
                WriteIntentBitmap.DAEMON_SLEEP_SECONDS, TimeUnit.SECONDS);
    }

    /** Stops the bitmap daemon and waits for a running pass. */
    void stopBitmapDaemon() {
        if (bitmapDaemon == null) {
            return;
        }
        // No interrupt: an interrupted FileChannel operation closes the member's channel.
        bitmapDaemon.shutdown();
        boolean interrupted = false;
        while (true) {
            try {
                if (bitmapDaemon.awaitTermination(1, TimeUnit.MINUTES)) {
                    break;
                }
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Every daemon_sleep seconds: clears the bits of regions with no write in the last period, after a
     * flush made their data and parity durable on every member. Bits stay while the array is degraded or
     * a resync of the dirty regions is pending (they are what the resync needs), and when a member failed
     * by the end of the flush (its writes may be lost: a re-add must rewrite those regions).
     */
    private void bitmapDaemonPass() {
        try {
            synchronized (members.lock) {
                if (members.closed || members.failed || members.failedRole >= 0 || sync.resyncPendingLocked()) {
                    return;
                }
            }
            long[] candidates = bitmap.idleCandidates();
            if (candidates == null) {
                return;
            }
            members.flush();
            synchronized (members.lock) {
                // a member that failed before or during the flush may not have its writes: its bits stay for its re-add
                if (members.closed || members.failed || members.failedRole >= 0) {
                    return;
                }
            }
            long failedRoles = bitmap.clearIdle(candidates, bitmapWriter);
            if (failedRoles != 0) {
                members.bitmapWriteFailed(failedRoles);
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("{}: write-intent bitmap update skipped: {}", name, e.toString());
        }
    }
}
