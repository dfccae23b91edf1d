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
import java.util.ArrayList;
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
 *   <li>Member health ({@link #failMember}, I/O errors), the spares, the sync state and the superblocks
 *       are guarded by {@code stateLock}; the failed role and the recovery checkpoint are published in
 *       volatile fields that I/O reads after taking its row locks.</li>
 *   <li>One background thread per array ({@code stripestack-<array>-sync}, started on first need) runs
 *       md's sync actions: resync, recover (rebuild onto a spare), check and repair, with a helper
 *       thread per pass taking alternate rows. A row is processed by that row's write-slot owner,
 *       exactly like a write, so sync and foreground writes never interleave within a row; rows
 *       complete in order (a pass's watermark, guarded by the pass's monitor). The recovery checkpoint
 *       {@code recoveredRows} moves from {@code r} to {@code r + 1} only while row {@code r}'s slot is
 *       owned: a writer or reader that holds a row therefore sees a stable answer to "is the new member
 *       valid here". Sync state (requested action, frozen, needsResync) is guarded by stateLock.</li>
 *   <li>The write-intent bitmap ({@link WriteIntentBitmap}) has its own monitor, taken by every row
 *       update for a moment and held while a newly dirty region is recorded on the members; code
 *       holding it never takes stateLock (lock order: stateLock, then bitmap). A scheduled daemon
 *       thread ({@code stripestack-<array>-bitmap}) clears idle regions every 5 seconds.</li>
 * </ul>
 *
 * <h2>Lifecycle (md's sync_action)</h2>
 * <ul>
 *   <li><b>Spares and rebuild</b>: {@link #addSpare} writes a spare superblock (role 0xffff). When a
 *       member fails (or is failed, or is missing at assembly) and a spare exists, the spare takes the
 *       role and is rebuilt online: rows below the checkpoint are read and written on it normally,
 *       rows above it are treated as degraded (reads reconstruct, writes leave it out). The checkpoint
 *       is saved in the new member's superblock ({@code recovery_offset}) about every second and at
 *       close, each time after flushing the new member, and a later assemble resumes from it; the new
 *       member is also flushed every 32 MiB of rebuilt data (write-back overlaps the rebuild) and once
 *       more before the superblock that makes it active.</li>
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
    private final Member[] roles;
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
    /** The write-intent bitmap, or null when the members have no room for one (see WriteIntentBitmap). */
    private final WriteIntentBitmap bitmap;
    private final WriteIntentBitmap.Members bitmapWriter = this::writeBitmapToMembers;
    private final java.util.concurrent.ScheduledExecutorService bitmapDaemon;
    /** The pending resync may skip regions the bitmap records as clean (set at an unclean open). */
    private volatile boolean resyncDirtyRegionsOnly;

    private final Object stateLock = new Object();
    /** Array-wide superblock fields and dev_roles; guarded by stateLock. */
    private final Md1Superblock template;
    /** Role of the one faulty, missing or rebuilding member, or -1. Written under stateLock. */
    private volatile int failedRole = -1;
    private volatile boolean failed;
    private volatile boolean closed;

    /**
     * Hot spares, in the order they were added; changed under stateLock. Copy-on-write so that the
     * bitmap writer, which must not take stateLock, can walk it.
     */
    private final List<Member> spares = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** Devices of replaced members, closed with the array; guarded by stateLock. */
    private final List<BlockDevice> retired = new ArrayList<>();
    /**
     * Rows of the rebuilding member ({@code failedRole}) that hold valid data; 0 when no rebuild runs.
     * Advanced only by the sync thread as owner of the row's slot (see the class comment).
     */
    private volatile long recoveredRows;
    /** The recovered rows known durable on the new member: what its superblock's recovery_offset says. */
    private volatile long recoveryCheckpointRows;

    // Sync state: guarded by stateLock unless volatile.
    private Thread syncThread;
    /** An operator's check/repair request, or null. */
    private SyncOp requestedScrub;
    private boolean frozen;
    /** Parity may be stale above resyncDoneRows (unclean shutdown or an explicit resync request). */
    private boolean needsResync;
    private volatile long resyncDoneRows;
    /** Set to make the running pass stop after its current row. */
    private volatile boolean stopSync;
    private volatile SyncOp runningSync;
    private volatile long syncRow;
    private volatile long syncSpeedKiBps;
    private volatile long mismatchSectors;
    private volatile int syncSpeedMin = DEFAULT_SYNC_SPEED_MIN;
    private volatile int syncSpeedMax = DEFAULT_SYNC_SPEED_MAX;
    /** Why the last pass stopped early, for {@link #resync()}. */
    private String syncStopReason;

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
     * One member slot (role), or a spare (role -1). {@code device} is null when the member is missing.
     * The device fields change only under stateLock, when a spare takes over a failed role; they are
     * volatile because I/O reads them without that lock.
     */
    static final class Member {
        final int role;
        volatile BlockDevice device;
        volatile String displayName;
        volatile int devNumber;
        volatile byte[] deviceUuid;
        volatile long dataSizeSectors;
        volatile Raid5Status.MemberState state;

        Member(int role, BlockDevice device, String displayName, int devNumber, byte[] deviceUuid,
               long dataSizeSectors, Raid5Status.MemberState state) {
            this.role = role;
            this.device = device;
            this.displayName = displayName;
            this.devNumber = devNumber;
            this.deviceUuid = deviceUuid;
            this.dataSizeSectors = dataSizeSectors;
            this.state = state;
        }

        /** Takes over the spare's device for this role; the caller holds stateLock. */
        void takeOver(Member spare) {
            device = spare.device;
            displayName = spare.displayName;
            devNumber = spare.devNumber;
            deviceUuid = spare.deviceUuid;
            dataSizeSectors = spare.dataSizeSectors;
        }
    }

    /** What one row operation does: a caller's write, a discard, or a step of a sync pass. */
    enum SyncOp {
        WRITE("write"), ZERO("discard"), RESYNC("resync"), RECOVER("recover"), CHECK("check"), REPAIR("repair");

        final String label;

        SyncOp(String label) {
            this.label = label;
        }
    }

    /**
     * Opens an array whose superblock facts were checked by the caller ({@link #create} or
     * {@link Raid5Assembler}), marks it active in the superblocks (events + 1) and starts its threads.
     */
    Raid5Array(Md1Superblock template, Member[] roles, List<Member> spareMembers, long resumeRecoveryRows,
               WriteIntentBitmap loadedBitmap, Raid5Options options, List<String> assemblyProblems) throws IOException {
        this.geo = StripeGeometry.of(template);
        this.template = template;
        this.roles = roles;
        this.name = template.setName;
        this.assemblyProblems = List.copyOf(assemblyProblems);
        this.cleanAtOpen = template.isClean();
        int block = 512;
        for (Member m : roles) {
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
        this.bitmap = loadedBitmap != null ? loadedBitmap
                : geo.members <= 64 ? WriteIntentBitmap.create(template, options.bitmapChunkBytes()) : null;
        this.spares.addAll(spareMembers);
        int absent = 0;
        for (Member m : roles) {
            if (m.state != Raid5Status.MemberState.ACTIVE) {
                absent++;
                failedRole = m.role;
            }
        }
        if (absent > 1) {
            throw new IllegalStateException(name + ": " + absent + " members unavailable");
        }
        if (failedRole >= 0 && roles[failedRole].state == Raid5Status.MemberState.REBUILDING) {
            recoveredRows = Math.min(geo.rows, resumeRecoveryRows);
            recoveryCheckpointRows = recoveredRows;
        }
        if (!cleanAtOpen) {
            needsResync = true;
            long resumeSectors = template.resyncOffset;
            resyncDoneRows = resumeSectors > 0 ? Math.min(geo.rows, resumeSectors / template.chunkSectors) : 0;
            resyncDirtyRegionsOnly = loadedBitmap != null;
        }
        int threads = options.ioThreads() > 0 ? options.ioThreads() : MemberIoExecutor.defaultThreads(geo.members);
        this.io = new MemberIoExecutor(name, threads);
        if (bitmap != null) {
            bitmapDaemon = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "stripestack-" + name + "-bitmap");
                t.setDaemon(true);
                return t;
            });
            bitmapDaemon.scheduleWithFixedDelay(this::bitmapDaemonPass, WriteIntentBitmap.DAEMON_SLEEP_SECONDS,
                    WriteIntentBitmap.DAEMON_SLEEP_SECONDS, TimeUnit.SECONDS);
        } else {
            bitmapDaemon = null;
        }
        synchronized (stateLock) {
            writeSuperblocksLocked(false);
        }
        if (failed) {
            io.close();
            for (Member m : roles) {
                if (m.device != null) {
                    m.device.close();
                }
            }
            throw new MediumErrorException(name + ": could not update the superblocks of the members; see the log", 0, true);
        }
        LOG.info("{}: raid5 {} members, {} KiB chunk, {}, {} bytes, {}; xor {}; stripe cache {} rows; {} I/O threads",
                name, geo.members, geo.chunk / 1024, geo.layout.mdName(), geo.size, failedRole < 0 ? "clean" : "DEGRADED",
                xor.name(), cache.capacity(), threads);
        synchronized (stateLock) {
            if (needsResync && failedRole < 0) {
                LOG.warn("{}: the array was not shut down cleanly; resyncing parity in the background from member "
                        + "sector {}, {}", name, geo.sectors(resyncDoneRows), resyncDirtyRegionsOnly
                        ? bitmap.dirtyBits() + " of " + bitmap.bits() + " bitmap regions (the others had no write in flight)"
                        : "every row (no usable write-intent bitmap)");
            }
            startRecoveryLocked();
            wakeSyncLocked();
        }
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
        Member[] roles = new Member[n];
        ByteBuffer zeros = ByteBuffer.allocate(Md1Superblock.OFFSET_BYTES);
        for (int i = 0; i < n; i++) {
            BlockDevice d = devices.get(i);
            t.devRoles[i] = i;
            byte[] uuid = new byte[16];
            random.nextBytes(uuid);
            // Clear the metadata 1.1 location (sector 0) so no older superblock there confuses mdadm.
            d.write(0, zeros.clear());
            roles[i] = new Member(i, d, d.name(), i, uuid, d.size() / 512 - t.dataOffsetSectors,
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
        flushMembers();
    }

    /** Flushes every member holding a role (also used by close and the bitmap daemon, not counted as a flush). */
    private void flushMembers() throws IOException {
        checkUsable(0, true);
        for (Member m : roles) {
            BlockDevice device = m.device;
            if (m.state == Raid5Status.MemberState.ACTIVE || m.state == Raid5Status.MemberState.REBUILDING) {
                try {
                    device.flush();
                } catch (IOException e) {
                    memberFailed(m.role, device, e);
                }
            }
        }
        checkUsable(0, true);
    }

    /**
     * Flushes, marks the array clean in the superblocks (if it is usable) and closes the members. Call it
     * after the last I/O has returned; I/O after close fails with {@link java.nio.channels.ClosedChannelException}.
     */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        stopSyncThread();
        if (bitmapDaemon != null) {
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
        IOException first = null;
        try {
            if (!failed) {
                long rowsBeforeFlush = recoveredRows;
                flushMembers();
                synchronized (stateLock) {
                    recoveryCheckpointRows = rowsBeforeFlush;
                    if (bitmap != null && failedRole < 0 && !needsResync) {
                        bitmap.clearAll();
                    }
                    writeSuperblocksLocked(true);
                }
            }
        } catch (IOException e) {
            first = e;
        }
        io.close();
        List<BlockDevice> devices = new ArrayList<>();
        synchronized (stateLock) {
            for (Member m : roles) {
                if (m.device != null) {
                    devices.add(m.device);
                }
            }
            for (Member s : spares) {
                devices.add(s.device);
            }
            devices.addAll(retired);
        }
        for (BlockDevice d : devices) {
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

    /** Makes the sync thread finish its current row and exit; close() then writes the checkpoints. */
    private void stopSyncThread() {
        Thread t;
        synchronized (stateLock) {
            stopSync = true;
            stateLock.notifyAll();
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
        if (role < 0 || role >= geo.members) {
            throw new IllegalArgumentException(name + ": member role " + role + " does not exist; roles are 0.."
                    + (geo.members - 1));
        }
        memberFailed(role, null, new IOException("failed by operator"));
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
        checkOpen();
        long needed = geo.dataOffset + template.sizeSectors * 512;
        if (device.size() < needed) {
            throw new IllegalArgumentException(name + ": " + device.name() + " is " + device.size()
                    + " bytes; a member of this array needs at least " + needed
                    + " (data offset + member size) -- use a larger device");
        }
        if (device.logicalBlockSize() > blockSize || geo.chunk % device.logicalBlockSize() != 0) {
            throw new IllegalArgumentException(name + ": " + device.name() + " has " + device.logicalBlockSize()
                    + "-byte blocks; the array uses " + blockSize + "-byte blocks -- use a device with "
                    + blockSize + "-byte (or smaller) blocks");
        }
        byte[] uuid = new byte[16];
        new java.security.SecureRandom().nextBytes(uuid);
        device.write(0, ByteBuffer.allocate(Md1Superblock.OFFSET_BYTES));
        synchronized (stateLock) {
            checkOpen();
            int devNumber = template.devRoles.length;
            template.devRoles = Arrays.copyOf(template.devRoles, devNumber + 1);
            template.devRoles[devNumber] = Md1Superblock.ROLE_SPARE;
            Member spare = new Member(-1, device, device.name(), devNumber, uuid,
                    device.size() / 512 - template.dataOffsetSectors, Raid5Status.MemberState.ACTIVE);
            spares.add(spare);
            writeSuperblocksLocked(false);
            LOG.info("{}: added {} as a spare (device number {})", name, device.name(), devNumber);
            startRecoveryLocked();
            wakeSyncLocked();
        }
    }

    /**
     * Detaches the faulty member of {@code role} (like {@code mdadm --remove}): its device is closed and
     * the role is missing until a spare is added. Only a faulty member can be removed.
     *
     * @throws IllegalStateException when the member is active or being rebuilt (fail it first)
     */
    public void removeMember(int role) throws IOException {
        if (role < 0 || role >= geo.members) {
            throw new IllegalArgumentException(name + ": member role " + role + " does not exist; roles are 0.."
                    + (geo.members - 1));
        }
        BlockDevice device;
        synchronized (stateLock) {
            Member m = roles[role];
            if (m.state == Raid5Status.MemberState.ACTIVE || m.state == Raid5Status.MemberState.REBUILDING) {
                throw new IllegalStateException(name + ": member " + role + " (" + m.displayName + ") is "
                        + m.state.name().toLowerCase(java.util.Locale.ROOT) + "; fail it first (failMember)");
            }
            device = m.device;
            if (device == null) {
                return;
            }
            m.device = null;
            m.displayName = null;
            m.state = Raid5Status.MemberState.MISSING;
            writeSuperblocksLocked(false);
            LOG.info("{}: removed faulty member {} ({})", name, role, device.name());
        }
        device.close();
    }

    public Raid5Status status() {
        List<Raid5Status.Member> list = new ArrayList<>(geo.members);
        List<String> spareNames = new ArrayList<>();
        long events;
        synchronized (stateLock) {
            events = template.events;
            for (Member m : roles) {
                list.add(new Raid5Status.Member(m.role, m.device == null ? null : m.displayName, m.state));
            }
            for (Member s : spares) {
                spareNames.add(s.displayName);
            }
        }
        Raid5Status.Health health = failed ? Raid5Status.Health.FAILED
                : failedRole >= 0 ? Raid5Status.Health.DEGRADED : Raid5Status.Health.CLEAN;
        return new Raid5Status(name, health, List.copyOf(list), events, geo.size, geo.chunk, geo.layout,
                List.copyOf(spareNames), syncProgress(), mismatchSectors);
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
        synchronized (stateLock) {
            return Md1Superblock.formatUuid(template.setUuid);
        }
    }

    /**
     * Recomputes the parity of every row from its data (md's resync) and returns when done; other I/O may
     * run meanwhile. Used by {@link #create} on members that were not zero; after an unclean shutdown the
     * resync starts by itself at open.
     *
     * @throws IOException when the resync cannot complete (degraded, failed or closed array)
     */
    public void resync() throws IOException {
        synchronized (stateLock) {
            if (failedRole >= 0) {
                throw new IOException(name + ": cannot resync parity while degraded (member " + failedRole
                        + " is not active); replace the member first");
            }
            needsResync = true;
            resyncDirtyRegionsOnly = false;
            resyncDoneRows = 0;
            syncStopReason = null;
            frozen = false;
            wakeSyncLocked();
            boolean interrupted = false;
            while (needsResync && syncStopReason == null && !closed) {
                try {
                    stateLock.wait();
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

    // ----------------------------------------------------------------------------------------- sync

    /** md's sync_action: what the sync thread is doing ("idle", "frozen", "resync", "recover", "check", "repair"). */
    public String syncAction() {
        SyncOp running = runningSync;
        if (running != null) {
            return running.label;
        }
        synchronized (stateLock) {
            return frozen ? "frozen" : "idle";
        }
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
        synchronized (stateLock) {
            switch (action) {
                case "idle" -> {
                    requestedScrub = null;
                    frozen = false;
                    if (runningSync == SyncOp.CHECK || runningSync == SyncOp.REPAIR) {
                        stopSync = true;
                    }
                }
                case "frozen" -> {
                    frozen = true;
                    stopSync = runningSync != null;
                }
                case "check", "repair" -> {
                    requireIdleAndHealthy(action);
                    requestedScrub = action.equals("check") ? SyncOp.CHECK : SyncOp.REPAIR;
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
                    if (failedRole < 0) {
                        throw new IllegalStateException(name + ": nothing to recover: every member is active");
                    }
                    if (roles[failedRole].state != Raid5Status.MemberState.REBUILDING && spares.isEmpty()) {
                        throw new IllegalStateException(name + ": cannot recover member " + failedRole
                                + ": there is no spare -- add one (addSpare) and the rebuild starts by itself");
                    }
                    frozen = false;
                    startRecoveryLocked();
                }
                default -> throw new IllegalArgumentException(name + ": unknown sync action '" + action
                        + "'; use idle, frozen, check, repair, resync or recover");
            }
            wakeSyncLocked();
        }
    }

    private void requireIdleAndHealthy(String action) {
        if (failed || failedRole >= 0) {
            throw new IllegalStateException(name + ": cannot " + action + " a degraded array (member " + failedRole
                    + " is not active); replace the member first");
        }
        SyncOp running = runningSync;
        if (running != null || needsResync) {
            throw new IllegalStateException(name + ": " + (running != null ? running.label : "resync")
                    + " is in progress; wait for it, or write idle to stop a check or repair first");
        }
    }

    /** Progress of the running sync action; see {@link SyncProgress}. */
    public SyncProgress syncProgress() {
        SyncOp running = runningSync;
        long total = geo.sectors(geo.rows);
        if (running == null) {
            return new SyncProgress(syncAction(), 0, total, 0, -1);
        }
        long done = geo.sectors(syncRow);
        long speed = syncSpeedKiBps;
        long eta = speed > 0 ? (total - done) / 2 / speed : -1;
        return new SyncProgress(running.label, done, total, speed, eta);
    }

    /** md's mismatch_cnt: 512-byte sectors found inconsistent by the last check or repair (8 per 4 KiB page). */
    public long mismatchCount() {
        return mismatchSectors;
    }

    /** md's sync_speed_min in KiB/s: the sync runs at least this fast even with foreground I/O. */
    public int syncSpeedMin() {
        return syncSpeedMin;
    }

    public void setSyncSpeedMin(int kibPerSecond) {
        if (kibPerSecond < 1) {
            throw new IllegalArgumentException(name + ": sync_speed_min " + kibPerSecond + " KiB/s must be at least 1");
        }
        syncSpeedMin = kibPerSecond;
        LOG.info("{}: sync_speed_min {} KiB/s", name, kibPerSecond);
    }

    /** md's sync_speed_max in KiB/s: the sync never runs faster. */
    public int syncSpeedMax() {
        return syncSpeedMax;
    }

    public void setSyncSpeedMax(int kibPerSecond) {
        if (kibPerSecond < 1) {
            throw new IllegalArgumentException(name + ": sync_speed_max " + kibPerSecond + " KiB/s must be at least 1");
        }
        syncSpeedMax = kibPerSecond;
        LOG.info("{}: sync_speed_max {} KiB/s", name, kibPerSecond);
    }

    /**
     * Waits until no sync action runs or is pending (for tests and the CLI's "wait").
     *
     * @return false if the time ran out first
     */
    public boolean awaitSyncIdle(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        synchronized (stateLock) {
            while (!closed && (runningSync != null || (!frozen && nextSyncLocked() != null))) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(stateLock, left);
            }
            return true;
        }
    }

    /** What the sync thread should do next, by md's priority: recovery, resync, requested scrub. */
    private SyncOp nextSyncLocked() {
        if (failed || closed) {
            return null;
        }
        if (failedRole >= 0 && roles[failedRole].state == Raid5Status.MemberState.REBUILDING) {
            return SyncOp.RECOVER;
        }
        if (failedRole >= 0) {
            return null;
        }
        if (needsResync) {
            return SyncOp.RESYNC;
        }
        return requestedScrub;
    }

    /** If degraded with a spare and no rebuild running, makes the spare the rebuilding member. */
    private void startRecoveryLocked() {
        if (failed || closed || failedRole < 0 || spares.isEmpty()) {
            return;
        }
        Member slot = roles[failedRole];
        if (slot.state == Raid5Status.MemberState.REBUILDING) {
            return;
        }
        Member spare = spares.remove(0);
        if (slot.device != null) {
            retired.add(slot.device);
        }
        recoveredRows = 0;
        recoveryCheckpointRows = 0;
        slot.takeOver(spare);
        template.devRoles[spare.devNumber] = slot.role;
        slot.state = Raid5Status.MemberState.REBUILDING;
        if (runningSync != null && runningSync != SyncOp.RECOVER) {
            stopSync = true;
        }
        writeSuperblocksLocked(false);
        LOG.warn("{}: rebuilding member {} onto spare {}", name, slot.role, slot.displayName);
    }

    /** Starts the sync thread if it is needed and not running, and wakes it. */
    private void wakeSyncLocked() {
        stateLock.notifyAll();
        if (syncThread == null && !closed && nextSyncLocked() != null) {
            syncThread = new Thread(this::syncLoop, "stripestack-" + name + "-sync");
            syncThread.setDaemon(true);
            syncThread.start();
        }
    }

    private void syncLoop() {
        while (true) {
            SyncOp op;
            long from;
            synchronized (stateLock) {
                while (!closed && (frozen || nextSyncLocked() == null)) {
                    try {
                        stateLock.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                if (closed) {
                    return;
                }
                op = nextSyncLocked();
                from = op == SyncOp.RECOVER ? recoveredRows : op == SyncOp.RESYNC ? resyncDoneRows : 0;
                if (op == SyncOp.CHECK || op == SyncOp.REPAIR) {
                    mismatchSectors = 0;
                }
                stopSync = false;
                syncStopReason = null;
                syncRow = from;
                syncSpeedKiBps = 0;
                runningSync = op;
                LOG.info("{}: {} started at member sector {} of {}", name, op.label, geo.sectors(from),
                        geo.sectors(geo.rows));
            }
            String stopped = runPass(op, from);
            synchronized (stateLock) {
                finishPassLocked(op, stopped);
                runningSync = null;
                syncSpeedKiBps = 0;
                stateLock.notifyAll();
            }
        }
    }

    /**
     * Runs one pass from row {@code from} with {@value #SYNC_WORKERS} workers (this thread and a helper),
     * so one row's member reads overlap another's XOR and write. Rows are taken in order and complete in
     * order ({@link #completeSyncRow}); a worker stops taking rows when asked to stop, and finishes
     * every row it took. Returns null when the pass completed, else why it stopped.
     */
    private String runPass(SyncOp op, long from) {
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
            return closed ? "the array was closed" : failed ? "the array failed" : "stopped";
        }
        int role = failedRole;
        if (op == SyncOp.RECOVER && role >= 0 && rebuildingOnto(pass.recoverDevice)) {
            // The superblock that makes the new member active must not become durable before its last rows.
            try {
                pass.recoverDevice.flush();
            } catch (IOException e) {
                memberFailed(role, pass.recoverDevice, e);
                return "the new member failed flushing its last rows";
            }
        }
        return null;
    }

    private static final int SYNC_WORKERS = 2;

    /** Whether {@code device} is still the member being rebuilt. */
    private boolean rebuildingOnto(BlockDevice device) {
        int role = failedRole;
        return device != null && role >= 0 && roles[role].state == Raid5Status.MemberState.REBUILDING
                && roles[role].device == device;
    }
    /** Marks a pass that stopped on an error (as opposed to a request or a state change). */
    private static final String ERROR_PREFIX = "error: ";

    /** One pass's shared state; {@code next} is atomic, the rest is guarded by the pass's monitor. */
    private final class SyncPass {
        final SyncOp op;
        final java.util.concurrent.atomic.AtomicLong next;
        final SpeedMeter meter;
        long watermark;
        /** Rows actually read and written, for the speed limits (skipped clean regions cost nothing). */
        final java.util.concurrent.atomic.AtomicLong processed = new java.util.concurrent.atomic.AtomicLong();
        final boolean dirtyRegionsOnly;
        long lastCheckpoint = System.nanoTime();
        /** Recover: rows below this were flushed to the new member by a worker; one flush at a time. */
        long flushedRows;
        boolean flushing;
        volatile String error;

        /** For recover: the device being rebuilt when the pass started; the pass ends if it is replaced. */
        final BlockDevice recoverDevice;

        SyncPass(SyncOp op, long from) {
            this.op = op;
            this.recoverDevice = op == SyncOp.RECOVER && failedRole >= 0 ? roles[failedRole].device : null;
            this.dirtyRegionsOnly = op == SyncOp.RESYNC && resyncDirtyRegionsOnly && bitmap != null;
            this.next = new java.util.concurrent.atomic.AtomicLong(from);
            this.meter = new SpeedMeter(0);
            this.watermark = from;
            this.flushedRows = from;
        }

        boolean stopping() {
            return stopSync || closed || failed || error != null || (op == SyncOp.RECOVER && !rebuildingOnto(recoverDevice));
        }
    }

    private void syncWorker(SyncPass pass) {
        Context ctx = contexts.get();
        RowWrite w = ctx.rowWrite;
        while (!pass.stopping()) {
            long row = pass.next.getAndIncrement();
            if (row >= geo.rows) {
                return;
            }
            if (pass.dirtyRegionsOnly && !bitmap.isDirty(row)) {
                completeSyncRow(pass, row, 0);  // no write was in flight there: parity is consistent
                continue;
            }
            pass.meter.throttle(pass);
            w.setSync(row, pass);
            try {
                submit(w, ctx);
            } catch (IOException e) {
                LOG.error("{}: {} stopped at row {}: {}", name, pass.op.label, row, e.getMessage());
                pass.error = e.getMessage();
            } finally {
                w.pass = null;
            }
            pass.processed.incrementAndGet();
            if (pass.op == SyncOp.RECOVER && pass.error == null && rebuildingOnto(pass.recoverDevice)) {
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
        long rowsNow = recoveredRows;
        boolean checkpoint;
        synchronized (pass) {
            checkpoint = System.nanoTime() - pass.lastCheckpoint >= CHECKPOINT_NANOS;
            if (pass.flushing || (!checkpoint && rowsNow - pass.flushedRows < Math.max(1, WRITEBACK_BYTES / geo.chunk))) {
                return;
            }
            pass.flushing = true;
        }
        try {
            int role = failedRole;
            if (role < 0) {
                return;
            }
            Member target = roles[role];
            BlockDevice device = pass.recoverDevice;
            try {
                device.flush();
            } catch (IOException e) {
                memberFailed(role, device, e);
                return;
            }
            if (!checkpoint) {
                return;
            }
            synchronized (stateLock) {
                if (failedRole == role && target.state == Raid5Status.MemberState.REBUILDING && target.device == device) {
                    recoveryCheckpointRows = rowsNow;
                    writeSuperblocksLocked(false);
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
    private boolean completeSyncRow(SyncPass pass, long row, long mismatched) {
        synchronized (pass) {
            while (pass.watermark != row) {
                if (pass.error != null || failed || closed
                        || (pass.op == SyncOp.RECOVER && !rebuildingOnto(pass.recoverDevice))) {
                    return false;
                }
                try {
                    pass.wait(10);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            if (pass.op == SyncOp.RECOVER) {
                if (!rebuildingOnto(pass.recoverDevice)) {
                    return false;
                }
                recoveredRows = row + 1;
            } else if (pass.op == SyncOp.RESYNC) {
                resyncDoneRows = row + 1;
            } else {
                mismatchSectors += mismatched;
            }
            pass.watermark = row + 1;
            syncRow = row + 1;
            pass.notifyAll();
            return true;
        }
    }

    private static final long CHECKPOINT_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** Rebuilt bytes between flushes of the new member that only start its write-back (no checkpoint). */
    private static final int WRITEBACK_BYTES = 32 << 20;

    private void finishPassLocked(SyncOp op, String stopped) {
        syncStopReason = stopped;
        if (op == SyncOp.CHECK || op == SyncOp.REPAIR) {
            requestedScrub = null;
        }
        if (stopped != null) {
            LOG.info("{}: {} stopped at member sector {}: {}", name, op.label, geo.sectors(syncRow), stopped);
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
                if (failedRole < 0 || roles[failedRole].state != Raid5Status.MemberState.REBUILDING) {
                    return;                      // the new member failed after its last row
                }
                Member m = roles[failedRole];
                m.state = Raid5Status.MemberState.ACTIVE;
                failedRole = -1;
                recoveredRows = 0;
                // Recovery wrote every row's missing chunk from the others: every row is consistent now.
                needsResync = false;
                resyncDirtyRegionsOnly = false;
                writeSuperblocksLocked(false);
                LOG.info("{}: rebuild of member {} ({}) complete; the array is clean", name, m.role, m.displayName);
            }
            case RESYNC -> {
                needsResync = false;
                resyncDirtyRegionsOnly = false;
                LOG.info("{}: resync complete", name);
            }
            case CHECK, REPAIR -> LOG.info("{}: {} complete, mismatch_cnt {}", name, op.label, mismatchSectors);
            default -> throw new IllegalStateException(op.label);
        }
    }

    /**
     * md's sync throttle, used by the sync thread only: progress marks every half second over a window
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

    // ----------------------------------------------------------------------------------------- reads

    /**
     * The member whose chunks of {@code row} must be rebuilt from the others, or -1: the failed member,
     * unless it is being rebuilt and {@code row} is below the checkpoint. Call with the row held (slot
     * owner or shared row lock) and pass values of {@code failedRole} and {@code recoveredRows} read once.
     */
    private static int missingIn(long row, int failedRole, long recoveredRows) {
        return failedRole >= 0 && row >= recoveredRows ? failedRole : -1;
    }

    private void readRange(long offset, ByteBuffer dst, int dstIndex, int length) throws IOException {
        long firstRow = offset / geo.rowBytes;
        long lastRow = (offset + length - 1) / geo.rowBytes;
        lockRowsShared(firstRow, lastRow);
        try {
            checkUsable(offset, false);
            int failedNow = failedRole;
            long recovered = recoveredRows;
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
                if (member != missingIn(row, failedNow, recovered)) {
                    batch.add(member, roles[member].device, geo.memberOffset(row) + inChunk, dst.slice(di, len), false);
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
            if (checkParityOnReads && failedRole < 0) {
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
        if (missingIn(row, failedNow, recovered) >= 0 || failed) {
            memberFailed(member, device, error);
            checkUsable(arrayOffset, false);
            throw new MediumErrorException(name + ": member " + member + " failed reading row " + row
                    + " while another member was missing", arrayOffset, false, error);
        }
        ByteBuffer target = piece.duplicate().clear().order(NATIVE);
        int len = target.capacity();
        try {
            rebuild(row, member, inChunk, target, len, arrayOffset);
            degradedReads.increment();
        } catch (MediumErrorException e) {
            memberFailed(member, device, error);
            checkUsable(arrayOffset, false);
            throw e;
        }
        try {
            device.write(memberOffset, piece.duplicate().clear());
            readErrorsCorrected.increment();
            LOG.warn("{}: read error on member {} ({}) at byte {} corrected: {} bytes rebuilt from parity and "
                    + "rewritten ({})", name, member, roles[member].displayName, memberOffset, len, error.getMessage());
        } catch (IOException e) {
            memberFailed(member, device, e);
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
            if (member == missingIn(row, failedNow, recovered)) {
                checkUsable(pos, false);
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
            BlockDevice device = roles[m].device;
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
                memberFailed(m, device, e);
                checkUsable(arrayOffset, false);
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
                BlockDevice device = roles[m].device;
                try {
                    device.read(memberOffset, target);
                } catch (IOException e) {
                    memberFailed(m, device, e);
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
        SyncOp op = SyncOp.WRITE;
        SyncPass pass;
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
            this.op = SyncOp.WRITE;
            this.row = row;
            this.inRow = inRow;
            this.length = length;
            this.src = src;
            this.srcIndex = srcIndex;
        }

        /** Zeros over {@code [inRow, inRow + length)} of the row (a discard). */
        void setZero(long row, int inRow, int length) {
            set(row, inRow, length, null, 0);
            this.op = SyncOp.ZERO;
        }

        /** A step of {@code syncPass} on the row (processed by whichever thread owns the row's slot). */
        void setSync(long row, SyncPass syncPass) {
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
    private void submit(RowWrite w, Context ctx) throws IOException {
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
            if (ctx.batch[0].op == SyncOp.WRITE) {
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
            if (ctx.batch[0].op == SyncOp.WRITE) {
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
        if (first.op != SyncOp.WRITE) {
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
            if (next.row != first.row || next.op != SyncOp.WRITE) {
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
        checkUsable(first.row * geo.rowBytes + first.inRow, true);
        // Recovery writes only the new member (covered by its recovery offset); check writes nothing.
        boolean intent = bitmap != null && first.op != SyncOp.CHECK && first.op != SyncOp.RECOVER;
        if (intent) {
            long failedRoles = bitmap.startWrite(first.row, bitmapWriter);
            if (failedRoles != 0) {
                bitmapWriteFailed(failedRoles);
            }
        }
        try {
            processRowOp(slot, batch, count, ctx, first);
        } finally {
            if (intent) {
                bitmap.endWrite(first.row);
            }
        }
    }

    private void processRowOp(Slot slot, RowWrite[] batch, int count, Context ctx, RowWrite first) throws IOException {
        switch (first.op) {
            case WRITE -> {
                if (coversRow(batch, count) && missingIn(first.row, failedRole, recoveredRows) < 0) {
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
                writes.add(m, roles[m].device, memberOffset + inChunk, views[k].slice(pos - w.inRow, len), true);
                pos += len;
            }
            views[k] = null;
        }
        int parityMember = geo.parityMember(row);
        writes.add(parityMember, roles[parityMember].device, memberOffset, parity.clear(), true);
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
                checkUsable(row * geo.rowBytes, true);
                missing = missingIn(row, failedRole, recoveredRows);
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
        SyncOp op = w.op;
        int target = -1;
        if (op == SyncOp.RECOVER) {
            target = failedRole;
            if (!rebuildingOnto(w.pass.recoverDevice) || recoveredRows > row) {
                return;                          // the rebuild was aborted meanwhile; the pass sees it
            }
        } else if (failedRole >= 0) {
            throw new IOException(name + ": cannot " + op.label + " while degraded (member " + failedRole
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
                if (op != SyncOp.RECOVER) {
                    Bits.clear(e.valid[i]);
                }
                Bits.setRange(need, 0, geo.blocksPerChunk);
                andNotInto(need, e.valid[i]);
            }
            if (!preRead(row, e, ctx, parityMember)) {
                checkUsable(row * geo.rowBytes, false);
                throw new IOException(name + ": a member failed during " + op.label + " of row " + row);
            }
            long memberOffset = geo.memberOffset(row);
            MemberIoExecutor.Batch writes = io.batch();
            if (op == SyncOp.RECOVER) {
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
                completeSyncRow(w.pass, row, 0);    // does nothing if the rebuild ended meanwhile
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
                    if (op != SyncOp.CHECK) {
                        stored.put(0, computed, 0, geo.chunk);
                        addRuns(writes, parityMember, memberOffset, stored, ctx.allBlocks, true);
                        runWrites(slot, writes, row);
                    }
                }
                completeSyncRow(w.pass, row, op == SyncOp.RESYNC ? 0 : mismatchedPages * (StripeCache.PAGE / 512L));
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
                memberFailed(reads.member(p), reads.device(p), reads.error(p));
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
            batch.add(member, roles[member].device, memberOffset + (long) b * BLOCK,
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
                memberFailed(batch.member(i), batch.device(i), batch.error(i));
            }
        }
        batch.clear();
        checkUsable(row * geo.rowBytes, true);
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

    // ----------------------------------------------------------------------------------------- health

    /** I/O after close would fail on the closed members and must not be mistaken for member failures. */
    private void checkOpen() throws IOException {
        if (closed) {
            throw new java.nio.channels.ClosedChannelException();
        }
    }

    private void checkUsable(long offset, boolean write) throws MediumErrorException {
        if (failed) {
            throw new MediumErrorException(name + ": array has failed (" + describeFaulty()
                    + "); its data cannot be read or written correctly. Restore the failed members or the data "
                    + "from a backup", offset, write);
        }
    }

    private String describeFaulty() {
        StringBuilder s = new StringBuilder();
        for (Member m : roles) {
            if (m.state != Raid5Status.MemberState.ACTIVE) {
                s.append(s.length() == 0 ? "" : ", ").append("member ").append(m.role).append(' ')
                        .append(m.device == null ? "(missing)" : m.displayName).append(' ')
                        .append(m.state.name().toLowerCase(java.util.Locale.ROOT));
            }
        }
        return s.toString();
    }

    /**
     * Marks member {@code role} faulty (once) and records it in the other members' superblocks; a
     * rebuilding member that fails ends its rebuild. Then a spare, if any, starts replacing it.
     *
     * @param device the device whose I/O failed, or null for the role's current one (operator); an error
     *               of a device that has since been replaced by a spare is ignored
     */
    private void memberFailed(int role, BlockDevice device, Throwable cause) {
        synchronized (stateLock) {
            Member m = roles[role];
            if (device != null && m.device != device) {
                LOG.debug("{}: ignoring an error of {}, which no longer holds member {}: {}", name, device.name(), role,
                        cause.getMessage());
                return;
            }
            if (m.state == Raid5Status.MemberState.REBUILDING) {
                recoveredRows = 0;
                m.state = Raid5Status.MemberState.FAULTY;
                stopSync = runningSync == SyncOp.RECOVER;
                LOG.error("{}: replacement member {} ({}) failed during its rebuild: {}. The array stays DEGRADED; "
                        + "add another spare", name, role, m.displayName, cause.getMessage());
            } else if (m.state != Raid5Status.MemberState.ACTIVE) {
                return;
            } else {
                m.state = Raid5Status.MemberState.FAULTY;
                if (failedRole >= 0) {
                    failed = true;
                    stopSync = true;
                    LOG.error("{}: member {} ({}) failed: {}. A second member is lost ({}): the array has FAILED and "
                            + "refuses all I/O", name, role, m.displayName, cause.getMessage(), describeFaulty());
                } else {
                    failedRole = role;
                    stopSync = runningSync != null;
                    LOG.error("{}: member {} ({}) failed: {}. The array is DEGRADED: reads of its chunks are rebuilt "
                            + "from parity. {}", name, role, m.displayName, cause.getMessage(), spares.isEmpty()
                            ? "Add a spare to rebuild onto (another failure would lose data)"
                            : "Rebuilding onto spare " + spares.get(0).displayName);
                }
            }
            writeSuperblocksLocked(false);
            startRecoveryLocked();
            wakeSyncLocked();
        }
    }

    /**
     * Bumps the event count and writes the superblock of every member that holds a role (active or
     * rebuilding) and of every spare; faulty and missing members' device numbers are recorded as faulty,
     * the rebuilding member's with its role and recovery checkpoint. {@code clean} says whether the
     * array is being closed with nothing in flight: resync_offset is then "done", or the resync
     * checkpoint if a resync is unfinished; while open it is 0 (md's "active"). A member whose superblock
     * write fails is faulty in turn; a spare whose write fails is dropped.
     */
    private void writeSuperblocksLocked(boolean clean) {
        Md1Superblock t = template;
        t.events++;
        t.utime = Md1Superblock.mdTime(System.currentTimeMillis());
        t.resyncOffset = !clean ? 0 : needsResync ? resyncDoneRows * t.chunkSectors : Md1Superblock.RESYNC_DONE;
        for (int d = 0; d < t.devRoles.length; d++) {
            int role = t.devRoles[d];
            if (role < geo.members) {
                Member holder = roles[role];
                boolean holds = holder.devNumber == d && (holder.state == Raid5Status.MemberState.ACTIVE
                        || holder.state == Raid5Status.MemberState.REBUILDING);
                if (!holds) {
                    t.devRoles[d] = Md1Superblock.ROLE_FAULTY;
                }
            }
        }
        List<Member> newlyFailed = new ArrayList<>();
        long bitmapFailed = 0;
        if (bitmap != null) {
            // md updates the bitmap's events before the superblocks': a bitmap older than its superblock is stale.
            bitmap.setEvents(t.events);
            bitmapFailed = bitmap.write(bitmapWriter);
        }
        for (Member m : roles) {
            if (m.state != Raid5Status.MemberState.ACTIVE && m.state != Raid5Status.MemberState.REBUILDING) {
                continue;
            }
            if ((bitmapFailed & (1L << m.role)) != 0 || !writeSuperblock(t, m)) {
                newlyFailed.add(m);
            }
        }
        for (Member spare : spares) {
            if (!writeSuperblock(t, spare)) {
                spares.remove(spare);
                t.devRoles[spare.devNumber] = Md1Superblock.ROLE_FAULTY;
                retired.add(spare.device);
            }
        }
        for (Member m : newlyFailed) {
            if (m.state == Raid5Status.MemberState.REBUILDING) {
                recoveredRows = 0;
            } else if (failedRole >= 0 && failedRole != m.role) {
                failed = true;
            } else {
                failedRole = m.role;
            }
            m.state = Raid5Status.MemberState.FAULTY;
        }
        if (!newlyFailed.isEmpty() && !failed) {
            writeSuperblocksLocked(clean);
        }
    }

    /** {@link WriteIntentBitmap.Members}: runs under the bitmap's monitor, so it takes no array lock. */
    private long writeBitmapToMembers(ByteBuffer block) {
        long offset = WriteIntentBitmap.memberOffset(template.superOffsetSectors);
        long failedRoles = 0;
        for (Member m : roles) {
            if (m.state != Raid5Status.MemberState.ACTIVE && m.state != Raid5Status.MemberState.REBUILDING) {
                continue;
            }
            try {
                m.device.write(offset, block.duplicate());
                m.device.flush();
            } catch (IOException e) {
                LOG.error("{}: writing the write-intent bitmap of member {} ({}) failed: {}", name, m.role,
                        m.displayName, e.getMessage());
                failedRoles |= 1L << m.role;
            }
        }
        // Spares carry the bitmap too (mdadm ignores the bitmap feature of a member whose bitmap it cannot
        // read); a spare's failure shows when its superblock is written next.
        for (Member spare : spares) {
            try {
                spare.device.write(offset, block.duplicate());
                spare.device.flush();
            } catch (IOException e) {
                LOG.warn("{}: writing the write-intent bitmap of spare {} failed: {}", name, spare.displayName,
                        e.getMessage());
            }
        }
        return failedRoles;
    }

    private void bitmapWriteFailed(long failedRoles) {
        for (int role = 0; role < geo.members; role++) {
            if ((failedRoles & (1L << role)) != 0) {
                memberFailed(role, null, new IOException("writing the write-intent bitmap failed"));
            }
        }
    }

    /**
     * Every daemon_sleep seconds: clears the bits of regions with no write in the last period, after a
     * flush made their data and parity durable. Bits stay while the array is degraded or a resync of
     * the dirty regions is pending (they are what the resync needs).
     */
    private void bitmapDaemonPass() {
        try {
            synchronized (stateLock) {
                if (closed || failed || failedRole >= 0 || needsResync) {
                    return;
                }
            }
            long[] candidates = bitmap.idleCandidates();
            if (candidates == null) {
                return;
            }
            flushMembers();
            long failedRoles = bitmap.clearIdle(candidates, bitmapWriter);
            if (failedRoles != 0) {
                bitmapWriteFailed(failedRoles);
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("{}: write-intent bitmap update skipped: {}", name, e.toString());
        }
    }

    /** Writes one device's superblock; false (logged) if the write fails. */
    private boolean writeSuperblock(Md1Superblock t, Member m) {
        Md1Superblock sb = t.copy();
        sb.devNumber = m.devNumber;
        sb.deviceUuid = m.deviceUuid;
        sb.dataSizeSectors = m.dataSizeSectors;
        boolean rebuilding = m.role >= 0 && m.state == Raid5Status.MemberState.REBUILDING;
        sb.featureMap = (rebuilding ? Md1Superblock.FEATURE_RECOVERY_OFFSET : 0)
                | (bitmap != null ? Md1Superblock.FEATURE_BITMAP : 0);
        sb.bitmapOffset = bitmap != null ? WriteIntentBitmap.OFFSET_SECTORS : 0;
        sb.recoveryOffset = rebuilding ? recoveryCheckpointRows * t.chunkSectors : 0;
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

    // ----------------------------------------------------------------------------------------- per-thread

    /** Scratch state of one calling thread; used only by that thread (see the class comment). */
    private final class Context {
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

    @Override
    public String toString() {
        return "Raid5Array[" + name + ", " + geo.members + " members, " + geo.chunk / 1024 + "K chunk, " + geo.layout.mdName() + "]";
    }
}
