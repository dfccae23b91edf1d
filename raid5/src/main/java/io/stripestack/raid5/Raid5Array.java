package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MediumErrorException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.StampedLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Linux-md-compatible RAID-5 array over {@code n >= 3} member devices: md v1.2 superblocks, md's four
 * layouts, byte-for-byte md's data placement, so the member files can be assembled by the kernel.
 * Open one with {@link #create} or {@link Raid5Assembler#assemble}.
 *
 * <h2>Paths</h2>
 * <ul>
 *   <li><b>Healthy read</b>: split at chunk boundaries; each piece is read from its member straight into
 *       a slice of the caller's buffer (no copy, no cache, parity never read); pieces on different
 *       members run in parallel on the {@link MemberIoExecutor} threads.</li>
 *   <li><b>Full-row write</b> (one caller's, or several callers' writes that together cover the row):
 *       parity is XORed from slices of the callers' buffers into a per-thread parity buffer; all n
 *       members are written in parallel; no member is read, nothing is copied.</li>
 *   <li><b>Partial write</b>: goes through the row's {@link StripeCache} entry: the blocks still needed
 *       are pre-read (read-modify-write or reconstruct-write, whichever reads fewer blocks not already
 *       cached), the new data is copied into the entry, parity is recomputed over the touched columns,
 *       and the touched data and parity ranges are written in parallel.</li>
 *   <li><b>Degraded</b>: a member that fails an I/O (or {@link #failMember}) is marked faulty in the
 *       superblocks of the others; its chunks are rebuilt from the others on read and implied by parity
 *       on write. A second failure stops all I/O with {@link MediumErrorException}.</li>
 * </ul>
 *
 * <h2>Concurrency</h2>
 * Any number of threads may call read/write/flush. Rows are hashed onto {@value #SLOTS} write slots.
 * <ul>
 *   <li>Each slot has a queue of pending row writes and at most one <em>owner</em> thread (the caller
 *       whose request reached the idle slot first, or the one the previous owner hands over to). A caller
 *       queues the rows of its request on their slots together, up to {@link #WRITE_WINDOW_ROWS} at a time,
 *       and then waits for them ({@code awaitAll}), parked ({@link LockSupport}) until an owner completes
 *       one of its rows or hands it a slot; it processes every slot handed to it before it parks again, so
 *       it may own several slots at once. The owner takes the queued writes for the same row that do not
 *       overlap each other (md-style batching: concurrent writes that together fill a row need no
 *       pre-reads), processes them as one row update, completes them, and hands the slot to the next
 *       waiter. An owner whose writes cover the row only partly may first wait on the slot's monitor
 *       (see {@code worthHolding}: bounded, and only while another caller's write is in progress) for a
 *       write that will add to the row; submitters wake it. An owner waits for no other slot, so no cycle
 *       of waits forms. The slot's queue and owner flag are guarded by the slot's monitor (a queued
 *       write's done and lead flags are volatile, read by its parked caller); the row's cache entry and
 *       the owner's per-thread buffers are used only by the owner.</li>
 *   <li>Each slot also has a {@link StampedLock}: row updates hold it exclusively only while writing
 *       members; reads hold it shared (for every row they touch, taken in ascending slot order, so no
 *       lock cycle can form). A read therefore sees every block either before or after a racing write,
 *       never half of one, and a degraded read rebuilds from a consistent row.</li>
 *   <li>Member health, spares and failures: {@link MemberSet}; superblocks and the write-intent bitmap:
 *       {@link Superblocks}; resync, recover, check and repair: {@link SyncEngine}. Each says which lock
 *       guards what; one state lock (MemberSet's) guards all three.</li>
 * </ul>
 *
 * <h2>Lifecycle (md's sync_action)</h2>
 * <ul>
 *   <li><b>Spares and rebuild</b>: {@link #addSpare} writes a spare superblock (role 0xffff). When a
 *       member fails (or is failed, or is missing at assembly) and a spare exists, the spare takes the
 *       role and is rebuilt online: rows below the checkpoint are read and written on it normally,
 *       rows above it are treated as degraded (reads reconstruct, writes leave it out). A later assemble
 *       resumes the rebuild from the checkpoint in the new member's superblock.</li>
 *   <li><b>Scrub</b>: {@code check} reads every row and counts mismatching 4 KiB parity pages
 *       ({@link #mismatchCount()} in 512-byte sectors, 8 per page, as md); {@code repair} rewrites
 *       them; {@code resync} recomputes parity (needed after an unclean shutdown, started by itself).</li>
 *   <li><b>Speed</b>: bounded like md: below {@link #syncSpeedMin()} KiB/s the sync never waits; above
 *       it, it yields while foreground I/O is arriving and never exceeds {@link #syncSpeedMax()}.</li>
 * </ul>
 */
public final class Raid5Array implements BlockDevice {
    private static final Logger LOG = LoggerFactory.getLogger(Raid5Array.class);
    /** Memory the automatic stripe cache size aims at; see {@link #defaultStripeCacheRows}. */
    public static final long DEFAULT_STRIPE_CACHE_BYTES = 32L << 20;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();

    private final String name;
    private final StripeGeometry geo;
    private final int blockSize;
    private final Geometry ioHints;
    private final MemberSet members;
    private final Superblocks superblocks;
    private final SyncEngine sync;
    private final RowUpdater updater;
    private final WriteScheduler writes;
    private final Xor xor = Xor.best();
    private final MemberIoExecutor io;
    private final StripeCache cache;
    private final List<String> assemblyProblems;
    private final boolean cleanAtOpen;
    private volatile boolean checkParityOnReads;
    /** Zeros for discard; only ever read. */
    private final ByteBuffer zeroChunk;

    private final IoStats stats;
    private final LongAdder degradedReads;
    private final LongAdder parityMismatches;
    private final LongAdder readErrorsCorrected;

    /** The layer counters of {@link #stats()}, in the order they are listed. */
    private static final List<String> LAYER_COUNTERS = List.of("full_stripe_writes", "rmw_writes",
            "reconstruct_writes", "member_prereads", "degraded_reads", "stripe_cache_hits", "held_writes",
            "parity_mismatches", "read_errors_corrected");

    /** md's default sync_speed_min / sync_speed_max, KiB/s. */
    public static final int DEFAULT_SYNC_SPEED_MIN = 1000;
    public static final int DEFAULT_SYNC_SPEED_MAX = 200000;

    /**
     * Opens an array whose superblock facts were checked by the caller ({@link #create} or
     * {@link Raid5Assembler}), marks it active in the superblocks (events + 1) and starts its threads.
     */
    Raid5Array(Md1Superblock template, MemberSet.Member[] roles, List<MemberSet.Member> spareMembers,
               long resumeRecoveryRows, WriteIntentBitmap loadedBitmap, Raid5Options options,
               List<String> assemblyProblems) throws IOException {
        this.geo = StripeGeometry.of(template);
        this.name = template.setName;
        this.assemblyProblems = List.copyOf(assemblyProblems);
        this.cleanAtOpen = template.isClean();
        int block = 512;
        for (MemberSet.Member m : roles) {
            if (m.device != null) {
                block = Math.max(block, m.device.logicalBlockSize());
            }
        }
        this.blockSize = block;
        this.ioHints = geo.ioHints();
        this.checkParityOnReads = options.checkParityOnReads();
        this.cache = new StripeCache(geo.members, geo.chunk, options.stripeCacheRows() > 0 ? options.stripeCacheRows()
                : defaultStripeCacheRows(geo.members, geo.chunk));
        this.stats = new IoStats(name);
        // Registration order is the order status and the Prometheus text list the counters in.
        for (String counter : LAYER_COUNTERS) {
            stats.counter(counter);
        }
        this.degradedReads = stats.counter("degraded_reads");
        this.parityMismatches = stats.counter("parity_mismatches");
        this.readErrorsCorrected = stats.counter("read_errors_corrected");
        this.zeroChunk = ByteBuffer.allocateDirect(geo.chunk);
        WriteIntentBitmap bitmap = loadedBitmap != null ? loadedBitmap
                : geo.members <= 64 ? WriteIntentBitmap.create(template, options.bitmapChunkBytes()) : null;
        this.members = new MemberSet(name, geo, roles, spareMembers, resumeRecoveryRows);
        this.superblocks = new Superblocks(name, geo, template, bitmap, members);
        int threads = options.ioThreads() > 0 ? options.ioThreads() : MemberIoExecutor.defaultThreads(geo.members);
        this.io = new MemberIoExecutor(name, threads);
        this.updater = new RowUpdater(geo, members, superblocks, cache, io, xor, stats);
        this.writes = new WriteScheduler(name, geo, updater, zeroChunk, stats.counter("held_writes"));
        this.sync = new SyncEngine(name, geo, members, superblocks, writes, updater, io, xor, stats, template,
                loadedBitmap != null);
        members.connect(superblocks, sync);
        superblocks.connect(sync);
        superblocks.startBitmapDaemon();
        synchronized (members.lock) {
            superblocks.writeLocked(false);
        }
        if (members.failed) {
            io.close();
            members.closeRoleDevices();
            throw new MediumErrorException(name + ": could not update the superblocks of the members; see the log", 0, true);
        }
        LOG.info("{}: raid5 {} members, {} KiB chunk, {}, {} bytes, {}; xor {}; stripe cache {} rows; {} I/O threads",
                name, geo.members, geo.chunk / 1024, geo.layout.mdName(), geo.size,
                members.failedRole < 0 ? "clean" : "DEGRADED", xor.name(), cache.capacity(), threads);
        sync.start();
    }

    // ----------------------------------------------------------------------------------------- create

    /**
     * Creates a new array on {@code devices} (in role order): writes an md v1.2 superblock on each and,
     * unless {@code membersAreZeroed}, computes parity for every row from the data already there.
     * Members that read as zeros everywhere (fresh sparse files) are consistent as they are: the XOR
     * of zeros is zero, so no initial parity pass is needed.
     *
     * @throws IllegalArgumentException naming the member that is too small or the count that is wrong
     */
    public static Raid5Array create(List<? extends BlockDevice> devices, Raid5Config config, Raid5Options options,
                                    boolean membersAreZeroed) throws IOException {
        int n = devices.size();
        if (n < 3) {
            throw new IllegalArgumentException("RAID-5 needs at least 3 members, got " + n);
        }
        long dataOffsetBytes = config.dataOffsetSectors() * 512;
        long usable = Long.MAX_VALUE;
        for (BlockDevice d : devices) {
            if (config.chunkBytes() % d.logicalBlockSize() != 0) {
                throw new IllegalArgumentException(d.name() + ": block size " + d.logicalBlockSize()
                        + " does not divide the chunk of " + config.chunkBytes() + " bytes");
            }
            long room = d.size() - dataOffsetBytes;
            if (room < config.chunkBytes()) {
                throw new IllegalArgumentException(d.name() + ": " + d.size() + " bytes is too small for a member; it needs "
                        + (dataOffsetBytes + config.chunkBytes()) + " bytes at least (data offset + one chunk)");
            }
            usable = Math.min(usable, room / config.chunkBytes() * config.chunkBytes());
        }
        java.security.SecureRandom random = new java.security.SecureRandom();
        Md1Superblock t = new Md1Superblock();
        random.nextBytes(t.setUuid);
        t.setName = config.name();
        t.ctime = Md1Superblock.mdTime(System.currentTimeMillis());
        t.layout = config.layout().mdNumber();
        t.chunkSectors = config.chunkBytes() / 512;
        t.raidDisks = n;
        t.sizeSectors = usable / 512;
        t.dataOffsetSectors = config.dataOffsetSectors();
        t.devRoles = new int[n];
        MemberSet.Member[] roles = new MemberSet.Member[n];
        ByteBuffer zeros = ByteBuffer.allocate(Md1Superblock.OFFSET_BYTES);
        for (int i = 0; i < n; i++) {
            BlockDevice d = devices.get(i);
            t.devRoles[i] = i;
            byte[] uuid = new byte[16];
            random.nextBytes(uuid);
            // Clear the metadata 1.1 location (sector 0) so no older superblock there confuses mdadm.
            d.write(0, zeros.clear());
            roles[i] = new MemberSet.Member(i, d, d.name(), i, uuid, d.size() / 512 - t.dataOffsetSectors,
                    Raid5Status.MemberState.ACTIVE);
        }
        Raid5Array array = new Raid5Array(t, roles, List.of(), 0, null, options, List.of());
        if (!membersAreZeroed) {
            array.resync();
        }
        LOG.info("{}: created raid5 set {} ({} members, {} bytes)", array.name, Md1Superblock.formatUuid(t.setUuid),
                n, array.size());
        return array;
    }

    // ----------------------------------------------------------------------------------------- BlockDevice

    @Override
    public String name() {
        return name;
    }

    @Override
    public long size() {
        return geo.size;
    }

    @Override
    public int logicalBlockSize() {
        return blockSize;
    }

    @Override
    public Geometry geometry() {
        return ioHints;
    }

    @Override
    public IoStats stats() {
        return stats;
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        int length = dst.remaining();
        BlockDevice.checkRange(this, offset, length);
        checkOpen();
        long start = stats.startIo();
        try {
            if (length > 0) {
                readRange(offset, dst, dst.position(), length);
            }
            dst.position(dst.limit());
        } catch (IOException | RuntimeException e) {
            stats.endFailed(start);
            throw e;
        }
        stats.endRead(start, length);
    }

    @Override
    public void write(long offset, ByteBuffer src) throws IOException {
        int length = src.remaining();
        BlockDevice.checkRange(this, offset, length);
        checkOpen();
        long start = stats.startIo();
        try {
            writes.write(offset, src, src.position(), length);
            src.position(src.limit());
        } catch (IOException | RuntimeException e) {
            stats.endFailed(start);
            throw e;
        }
        stats.endWrite(start, length);
    }

    /** Discards always zero: a discarded range reads back as zeros, with parity consistent. */
    @Override
    public boolean supportsDiscard() {
        return true;
    }

    @Override
    public boolean discardZeroes() {
        return true;
    }

    /**
     * Zeros the range through the write path, one row update per row (whole rows need no member reads:
     * every data chunk is zero, so is parity; partial rows are ordinary writes of zeros). The members'
     * space is not released: their contents must stay what parity says.
     */
    @Override
    public void discard(long offset, long length) throws IOException {
        BlockDevice.checkRange(this, offset, length);
        checkOpen();
        writes.discard(offset, length);
        stats.countDiscard(length);
    }

    /** Flushes every active member (data and parity); a member whose flush fails is marked faulty. */
    @Override
    public void flush() throws IOException {
        checkOpen();
        stats.countFlush();
        members.flush();
    }

    /**
     * Flushes, marks the array clean in the superblocks (if it is usable) and closes the members. Call it
     * after the last I/O has returned; I/O after close fails with {@link java.nio.channels.ClosedChannelException}.
     */
    @Override
    public void close() throws IOException {
        if (members.closed) {
            return;
        }
        members.closed = true;
        sync.stop();
        superblocks.stopBitmapDaemon();
        IOException first = null;
        try {
            if (!members.failed) {
                long rowsBeforeFlush = members.recoveredRows;
                members.flush();
                synchronized (members.lock) {
                    superblocks.closeCleanLocked(rowsBeforeFlush,
                            members.failedRole >= 0 || sync.resyncPendingLocked());
                }
            }
        } catch (IOException e) {
            first = e;
        }
        io.close();
        for (BlockDevice d : members.allDevices()) {
            try {
                d.close();
            } catch (IOException e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    private void checkOpen() throws IOException {
        members.checkOpen();
    }

    // ----------------------------------------------------------------------------------------- controls

    /**
     * The automatic stripe cache size: as many whole rows (members x chunk bytes each) as fit in
     * {@link #DEFAULT_STRIPE_CACHE_BYTES}, at least 4 and at most 256 (md's default of 256 stripes).
     */
    public static int defaultStripeCacheRows(int members, int chunk) {
        long rows = DEFAULT_STRIPE_CACHE_BYTES / ((long) members * chunk);
        return (int) Math.max(4, Math.min(256, rows));
    }

    /** Sets the longest hold of a partial row write (see {@link WriteScheduler}); for tests. */
    void setWriteHoldNanos(long nanos) {
        writes.setHoldNanos(nanos);
    }

    public int stripeCacheSize() {
        return cache.capacity();
    }

    /** Rows the stripe cache holds memory for right now (md's stripe_cache_active). */
    public int stripeCacheActive() {
        return cache.allocated();
    }

    /** Sets the stripe cache capacity in rows (1..32768); shrinking frees unpinned rows at once. */
    public void setStripeCacheSize(int rows) {
        cache.setCapacity(rows);
        LOG.info("{}: stripe cache size set to {} rows ({} KiB each)", name, rows, (long) geo.chunk * geo.members / 1024);
    }

    public boolean checkParityOnReads() {
        return checkParityOnReads;
    }

    public void setCheckParityOnReads(boolean enabled) {
        checkParityOnReads = enabled;
        LOG.info("{}: check_parity_on_reads {}", name, enabled ? "on" : "off");
    }

    /** Marks member {@code role} faulty as if it had returned an I/O error (operator action, like mdadm --fail). */
    public void failMember(int role) throws IOException {
        members.failMember(role);
    }

    /**
     * Adds {@code device} as a hot spare (like {@code mdadm --add}): its first 8 KiB are overwritten with
     * a cleared metadata-1.1 area and an md superblock with the spare role (0xffff). If the array is
     * degraded, the rebuild onto it starts at once; otherwise it waits for a member to fail. The array
     * owns the device from now on (closes it on {@link #close()}).
     *
     * @throws IllegalArgumentException naming the device when it is too small or its block size does not fit
     */
    public void addSpare(BlockDevice device) throws IOException {
        members.addSpare(device, blockSize);
    }

    /**
     * Detaches the faulty member of {@code role} (like {@code mdadm --remove}): its device is closed and
     * the role is missing until a spare is added. Only a faulty member can be removed.
     *
     * @throws IllegalStateException when the member is active or being rebuilt (fail it first)
     */
    public void removeMember(int role) throws IOException {
        members.removeMember(role);
    }

    public Raid5Status status() {
        List<Raid5Status.Member> roles;
        List<String> spareNames;
        long events;
        synchronized (members.lock) {
            events = superblocks.events();
            roles = members.describeRolesLocked();
            spareNames = members.spareNamesLocked();
        }
        return new Raid5Status(name, members.health(), roles, events, geo.size, geo.chunk, geo.layout,
                spareNames, syncProgress(), sync.mismatchCount());
    }

    /** Problems assemble found and worked around (stale, foreign or missing members); empty when none. */
    public List<String> assemblyProblems() {
        return assemblyProblems;
    }

    /** Whether the superblocks said the array was shut down cleanly when it was opened. */
    public boolean wasCleanAtOpen() {
        return cleanAtOpen;
    }

    public int chunkBytes() {
        return geo.chunk;
    }

    /** The smallest device that can be a member or spare: data offset + used member size, in bytes. */
    public long memberBytes() {
        return geo.memberBytes();
    }

    public int memberCount() {
        return geo.members;
    }

    public Raid5Layout layout() {
        return geo.layout;
    }

    /** The set UUID as mdadm prints it. */
    public String uuid() {
        return superblocks.uuid();
    }

    /**
     * Recomputes the parity of every row from its data (md's resync) and returns when done; other I/O may
     * run meanwhile. Used by {@link #create} on members that were not zero; after an unclean shutdown the
     * resync starts by itself at open.
     *
     * @throws IOException when the resync cannot complete (degraded, failed or closed array)
     */
    public void resync() throws IOException {
        sync.resync();
    }

    // ----------------------------------------------------------------------------------------- sync

    /** md's sync_action: what the sync thread is doing ("idle", "frozen", "resync", "recover", "check", "repair"). */
    public String syncAction() {
        return sync.action();
    }

    /**
     * Writes md's sync_action. {@code "check"}: read every row and count parity mismatches;
     * {@code "repair"}: the same and rewrite mismatching parity; {@code "resync"}: recompute all parity;
     * {@code "recover"}: start the rebuild onto a spare now (it also starts by itself); {@code "idle"}:
     * stop a running check or repair (a needed resync or recovery continues, from its checkpoint, as in
     * md); {@code "frozen"}: stop every sync action until {@code "idle"} or another action is written.
     *
     * @throws IllegalArgumentException for another word
     * @throws IllegalStateException    when the action is not possible now, saying why
     */
    public void setSyncAction(String action) {
        sync.setAction(action);
    }

    /** Progress of the running sync action; see {@link SyncProgress}. */
    public SyncProgress syncProgress() {
        return sync.progress();
    }

    /** md's mismatch_cnt: 512-byte sectors found inconsistent by the last check or repair (8 per 4 KiB page). */
    public long mismatchCount() {
        return sync.mismatchCount();
    }

    /** md's sync_speed_min in KiB/s: the sync runs at least this fast even with foreground I/O. */
    public int syncSpeedMin() {
        return sync.speedMin();
    }

    public void setSyncSpeedMin(int kibPerSecond) {
        sync.setSpeedMin(kibPerSecond);
    }

    /** md's sync_speed_max in KiB/s: the sync never runs faster. */
    public int syncSpeedMax() {
        return sync.speedMax();
    }

    public void setSyncSpeedMax(int kibPerSecond) {
        sync.setSpeedMax(kibPerSecond);
    }

    /**
     * Waits until no sync action runs or is pending (for tests and the CLI's "wait").
     *
     * @return false if the time ran out first
     */
    public boolean awaitSyncIdle(long timeout, TimeUnit unit) throws InterruptedException {
        return sync.awaitIdle(timeout, unit);
    }

    // ----------------------------------------------------------------------------------------- reads

    private void readRange(long offset, ByteBuffer dst, int dstIndex, int length) throws IOException {
        long firstRow = offset / geo.rowBytes;
        long lastRow = (offset + length - 1) / geo.rowBytes;
        writes.lockRowsShared(firstRow, lastRow);
        try {
            members.checkUsable(offset, false);
            int failedNow = members.failedRole;
            long recovered = members.recoveredRows;
            MemberIoExecutor.Batch batch = io.batch();
            boolean degraded = false;
            long pos = offset;
            int di = dstIndex;
            int left = length;
            while (left > 0) {
                long chunkNo = pos >>> geo.chunkShift;
                int inChunk = (int) (pos & (geo.chunk - 1));
                int len = Math.min(left, geo.chunk - inChunk);
                long row = chunkNo / geo.dataDisks;
                int member = geo.dataMember(row, (int) (chunkNo - row * geo.dataDisks));
                if (member != MemberSet.missingIn(row, failedNow, recovered)) {
                    batch.add(member, members.roles[member].device, geo.memberOffset(row) + inChunk, dst.slice(di, len), false);
                } else {
                    degraded = true;
                }
                pos += len;
                di += len;
                left -= len;
            }
            batch.run();
            try {
                for (int i = 0; i < batch.size(); i++) {
                    if (batch.error(i) != null) {
                        repairFailedRead(batch.member(i), batch.device(i), batch.offset(i), batch.buffer(i),
                                batch.error(i), failedNow, recovered);
                    }
                }
            } finally {
                batch.clear();
            }
            if (degraded) {
                rebuildMissingPieces(offset, dst, dstIndex, length, failedNow, recovered);
            }
            if (checkParityOnReads && members.failedRole < 0) {
                verifyRows(offset, length);
            }
        } finally {
            writes.unlockRowsShared(firstRow, lastRow);
        }
    }

    /**
     * A member read failed: like md, rebuild the piece from the other members into the caller's buffer
     * and write it back to the member (a disk remaps a bad sector on write). The member is marked faulty
     * only if that write fails, or at once when the row has no redundancy left. The shared row lock
     * the caller holds keeps writers out, so the rewritten bytes are the row's current contents.
     */
    private void repairFailedRead(int member, BlockDevice device, long memberOffset, ByteBuffer piece,
                                  IOException error, int failedNow, long recovered) throws IOException {
        long inData = memberOffset - geo.dataOffset;
        long row = inData / geo.chunk;
        int inChunk = (int) (inData % geo.chunk);
        long arrayOffset = row * geo.rowBytes;
        if (MemberSet.missingIn(row, failedNow, recovered) >= 0 || members.failed) {
            members.memberFailed(member, device, error);
            members.checkUsable(arrayOffset, false);
            throw new MediumErrorException(name + ": member " + member + " failed reading row " + row
                    + " while another member was missing", arrayOffset, false, error);
        }
        ByteBuffer target = piece.duplicate().clear().order(NATIVE);
        int len = target.capacity();
        try {
            rebuild(row, member, inChunk, target, len, arrayOffset);
            degradedReads.increment();
        } catch (MediumErrorException e) {
            members.memberFailed(member, device, error);
            members.checkUsable(arrayOffset, false);
            throw e;
        }
        try {
            device.write(memberOffset, piece.duplicate().clear());
            readErrorsCorrected.increment();
            LOG.warn("{}: read error on member {} ({}) at byte {} corrected: {} bytes rebuilt from parity and "
                    + "rewritten ({})", name, member, members.roles[member].displayName, memberOffset, len, error.getMessage());
        } catch (IOException e) {
            members.memberFailed(member, device, e);
        }
    }

    /** Rebuilds, from the other members, every piece of the range that lies on the row's missing member. */
    private void rebuildMissingPieces(long offset, ByteBuffer dst, int dstIndex, int length, int failedNow,
                                      long recovered) throws IOException {
        long pos = offset;
        int di = dstIndex;
        int left = length;
        while (left > 0) {
            long chunkNo = pos >>> geo.chunkShift;
            int inChunk = (int) (pos & (geo.chunk - 1));
            int len = Math.min(left, geo.chunk - inChunk);
            long row = chunkNo / geo.dataDisks;
            int member = geo.dataMember(row, (int) (chunkNo - row * geo.dataDisks));
            if (member == MemberSet.missingIn(row, failedNow, recovered)) {
                members.checkUsable(pos, false);
                rebuild(row, member, inChunk, dst.slice(di, len).order(NATIVE), len, pos);
                degradedReads.increment();
            }
            pos += len;
            di += len;
            left -= len;
        }
    }

    /**
     * {@code target[0, len) = XOR of every other member's bytes at that row and in-chunk offset}.
     *
     * @throws MediumErrorException when another member fails too (it is marked faulty)
     */
    private void rebuild(long row, int missing, int inChunk, ByteBuffer target, int len, long arrayOffset)
            throws IOException {
        CallerContext ctx = writes.context();
        ByteBuffer scratch = ctx.scratch();
        long memberOffset = geo.memberOffset(row) + inChunk;
        boolean first = true;
        for (int m = 0; m < geo.members; m++) {
            if (m == missing) {
                continue;
            }
            BlockDevice device = members.roles[m].device;
            try {
                if (first) {
                    device.read(memberOffset, target.duplicate().position(0).limit(len));
                    first = false;
                } else {
                    device.read(memberOffset, scratch.clear().limit(len));
                    ctx.srcs[0] = scratch;
                    ctx.idx[0] = 0;
                    xor.xorInto(target, 0, ctx.srcs, ctx.idx, 1, len);
                }
            } catch (IOException e) {
                ctx.srcs[0] = null;
                members.memberFailed(m, device, e);
                members.checkUsable(arrayOffset, false);
                throw new MediumErrorException(name + ": cannot rebuild row " + row + " of member " + missing
                        + ": member " + m + " failed too (" + e.getMessage() + ")", arrayOffset, false, e);
            }
        }
        ctx.srcs[0] = null;
    }

    /** check_parity_on_reads: XOR of all members over the columns the read touched must be zero. */
    private void verifyRows(long offset, int length) throws IOException {
        CallerContext ctx = writes.context();
        long end = offset + length;
        for (long row = offset / geo.rowBytes; row * geo.rowBytes < end; row++) {
            long rowStart = row * geo.rowBytes;
            long from = Math.max(offset, rowStart) - rowStart;
            long to = Math.min(end, rowStart + geo.rowBytes) - rowStart;
            int lo;
            int hi;
            if (from / geo.chunk == (to - 1) / geo.chunk) {
                lo = (int) (from % geo.chunk);
                hi = (int) ((to - 1) % geo.chunk) + 1;
            } else {
                lo = 0;
                hi = geo.chunk;
            }
            int len = hi - lo;
            ByteBuffer acc = ctx.accumulator();
            ByteBuffer scratch = ctx.scratch();
            long memberOffset = geo.memberOffset(row) + lo;
            for (int m = 0; m < geo.members; m++) {
                ByteBuffer target = m == 0 ? acc.clear().limit(len) : scratch.clear().limit(len);
                BlockDevice device = members.roles[m].device;
                try {
                    device.read(memberOffset, target);
                } catch (IOException e) {
                    members.memberFailed(m, device, e);
                    return;
                }
                if (m > 0) {
                    ctx.srcs[0] = scratch;
                    ctx.idx[0] = 0;
                    xor.xorInto(acc, 0, ctx.srcs, ctx.idx, 1, len);
                }
            }
            for (int i = 0; i < len; i += 8) {
                if (acc.getLong(i) != 0) {
                    parityMismatches.increment();
                    LOG.warn("{}: parity mismatch in stripe row {} (array bytes {}..{}, member offset {}, {} bytes checked)",
                            name, row, rowStart, rowStart + geo.rowBytes, memberOffset, len);
                    break;
                }
            }
        }
    }

    @Override
    public String toString() {
        return "Raid5Array[" + name + ", " + geo.members + " members, " + geo.chunk / 1024 + "K chunk, " + geo.layout.mdName() + "]";
    }
}
