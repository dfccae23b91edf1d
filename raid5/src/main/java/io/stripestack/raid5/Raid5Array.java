package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MediumErrorException;
import java.io.IOException;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
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
    static final int SLOTS = 1024;
    /**
     * Shortest bound on the time a partial row write waits for an in-flight write that will add to the same
     * row (md's delayed stripes). The bound in use is {@value #HOLD_ROW_UPDATES} recent row updates, between
     * this and {@link #MAX_HOLD_NANOS}: the write that completes the row is issued when one of the stream's
     * earlier requests completes, so on slow members it comes later.
     */
    static final long HOLD_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    static final long MAX_HOLD_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    private static final int HOLD_ROW_UPDATES = 4;
    private static final long HOLD_RECHECK_NANOS = TimeUnit.MICROSECONDS.toNanos(500);
    /**
     * Calling threads whose writes in progress a slot owner can see at once; a thread beyond them is
     * simply not waited for (a missed hold, never a wrong result).
     */
    private static final int TRACKED_WRITERS = 64;
    /** Rows of one caller's write queued before it waits for them (see write). */
    static final int WRITE_WINDOW_ROWS = 16;
    private static final int BLOCK = StripeCache.BLOCK;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();

    private final String name;
    private final StripeGeometry geo;
    private final int blockSize;
    private final Geometry ioHints;
    private final MemberSet members;
    private final Superblocks superblocks;
    private final SyncEngine sync;
    private final Xor xor = Xor.best();
    private final MemberIoExecutor io;
    private final StripeCache cache;
    private final Slot[] slots = new Slot[SLOTS];
    private final ThreadLocal<Context> contexts;
    /**
     * The calling threads' contexts, published when created, so that a slot owner can ask which writes are
     * in progress ({@link #worthHolding}). Weak: a thread that ends frees its context and its entry, which
     * a later thread's context takes over (compare-and-set).
     */
    private final AtomicReferenceArray<WeakReference<Context>> writers = new AtomicReferenceArray<>(TRACKED_WRITERS);
    /** One past the highest entry of {@code writers} ever taken. */
    private final AtomicInteger writersInUse = new AtomicInteger();
    /** A fixed hold bound set by tests to make a race deterministic, or -1 for the adaptive one (HOLD_NANOS). */
    private volatile long fixedHoldNanos = -1;
    /**
     * Moving average (1/8 weight) of the time a row write update takes, for the hold bound. Updated by slot
     * owners without a lock: a lost update only skews an estimate.
     */
    private volatile long rowUpdateNanos;
    private final List<String> assemblyProblems;
    private final boolean cleanAtOpen;
    private volatile boolean checkParityOnReads;
    /** Zeros for discard; only ever read. */
    private final ByteBuffer zeroChunk;

    private final IoStats stats;
    private final LongAdder fullStripeWrites;
    private final LongAdder rmwWrites;
    private final LongAdder reconstructWrites;
    private final LongAdder memberPrereads;
    private final LongAdder degradedReads;
    private final LongAdder stripeCacheHits;
    private final LongAdder heldWrites;
    private final LongAdder parityMismatches;
    private final LongAdder readErrorsCorrected;

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
        for (int i = 0; i < SLOTS; i++) {
            slots[i] = new Slot();
        }
        this.contexts = ThreadLocal.withInitial(Context::new);
        this.stats = new IoStats(name);
        this.fullStripeWrites = stats.counter("full_stripe_writes");
        this.rmwWrites = stats.counter("rmw_writes");
        this.reconstructWrites = stats.counter("reconstruct_writes");
        this.memberPrereads = stats.counter("member_prereads");
        this.degradedReads = stats.counter("degraded_reads");
        this.stripeCacheHits = stats.counter("stripe_cache_hits");
        this.heldWrites = stats.counter("held_writes");
        this.parityMismatches = stats.counter("parity_mismatches");
        this.readErrorsCorrected = stats.counter("read_errors_corrected");
        this.zeroChunk = ByteBuffer.allocateDirect(geo.chunk);
        WriteIntentBitmap bitmap = loadedBitmap != null ? loadedBitmap
                : geo.members <= 64 ? WriteIntentBitmap.create(template, options.bitmapChunkBytes()) : null;
        this.members = new MemberSet(name, geo, roles, spareMembers, resumeRecoveryRows);
        this.superblocks = new Superblocks(name, geo, template, bitmap, members);
        this.sync = new SyncEngine(name, geo, members, superblocks, stats, this, template, loadedBitmap != null);
        members.connect(superblocks, sync);
        superblocks.connect(sync);
        int threads = options.ioThreads() > 0 ? options.ioThreads() : MemberIoExecutor.defaultThreads(geo.members);
        this.io = new MemberIoExecutor(name, threads);
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
            Context ctx = contexts.get();
            RowWrite[] pieces = ctx.pieces;
            long pos = offset;
            int srcIndex = src.position();
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
                for (RowWrite w : pieces) {
                    w.src = null;
                }
            }
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
        Context ctx = contexts.get();
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

    /** Sets the longest hold of a partial row write (see {@link #worthHolding}); for tests. */
    void setWriteHoldNanos(long nanos) {
        fixedHoldNanos = nanos;
    }

    private long holdBoundNanos() {
        long fixed = fixedHoldNanos;
        return fixed >= 0 ? fixed : Math.max(HOLD_NANOS, Math.min(MAX_HOLD_NANOS, HOLD_ROW_UPDATES * rowUpdateNanos));
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
        lockRowsShared(firstRow, lastRow);
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
            unlockRowsShared(firstRow, lastRow);
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
        Context ctx = contexts.get();
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
        Context ctx = contexts.get();
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

    private void lockRowsShared(long firstRow, long lastRow) {
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

    private void unlockRowsShared(long firstRow, long lastRow) {
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

    // ----------------------------------------------------------------------------------------- writes

    /** One caller's write, discard or sync step on one row. Reused per thread. */
    final class RowWrite {
        RowOp op = RowOp.WRITE;
        SyncEngine.SyncPass pass;
        long row;
        int inRow;
        int length;
        ByteBuffer src;
        int srcIndex;
        /**
         * Written under the slot monitor, read by the waiting caller without it ({@link #awaitAll}): done once
         * processed ({@code error} is written before it), lead once the slot is the caller's to process.
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
    }

    /** A write slot: see the class comment. */
    private static final class Slot {
        final StampedLock ioLock = new StampedLock();
        final ArrayDeque<RowWrite> pending = new ArrayDeque<>(16);
        boolean busy;
        /** The owner is waiting for more writes to its row (see worthHolding): arrivals wake it. */
        boolean holding;
    }

    /** Queues {@code w} on its row's slot and waits until it is done (processing it if it falls to this thread). */
    void submit(RowWrite w, Context ctx) throws IOException {
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
        synchronized (slot) {
            w.done = false;
            w.error = null;
            w.waiter = Thread.currentThread();
            slot.pending.addLast(w);
            if (slot.holding) {
                slot.notifyAll();
            }
            w.lead = !slot.busy;
            slot.busy = true;
        }
    }

    /**
     * Waits until the calling thread's queued writes {@code ws[0, count)} are all done, processing every one
     * handed to it (in queue order of the slots, ascending rows) as its slot's owner; then throws the first
     * error among them. Waits through interrupts (an owner may be using the callers' buffers) and re-asserts
     * the interrupt afterwards: an interrupted FileChannel operation would close the member's channel.
     */
    private void awaitAll(RowWrite[] ws, int count, Context ctx) throws IOException {
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
                LockSupport.park(this);
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
    private boolean ownSlot(Slot slot, Context ctx) {
        int count;
        boolean interrupted = false;
        synchronized (slot) {
            count = collectBatch(slot, ctx);
            if (ctx.batch[0].op == RowOp.WRITE) {
                long deadline = 0;
                // Once held, the hold lasts while any other caller's write is in progress (md keeps delayed
                // stripes until the array goes idle): when the stream ends, the last row goes out at once
                // instead of waiting for the bound. Arrivals wake the owner; the rest is checked every
                // HOLD_RECHECK_NANOS.
                while (!coversRow(ctx.batch, count)
                        && (deadline == 0 ? worthHolding(ctx.batch[0].row, ctx) : othersWriting(ctx))) {
                    long now = System.nanoTime();
                    if (deadline == 0) {
                        deadline = now + holdBoundNanos();
                        heldWrites.increment();
                    }
                    long left = Math.min(deadline - now, HOLD_RECHECK_NANOS);
                    if (left <= 0) {
                        break;
                    }
                    slot.holding = true;
                    try {
                        slot.wait(left / 1_000_000, (int) (left % 1_000_000));
                    } catch (InterruptedException e) {
                        interrupted = true;
                        break;
                    } finally {
                        slot.holding = false;
                    }
                    count = addToBatch(slot, ctx, count);
                }
            }
        }
        IOException error = null;
        try {
            long started = System.nanoTime();
            processRow(slot, ctx.batch, count, ctx);
            if (ctx.batch[0].op == RowOp.WRITE) {
                long average = rowUpdateNanos;
                rowUpdateNanos = average + ((System.nanoTime() - started - average) >> 3);
            }
        } catch (IOException e) {
            error = e;
        } catch (RuntimeException e) {
            error = new IOException(name + ": internal error writing row " + ctx.batch[0].row + ": " + e, e);
            LOG.error("{}: internal error writing row {}", name, ctx.batch[0].row, e);
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

    /** Takes the first pending write and the following ones of the same row that overlap none taken. */
    private static int collectBatch(Slot slot, Context ctx) {
        RowWrite first = slot.pending.pollFirst();
        ctx.batch[0] = first;
        if (first.op != RowOp.WRITE) {
            return 1;
        }
        return addToBatch(slot, ctx, 1);
    }

    /** Adds the pending writes that follow, while they are writes to the batch's row overlapping none taken. */
    private static int addToBatch(Slot slot, Context ctx, int taken) {
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

    /** True if the batch's writes (which never overlap) cover the whole row. */
    private boolean coversRow(RowWrite[] batch, int count) {
        long bytes = 0;
        for (int i = 0; i < count; i++) {
            bytes += batch[i].length;
        }
        return bytes == geo.rowBytes;
    }

    /**
     * Whether the slot owner, whose batch covers {@code row} only partly, should wait for more writes to
     * the row (md's delayed stripes), because one is likely to come soon and turn the row into a
     * full-row write without pre-reads:
     * <ul>
     *   <li>some other caller's write in progress covers part of the row and has not reached it yet
     *       (callers walk their rows in ascending order), e.g. the next request's head meeting this
     *       request's tail; or</li>
     *   <li>the owner's own request continues a sequential stream (it starts where another write, in
     *       progress or the last one of some caller, ends) and another caller's write of the stream is
     *       still in progress (it ends at most a row before this request starts): with a queue depth
     *       above one, the stream's next requests are issued as those complete.</li>
     * </ul>
     * A lone writer (queue depth one) is never held: nobody else could complete its row; neither is a
     * sequential writer whose only company is unrelated writes elsewhere on the array. Reads other
     * threads' fields without their locks: a stale answer only costs a hold or a pre-read.
     */
    private boolean worthHolding(long row, Context self) {
        long rowStart = row * geo.rowBytes;
        long rowEnd = rowStart + geo.rowBytes;
        long start = self.writeStart;
        boolean sequential = self.lastEnd == start;
        boolean streamInProgress = false;
        int tracked = writersInUse.get();
        for (int i = 0; i < tracked; i++) {
            WeakReference<Context> ref = writers.get(i);
            Context c = ref == null ? null : ref.get();
            if (c == null || c == self) {
                continue;
            }
            long end = c.writeEnd;
            if (end >= 0) {
                if (end > rowStart && c.writeStart < rowEnd && c.writeRow < row) {
                    return true;
                }
                streamInProgress |= end <= start && end >= start - geo.rowBytes;
            }
            sequential |= end == start || c.lastEnd == start;
        }
        return sequential && streamInProgress;
    }

    /** Whether any calling thread but {@code self} has a write in progress (read without locks, see worthHolding). */
    private boolean othersWriting(Context self) {
        int tracked = writersInUse.get();
        for (int i = 0; i < tracked; i++) {
            WeakReference<Context> ref = writers.get(i);
            Context c = ref == null ? null : ref.get();
            if (c != null && c != self && c.writeEnd >= 0) {
                return true;
            }
        }
        return false;
    }

    private void processRow(Slot slot, RowWrite[] batch, int count, Context ctx) throws IOException {
        RowWrite first = batch[0];
        members.checkUsable(first.row * geo.rowBytes + first.inRow, true);
        // Recovery writes only the new member (covered by its recovery offset); check writes nothing.
        boolean intent = superblocks.hasBitmap() && first.op != RowOp.CHECK && first.op != RowOp.RECOVER;
        if (intent) {
            superblocks.beginRowWrite(first.row);
        }
        try {
            processRowOp(slot, batch, count, ctx, first);
        } finally {
            if (intent) {
                superblocks.endRowWrite(first.row);
            }
        }
    }

    private void processRowOp(Slot slot, RowWrite[] batch, int count, Context ctx, RowWrite first) throws IOException {
        switch (first.op) {
            case WRITE -> {
                if (coversRow(batch, count) && MemberSet.missingIn(first.row, members.failedRole, members.recoveredRows) < 0) {
                    writeFullRow(slot, batch, count, ctx);
                } else {
                    updateRow(slot, batch, count, ctx);
                }
            }
            case ZERO -> updateRow(slot, ctx.zeroPieces(first), geo.dataDisks, ctx);
            default -> syncRow(slot, first, ctx);
        }
    }

    /**
     * A whole row from the batch's writes (one caller's, or several that together cover the row): parity
     * is XORed from slices of the callers' buffers, n parallel writes, no reads, no copies.
     */
    private void writeFullRow(Slot slot, RowWrite[] batch, int count, Context ctx) throws IOException {
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
            RowWrite w = batch[k];
            for (int pos = w.inRow, end = w.inRow + w.length; pos < end; ) {
                int index = pos >>> geo.chunkShift;
                int inChunk = pos & (geo.chunk - 1);
                int len = Math.min(end - pos, geo.chunk - inChunk);
                int m = geo.dataMember(row, index);
                writes.add(m, members.roles[m].device, memberOffset + inChunk, views[k].slice(pos - w.inRow, len), true);
                pos += len;
            }
            views[k] = null;
        }
        int parityMember = geo.parityMember(row);
        writes.add(parityMember, members.roles[parityMember].device, memberOffset, parity.clear(), true);
        runWrites(slot, writes, row);
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
    private void updateRow(Slot slot, RowWrite[] batch, int count, Context ctx) throws IOException {
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
                markWritten(batch[k], written, columns);
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
                readModifyWrite = planReads(e, ctx, missingIndex);
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
                copyIntoEntry(batch[k], e);
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
            runWrites(slot, writes, row);
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

    /**
     * One step of a sync pass on {@code w.row}, as the row's slot owner. Every chunk but the one being
     * rebuilt is read from the members (check, repair and resync re-read even cached blocks: they test
     * what the members hold). recover: the rebuilding member's chunk is the XOR of the others and is
     * written to it, then the checkpoint moves past the row. check/repair/resync: parity is recomputed
     * and compared page by page; repair and resync write it back when it differs.
     */
    private void syncRow(Slot slot, RowWrite w, Context ctx) throws IOException {
        long row = w.row;
        RowOp op = w.op;
        int target = -1;
        if (op == RowOp.RECOVER) {
            target = members.failedRole;
            if (!members.rebuildingOnto(w.pass.recoverDevice) || members.recoveredRows > row) {
                return;                          // the rebuild was aborted meanwhile; the pass sees it
            }
        } else if (members.failedRole >= 0) {
            throw new IOException(name + ": cannot " + op.label + " while degraded (member " + members.failedRole
                    + " is not active)");
        }
        int parityMember = geo.parityMember(row);
        int targetIndex = target < 0 ? -1 : target == parityMember ? geo.dataDisks : geo.dataIndexOf(row, target);
        StripeCache.Entry e = acquireEntry(row);
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
                andNotInto(need, e.valid[i]);
            }
            if (!preRead(row, e, ctx, parityMember)) {
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
                writes.add(target, w.pass.recoverDevice, memberOffset, rebuilt.slice(0, geo.chunk), true);
                runWrites(slot, writes, row);
                sync.completeRow(w.pass, row, 0);    // does nothing if the rebuild ended meanwhile
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
                        addRuns(writes, parityMember, memberOffset, stored, ctx.allBlocks, true);
                        runWrites(slot, writes, row);
                    }
                }
                sync.completeRow(w.pass, row, op == RowOp.RESYNC ? 0 : mismatchedPages * (StripeCache.PAGE / 512L));
            }
            keep = true;
        } finally {
            cache.release(e, keep);
        }
    }

    private StripeCache.Entry acquireEntry(long row) {
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

    private void markWritten(RowWrite w, long[][] written, long[] columns) {
        int pos = w.inRow;
        int end = w.inRow + w.length;
        while (pos < end) {
            int index = pos >>> geo.chunkShift;
            int inChunk = pos & (geo.chunk - 1);
            int len = Math.min(end - pos, geo.chunk - inChunk);
            Bits.setRange(written[index], inChunk / BLOCK, (inChunk + len) / BLOCK);
            Bits.setRange(columns, inChunk / BLOCK, (inChunk + len) / BLOCK);
            pos += len;
        }
    }

    private void copyIntoEntry(RowWrite w, StripeCache.Entry e) {
        int pos = w.inRow;
        int end = w.inRow + w.length;
        int si = w.srcIndex;
        while (pos < end) {
            int index = pos >>> geo.chunkShift;
            int inChunk = pos & (geo.chunk - 1);
            int len = Math.min(end - pos, geo.chunk - inChunk);
            e.chunk(index).put(inChunk, w.src, si, len);
            pos += len;
            si += len;
        }
    }

    /**
     * Decides which blocks must be read before the parity can be computed and puts them in
     * {@code ctx.need} (index {@code dataDisks} = parity). Returns true for read-modify-write.
     *
     * @param missingIndex data index of the missing member, -1 if parity is missing, -2 if none is
     */
    private boolean planReads(StripeCache.Entry e, Context ctx, int missingIndex) {
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
                rmw += Long.bitCount(wr & ~v);
                rmwUncached += Long.bitCount(wr);
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
                need[i][w] = (readModifyWrite ? wr : k & ~wr) & ~valid[i][w];
            }
            need[geo.dataDisks][w] = readModifyWrite ? k & ~valid[geo.dataDisks][w] : 0;
        }
        return readModifyWrite;
    }

    /** Reads every needed run into the entry, in parallel. Returns false if a member failed (replan). */
    private boolean preRead(long row, StripeCache.Entry e, Context ctx, int parityMember) throws IOException {
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

    private boolean recordPreReads(MemberIoExecutor.Batch reads, StripeCache.Entry e, Context ctx, long memberOffset,
                                   int pieces) {
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
    private void rebuildIntoEntry(StripeCache.Entry e, Context ctx, int missingIndex) {
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
    private void xorWrittenIntoParity(StripeCache.Entry e, Context ctx) {
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
    private void recomputeParity(StripeCache.Entry e, Context ctx) {
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

    private void addRuns(MemberIoExecutor.Batch batch, int member, long memberOffset, ByteBuffer chunkBuffer,
                         long[] bits, boolean write) {
        for (int b = Bits.nextSet(bits, 0, geo.blocksPerChunk); b < geo.blocksPerChunk; ) {
            int end = Bits.nextClear(bits, b, geo.blocksPerChunk);
            batch.add(member, members.roles[member].device, memberOffset + (long) b * BLOCK,
                    chunkBuffer.slice(b * BLOCK, (end - b) * BLOCK), write);
            b = Bits.nextSet(bits, end, geo.blocksPerChunk);
        }
    }

    /** Runs member writes while holding the row's slot exclusively; failing members are marked faulty. */
    private void runWrites(Slot slot, MemberIoExecutor.Batch batch, long row) throws IOException {
        long stamp = slot.ioLock.writeLock();
        try {
            batch.run();
        } finally {
            slot.ioLock.unlockWrite(stamp);
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

    private static void andNotInto(long[] target, long[] bits) {
        for (int w = 0; w < target.length; w++) {
            target[w] &= ~bits[w];
        }
    }


    // ----------------------------------------------------------------------------------------- per-thread

    /** Scratch state of one calling thread; used only by that thread (see the class comment). */
    final class Context {
        final RowWrite rowWrite = new RowWrite();
        /** One caller's write: the window of rows it queues at once (see write). */
        final RowWrite[] pieces = new RowWrite[WRITE_WINDOW_ROWS];
        /** {@link #submit}'s one-entry array for awaitAll. */
        final RowWrite[] single = new RowWrite[1];
        RowWrite[] batch = new RowWrite[8];
        final long[][] written;
        final long[] columns;
        final long[] rebuild;
        final long[][] need;
        final ByteBuffer[] srcs = new ByteBuffer[geo.members + 1];
        final int[] idx = new int[geo.members + 1];
        /** Native-order views of a full-row batch's source buffers, one per write. */
        private ByteBuffer[] pieceViews = new ByteBuffer[8];
        /** Per data chunk, the batch index of the write covering the current parity column range. */
        final int[] cursor = new int[geo.dataDisks];
        /**
         * This thread's write in progress, for other threads' {@link #worthHolding}: its byte
         * range (writeEnd -1 when none) and the row it is at (-1 before its first row). Written only by
         * this thread.
         */
        volatile long writeStart = -1;
        volatile long writeEnd = -1;
        volatile long writeRow = -1;
        /** End of this thread's last write; read by {@link #worthHolding} to recognise sequential streams. */
        volatile long lastEnd = -1;
        int[] pieceChunk = new int[16];
        /** Every block of a chunk set. */
        final long[] allBlocks;
        /** The per-chunk writes of zeros one discard of a row turns into. */
        final RowWrite[] zeroWrites = new RowWrite[geo.dataDisks];
        private ByteBuffer parity;
        private ByteBuffer scratch;
        private ByteBuffer accumulator;

        Context() {
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
            WeakReference<Context> ref = new WeakReference<>(this);
            for (int i = 0; i < TRACKED_WRITERS; i++) {
                WeakReference<Context> old = writers.get(i);
                if ((old == null || old.get() == null) && writers.compareAndSet(i, old, ref)) {
                    writersInUse.accumulateAndGet(i + 1, Math::max);
                    break;
                }
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
            for (int i = 0; i < geo.dataDisks; i++) {
                int chunkStart = i * geo.chunk;
                int from = Math.max(pos, chunkStart);
                int to = Math.min(end, chunkStart + geo.chunk);
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
            return ByteBuffer.allocateDirect(geo.chunk + StripeCache.PAGE).alignedSlice(StripeCache.PAGE)
                    .slice(0, geo.chunk).order(NATIVE);
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

        ByteBuffer accumulator() {
            if (accumulator == null) {
                accumulator = alignedChunk();
            }
            return accumulator.clear();
        }
    }

    /** The calling thread's context. */
    Context context() {
        return contexts.get();
    }

    @Override
    public String toString() {
        return "Raid5Array[" + name + ", " + geo.members + " members, " + geo.chunk / 1024 + "K chunk, " + geo.layout.mdName() + "]";
    }
}
