package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MediumErrorException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
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
 *   <li><b>Full-row write</b>: parity is XORed from slices of the caller's buffer into a per-thread
 *       parity buffer; all n members are written in parallel; no member is read.</li>
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
 *       whose request reached the idle slot first, or the one the previous owner hands over to). The
 *       owner takes the queued writes for the same row that do not overlap each other (md-style batching:
 *       concurrent writes that together fill a row need no pre-reads), processes them as one row update,
 *       completes them, and hands the slot to the next waiter. The slot's queue and owner flag are
 *       guarded by the slot's monitor; the row's cache entry and the owner's per-thread buffers are used
 *       only by the owner.</li>
 *   <li>Each slot also has a {@link StampedLock}: row updates hold it exclusively only while writing
 *       members; reads hold it shared (for every row they touch, taken in ascending slot order, so no
 *       lock cycle can form). A read therefore sees every block either before or after a racing write,
 *       never half of one, and a degraded read rebuilds from a consistent row.</li>
 *   <li>Member health ({@link #failMember}, I/O errors) and the superblocks are guarded by
 *       {@code stateLock}; the failed role is published in a volatile field that I/O reads after taking
 *       its row locks.</li>
 * </ul>
 */
public final class Raid5Array implements BlockDevice {
    private static final Logger LOG = LoggerFactory.getLogger(Raid5Array.class);
    /** Memory the automatic stripe cache size aims at; see {@link #defaultStripeCacheRows}. */
    public static final long DEFAULT_STRIPE_CACHE_BYTES = 32L << 20;
    static final int SLOTS = 1024;
    private static final int BLOCK = StripeCache.BLOCK;
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();

    private final String name;
    private final int members;
    private final int dataDisks;
    private final int chunk;
    private final int chunkShift;
    private final int blocksPerChunk;
    private final int rowBytes;
    private final long rows;
    private final long size;
    private final int blockSize;
    private final long dataOffset;
    private final Raid5Layout layout;
    private final Geometry geometry;
    private final Member[] roles;
    private final Xor xor = Xor.best();
    private final MemberIoExecutor io;
    private final StripeCache cache;
    private final Slot[] slots = new Slot[SLOTS];
    private final ThreadLocal<Context> contexts;
    private final List<String> assemblyProblems;
    private final boolean cleanAtOpen;
    private volatile boolean checkParityOnReads;

    private final Object stateLock = new Object();
    /** Array-wide superblock fields and dev_roles; guarded by stateLock. */
    private final Md1Superblock template;
    /** Role of the one faulty or missing member, or -1. Written under stateLock. */
    private volatile int failedRole = -1;
    private volatile boolean failed;
    private volatile boolean closed;

    private final IoStats stats;
    private final LongAdder fullStripeWrites;
    private final LongAdder rmwWrites;
    private final LongAdder reconstructWrites;
    private final LongAdder memberPrereads;
    private final LongAdder degradedReads;
    private final LongAdder stripeCacheHits;
    private final LongAdder parityMismatches;

    /** One member slot (role). {@code device} is null when the member is missing. */
    static final class Member {
        final int role;
        final BlockDevice device;
        final String displayName;
        final int devNumber;
        final byte[] deviceUuid;
        final long dataSizeSectors;
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
    }

    /**
     * Opens an array whose superblock facts were checked by the caller ({@link #create} or
     * {@link Raid5Assembler}), marks it active in the superblocks (events + 1) and starts its threads.
     */
    Raid5Array(Md1Superblock template, Member[] roles, Raid5Options options, List<String> assemblyProblems)
            throws IOException {
        if ((long) template.chunkSectors * 512 * template.raidDisks > (1L << 30)) {
            throw new IllegalArgumentException(template.setName + ": chunk " + template.chunkSectors * 512L
                    + " bytes x " + template.raidDisks + " members exceeds the 1 GiB row this engine supports; "
                    + "use a smaller chunk");
        }
        this.template = template;
        this.roles = roles;
        this.name = template.setName;
        this.members = template.raidDisks;
        this.dataDisks = members - 1;
        this.chunk = template.chunkSectors * 512;
        this.chunkShift = Integer.numberOfTrailingZeros(chunk);
        this.blocksPerChunk = chunk / BLOCK;
        this.rowBytes = chunk * dataDisks;
        this.rows = template.sizeSectors * 512 / chunk;
        this.size = rows * rowBytes;
        this.dataOffset = template.dataOffsetSectors * 512;
        this.layout = Raid5Layout.fromMdNumber(template.layout);
        this.assemblyProblems = List.copyOf(assemblyProblems);
        this.cleanAtOpen = template.isClean();
        int block = 512;
        for (Member m : roles) {
            if (m.device != null) {
                block = Math.max(block, m.device.logicalBlockSize());
            }
        }
        this.blockSize = block;
        int maxTransfer = (int) Math.min(Integer.MAX_VALUE / 2 / rowBytes * (long) rowBytes,
                Math.max(1, (16 << 20) / rowBytes) * (long) rowBytes);
        this.geometry = new Geometry(chunk, rowBytes, 0, maxTransfer);
        this.checkParityOnReads = options.checkParityOnReads();
        this.cache = new StripeCache(members, chunk, options.stripeCacheRows() > 0 ? options.stripeCacheRows()
                : defaultStripeCacheRows(members, chunk));
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
        this.parityMismatches = stats.counter("parity_mismatches");
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
        int threads = options.ioThreads() > 0 ? options.ioThreads() : MemberIoExecutor.defaultThreads(members);
        this.io = new MemberIoExecutor(name, threads);
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
                name, members, chunk / 1024, layout.mdName(), size, failedRole < 0 ? "clean" : "DEGRADED",
                xor.name(), cache.capacity(), threads);
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
        Raid5Array array = new Raid5Array(t, roles, options, List.of());
        if (!membersAreZeroed) {
            array.resync();
        }
        LOG.info("{}: created raid5 set {} ({} members, {} bytes)", array.name, Md1Superblock.formatUuid(t.setUuid),
                n, array.size);
        return array;
    }

    // ----------------------------------------------------------------------------------------- BlockDevice

    @Override
    public String name() {
        return name;
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public int logicalBlockSize() {
        return blockSize;
    }

    @Override
    public Geometry geometry() {
        return geometry;
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
            RowWrite w = ctx.rowWrite;
            long pos = offset;
            int srcIndex = src.position();
            int left = length;
            try {
                while (left > 0) {
                    long row = pos / rowBytes;
                    int inRow = (int) (pos - row * rowBytes);
                    int len = Math.min(left, rowBytes - inRow);
                    w.set(row, inRow, len, src, srcIndex);
                    submit(w, ctx);
                    pos += len;
                    srcIndex += len;
                    left -= len;
                }
            } finally {
                w.src = null;
            }
            src.position(src.limit());
        } catch (IOException | RuntimeException e) {
            stats.endFailed(start);
            throw e;
        }
        stats.endWrite(start, length);
    }

    /** Flushes every active member (data and parity); a member whose flush fails is marked faulty. */
    @Override
    public void flush() throws IOException {
        checkOpen();
        flushMembers();
    }

    private void flushMembers() throws IOException {
        stats.countFlush();
        checkUsable(0, true);
        for (Member m : roles) {
            if (m.state == Raid5Status.MemberState.ACTIVE) {
                try {
                    m.device.flush();
                } catch (IOException e) {
                    memberFailed(m.role, e);
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
        IOException first = null;
        try {
            if (!failed) {
                flushMembers();
                synchronized (stateLock) {
                    writeSuperblocksLocked(true);
                }
            }
        } catch (IOException e) {
            first = e;
        }
        io.close();
        for (Member m : roles) {
            if (m.device != null) {
                try {
                    m.device.close();
                } catch (IOException e) {
                    if (first == null) {
                        first = e;
                    }
                }
            }
        }
        if (first != null) {
            throw first;
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
        LOG.info("{}: stripe cache size set to {} rows ({} KiB each)", name, rows, (long) chunk * members / 1024);
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
        if (role < 0 || role >= members) {
            throw new IllegalArgumentException(name + ": member role " + role + " does not exist; roles are 0.."
                    + (members - 1));
        }
        memberFailed(role, new IOException("failed by operator"));
    }

    public Raid5Status status() {
        List<Raid5Status.Member> list = new ArrayList<>(members);
        long events;
        synchronized (stateLock) {
            events = template.events;
        }
        for (Member m : roles) {
            list.add(new Raid5Status.Member(m.role, m.device == null ? null : m.displayName, m.state));
        }
        Raid5Status.Health health = failed ? Raid5Status.Health.FAILED
                : failedRole >= 0 ? Raid5Status.Health.DEGRADED : Raid5Status.Health.CLEAN;
        return new Raid5Status(name, health, List.copyOf(list), events, size, chunk, layout);
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
        return chunk;
    }

    public int memberCount() {
        return members;
    }

    public Raid5Layout layout() {
        return layout;
    }

    /** The set UUID as mdadm prints it. */
    public String uuid() {
        synchronized (stateLock) {
            return Md1Superblock.formatUuid(template.setUuid);
        }
    }

    /**
     * Recomputes the parity of every row from its data (md's resync), row by row through the write slots,
     * so it may run while other I/O is in flight. Needed after an unclean shutdown (see
     * {@link #wasCleanAtOpen()}) and used by {@link #create} on members that were not zero. Not possible
     * while degraded.
     */
    public void resync() throws IOException {
        Context ctx = contexts.get();
        RowWrite w = ctx.rowWrite;
        for (long row = 0; row < rows; row++) {
            if (failedRole >= 0) {
                throw new IOException(name + ": cannot resync parity while degraded (member "
                        + failedRole + " is not active); replace the member first");
            }
            w.set(row, 0, 0, null, 0);
            submit(w, ctx);
        }
    }

    // ----------------------------------------------------------------------------------------- reads

    private void readRange(long offset, ByteBuffer dst, int dstIndex, int length) throws IOException {
        long firstRow = offset / rowBytes;
        long lastRow = (offset + length - 1) / rowBytes;
        lockRowsShared(firstRow, lastRow);
        try {
            checkUsable(offset, false);
            int missing = failedRole;
            MemberIoExecutor.Batch batch = io.batch();
            long pos = offset;
            int di = dstIndex;
            int left = length;
            while (left > 0) {
                long chunkNo = pos >>> chunkShift;
                int inChunk = (int) (pos & (chunk - 1));
                int len = Math.min(left, chunk - inChunk);
                long row = chunkNo / dataDisks;
                int member = layout.dataMember(row, (int) (chunkNo - row * dataDisks), members);
                if (member != missing) {
                    batch.add(member, roles[member].device, dataOffset + row * chunk + inChunk, dst.slice(di, len), false);
                }
                pos += len;
                di += len;
                left -= len;
            }
            batch.run();
            boolean errors = false;
            for (int i = 0; i < batch.size(); i++) {
                if (batch.error(i) != null) {
                    memberFailed(batch.member(i), batch.error(i));
                    errors = true;
                }
            }
            batch.clear();
            if (errors || missing >= 0) {
                checkUsable(offset, false);
                rebuildMissingPieces(offset, dst, dstIndex, length);
            }
            if (checkParityOnReads && failedRole < 0) {
                verifyRows(offset, length);
            }
        } finally {
            unlockRowsShared(firstRow, lastRow);
        }
    }

    /** Rebuilds, from the other members, every piece of the range that lies on the missing member. */
    private void rebuildMissingPieces(long offset, ByteBuffer dst, int dstIndex, int length) throws IOException {
        int missing = failedRole;
        long pos = offset;
        int di = dstIndex;
        int left = length;
        while (left > 0) {
            long chunkNo = pos >>> chunkShift;
            int inChunk = (int) (pos & (chunk - 1));
            int len = Math.min(left, chunk - inChunk);
            long row = chunkNo / dataDisks;
            int member = layout.dataMember(row, (int) (chunkNo - row * dataDisks), members);
            if (member == missing) {
                rebuild(row, missing, inChunk, dst.slice(di, len).order(NATIVE), len, pos);
                degradedReads.increment();
            }
            pos += len;
            di += len;
            left -= len;
        }
    }

    /** {@code target[0, len) = XOR of every other member's bytes at that row and in-chunk offset}. */
    private void rebuild(long row, int missing, int inChunk, ByteBuffer target, int len, long arrayOffset)
            throws IOException {
        Context ctx = contexts.get();
        ByteBuffer scratch = ctx.scratch();
        long memberOffset = dataOffset + row * chunk + inChunk;
        boolean first = true;
        for (int m = 0; m < members; m++) {
            if (m == missing) {
                continue;
            }
            try {
                if (first) {
                    roles[m].device.read(memberOffset, target.duplicate().position(0).limit(len));
                    first = false;
                } else {
                    roles[m].device.read(memberOffset, scratch.clear().limit(len));
                    ctx.srcs[0] = scratch;
                    ctx.idx[0] = 0;
                    xor.xorInto(target, 0, ctx.srcs, ctx.idx, 1, len);
                }
            } catch (IOException e) {
                memberFailed(m, e);
                checkUsable(arrayOffset, false);
            }
        }
    }

    /** check_parity_on_reads: XOR of all members over the columns the read touched must be zero. */
    private void verifyRows(long offset, int length) throws IOException {
        Context ctx = contexts.get();
        long end = offset + length;
        for (long row = offset / rowBytes; row * rowBytes < end; row++) {
            long rowStart = row * rowBytes;
            long from = Math.max(offset, rowStart) - rowStart;
            long to = Math.min(end, rowStart + rowBytes) - rowStart;
            int lo;
            int hi;
            if (from / chunk == (to - 1) / chunk) {
                lo = (int) (from % chunk);
                hi = (int) ((to - 1) % chunk) + 1;
            } else {
                lo = 0;
                hi = chunk;
            }
            int len = hi - lo;
            ByteBuffer acc = ctx.accumulator();
            ByteBuffer scratch = ctx.scratch();
            long memberOffset = dataOffset + row * chunk + lo;
            for (int m = 0; m < members; m++) {
                ByteBuffer target = m == 0 ? acc.clear().limit(len) : scratch.clear().limit(len);
                try {
                    roles[m].device.read(memberOffset, target);
                } catch (IOException e) {
                    memberFailed(m, e);
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
                            name, row, rowStart, rowStart + rowBytes, memberOffset, len);
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

    /** One caller's write to one row (or a resync of the row when {@code src} is null). Reused per thread. */
    static final class RowWrite {
        long row;
        int inRow;
        int length;
        ByteBuffer src;
        int srcIndex;
        /** Guarded by the slot monitor. */
        boolean done;
        boolean lead;
        IOException error;

        void set(long row, int inRow, int length, ByteBuffer src, int srcIndex) {
            this.row = row;
            this.inRow = inRow;
            this.length = length;
            this.src = src;
            this.srcIndex = srcIndex;
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
    }

    private void submit(RowWrite w, Context ctx) throws IOException {
        Slot slot = slots[slotIndex(w.row)];
        boolean interrupted = false;
        synchronized (slot) {
            w.done = false;
            w.lead = false;
            w.error = null;
            slot.pending.addLast(w);
            if (slot.busy) {
                // The owner may be using our buffer: we must wait for it even when interrupted.
                while (!w.done && !w.lead) {
                    try {
                        slot.wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
            } else {
                slot.busy = true;
            }
        }
        if (!w.done) {
            ownSlot(slot, ctx);
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (w.error != null) {
            IOException e = w.error;
            w.error = null;
            throw e instanceof MediumErrorException me
                    ? new MediumErrorException(me.getMessage(), me.offset(), true, me)
                    : new IOException(e.getMessage(), e);
        }
    }

    /** Processes one batch as the slot's owner (the caller's own write is first in it), then hands over. */
    private void ownSlot(Slot slot, Context ctx) {
        int count;
        synchronized (slot) {
            count = collectBatch(slot, ctx);
        }
        IOException error = null;
        try {
            processRow(slot, ctx.batch, count, ctx);
        } catch (IOException e) {
            error = e;
        } catch (RuntimeException e) {
            error = new IOException(name + ": internal error writing row " + ctx.batch[0].row + ": " + e, e);
            LOG.error("{}: internal error writing row {}", name, ctx.batch[0].row, e);
        }
        synchronized (slot) {
            for (int i = 0; i < count; i++) {
                ctx.batch[i].error = error;
                ctx.batch[i].done = true;
                ctx.batch[i] = null;
            }
            RowWrite next = slot.pending.peekFirst();
            if (next == null) {
                slot.busy = false;
            } else {
                next.lead = true;
            }
            slot.notifyAll();
        }
    }

    /** Takes the first pending write and the following ones of the same row that overlap none taken. */
    private static int collectBatch(Slot slot, Context ctx) {
        RowWrite first = slot.pending.pollFirst();
        ctx.batch[0] = first;
        int count = 1;
        if (first.src == null) {
            return count;
        }
        outer:
        while (!slot.pending.isEmpty()) {
            RowWrite next = slot.pending.peekFirst();
            if (next.row != first.row || next.src == null) {
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

    private void processRow(Slot slot, RowWrite[] batch, int count, Context ctx) throws IOException {
        RowWrite first = batch[0];
        checkUsable(first.row * rowBytes + first.inRow, true);
        if (count == 1 && first.length == rowBytes && failedRole < 0) {
            writeFullRow(slot, first, ctx);
        } else {
            updateRow(slot, batch, count, ctx);
        }
    }

    /** A whole row from one caller: parity from the caller's bytes, n parallel writes, no reads, no copies. */
    private void writeFullRow(Slot slot, RowWrite w, Context ctx) throws IOException {
        long row = w.row;
        int parityMember = layout.parityMember(row, members);
        long memberOffset = dataOffset + row * chunk;
        for (int i = 0; i < dataDisks; i++) {
            ctx.views[i] = w.src.slice(w.srcIndex + i * chunk, chunk).order(NATIVE);
            ctx.srcs[i] = ctx.views[i];
            ctx.idx[i] = 0;
        }
        ByteBuffer parity = ctx.parity();
        xor.xorAssign(parity, 0, ctx.srcs, ctx.idx, dataDisks, chunk);
        cache.invalidate(row);
        MemberIoExecutor.Batch batch = io.batch();
        for (int i = 0; i < dataDisks; i++) {
            int m = layout.dataMember(row, i, members);
            batch.add(m, roles[m].device, memberOffset, ctx.views[i], true);
            ctx.views[i] = null;
            ctx.srcs[i] = null;
        }
        batch.add(parityMember, roles[parityMember].device, memberOffset, parity.clear(), true);
        runWrites(slot, batch, row);
        fullStripeWrites.increment();
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
            boolean resync = batch[0].src == null;
            if (resync) {
                Bits.setRange(columns, 0, blocksPerChunk);
            }
            for (int k = 0; k < count; k++) {
                markWritten(batch[k], written, columns);
            }
            boolean fullRow = !resync;
            for (int i = 0; i < dataDisks && fullRow; i++) {
                fullRow = Bits.isFull(written[i], blocksPerChunk);
            }
            int parityMember = layout.parityMember(row, members);
            int missing;
            int missingIndex;
            boolean readModifyWrite;
            while (true) {
                checkUsable(row * rowBytes, true);
                missing = failedRole;
                missingIndex = missing < 0 ? -2 : missing == parityMember ? -1 : layout.dataIndexOf(row, missing, members);
                readModifyWrite = planReads(e, ctx, resync, missingIndex);
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
            long memberOffset = dataOffset + row * chunk;
            for (int i = 0; i < dataDisks; i++) {
                int m = layout.dataMember(row, i, members);
                if (m != missing) {
                    addRuns(writes, m, memberOffset, e.chunk(i), written[i], true);
                }
            }
            if (missingIndex != -1) {
                addRuns(writes, parityMember, memberOffset, e.chunk(dataDisks), columns, true);
            }
            runWrites(slot, writes, row);
            for (int i = 0; i < dataDisks; i++) {
                orInto(e.valid[i], written[i]);
            }
            if (missingIndex == -1) {
                andNotInto(e.valid[dataDisks], columns);
            } else {
                orInto(e.valid[dataDisks], columns);
            }
            if (!resync) {
                if (fullRow) {
                    fullStripeWrites.increment();
                } else if (readModifyWrite) {
                    rmwWrites.increment();
                } else {
                    reconstructWrites.increment();
                }
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
            int index = pos >>> chunkShift;
            int inChunk = pos & (chunk - 1);
            int len = Math.min(end - pos, chunk - inChunk);
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
            int index = pos >>> chunkShift;
            int inChunk = pos & (chunk - 1);
            int len = Math.min(end - pos, chunk - inChunk);
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
    private boolean planReads(StripeCache.Entry e, Context ctx, boolean resync, int missingIndex) {
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
                for (int i = 0; i < dataDisks; i++) {
                    if (i != missingIndex) {
                        need[i][w] = (rebuild[w] | (columns[w] & ~written[i][w])) & ~valid[i][w];
                    }
                }
                need[dataDisks][w] = rebuild[w] & ~valid[dataDisks][w];
            }
            return false;
        }
        long rmw = 0;
        long rcw = 0;
        long rmwUncached = 0;
        long rcwUncached = 0;
        for (int w = 0; w < words; w++) {
            long k = columns[w];
            for (int i = 0; i < dataDisks; i++) {
                long wr = written[i][w];
                long v = valid[i][w];
                rmw += Long.bitCount(wr & ~v);
                rmwUncached += Long.bitCount(wr);
                rcw += Long.bitCount(k & ~wr & ~v);
                rcwUncached += Long.bitCount(k & ~wr);
            }
            rmw += Long.bitCount(k & ~valid[dataDisks][w]);
            rmwUncached += Long.bitCount(k);
        }
        boolean readModifyWrite = !resync && rmw < rcw;
        if (Math.min(rmw, rcw) < Math.min(rmwUncached, rcwUncached)) {
            stripeCacheHits.increment();
        }
        for (int w = 0; w < words; w++) {
            long k = columns[w];
            for (int i = 0; i < dataDisks; i++) {
                long wr = written[i][w];
                need[i][w] = (readModifyWrite ? wr : k & ~wr) & ~valid[i][w];
            }
            need[dataDisks][w] = readModifyWrite ? k & ~valid[dataDisks][w] : 0;
        }
        return readModifyWrite;
    }

    /** Reads every needed run into the entry, in parallel. Returns false if a member failed (replan). */
    private boolean preRead(long row, StripeCache.Entry e, Context ctx, int parityMember) throws IOException {
        MemberIoExecutor.Batch reads = io.batch();
        long memberOffset = dataOffset + row * chunk;
        int[] pieceChunk = ctx.pieceChunk;
        int pieces = 0;
        for (int i = 0; i <= dataDisks; i++) {
            int m = i == dataDisks ? parityMember : layout.dataMember(row, i, members);
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
                memberFailed(reads.member(p), reads.error(p));
                ok = false;
            } else {
                int to = Bits.nextClear(ctx.need[pieceChunk[p]], from, blocksPerChunk);
                Bits.setRange(e.valid[pieceChunk[p]], from, to);
            }
        }
        return ok;
    }

    /** Rebuilds the missing data chunk's old contents where the plan needs them: parity ^ other chunks. */
    private void rebuildIntoEntry(StripeCache.Entry e, Context ctx, int missingIndex) {
        long[] rebuild = ctx.rebuild;
        ctx.srcs[0] = e.chunk(dataDisks);
        int count = 1;
        for (int i = 0; i < dataDisks; i++) {
            if (i != missingIndex) {
                ctx.srcs[count++] = e.chunk(i);
            }
        }
        ByteBuffer target = e.chunk(missingIndex);
        for (int b = Bits.nextSet(rebuild, 0, blocksPerChunk); b < blocksPerChunk; ) {
            int end = Bits.nextClear(rebuild, b, blocksPerChunk);
            for (int k = 0; k < count; k++) {
                ctx.idx[k] = b * BLOCK;
            }
            xor.xorAssign(target, b * BLOCK, ctx.srcs, ctx.idx, count, (end - b) * BLOCK);
            b = Bits.nextSet(rebuild, end, blocksPerChunk);
        }
        orInto(e.valid[missingIndex], rebuild);
        Arrays.fill(ctx.srcs, null);
    }

    /** parity ^= data over each chunk's written blocks (called before and after the new data is copied in). */
    private void xorWrittenIntoParity(StripeCache.Entry e, Context ctx) {
        ByteBuffer parity = e.chunk(dataDisks);
        for (int i = 0; i < dataDisks; i++) {
            long[] bits = ctx.written[i];
            ctx.srcs[0] = e.chunk(i);
            for (int b = Bits.nextSet(bits, 0, blocksPerChunk); b < blocksPerChunk; ) {
                int end = Bits.nextClear(bits, b, blocksPerChunk);
                ctx.idx[0] = b * BLOCK;
                xor.xorInto(parity, b * BLOCK, ctx.srcs, ctx.idx, 1, (end - b) * BLOCK);
                b = Bits.nextSet(bits, end, blocksPerChunk);
            }
        }
        ctx.srcs[0] = null;
    }

    /** parity = XOR of all data chunks over the touched columns. */
    private void recomputeParity(StripeCache.Entry e, Context ctx) {
        ByteBuffer parity = e.chunk(dataDisks);
        for (int i = 0; i < dataDisks; i++) {
            ctx.srcs[i] = e.chunk(i);
        }
        long[] columns = ctx.columns;
        for (int b = Bits.nextSet(columns, 0, blocksPerChunk); b < blocksPerChunk; ) {
            int end = Bits.nextClear(columns, b, blocksPerChunk);
            for (int i = 0; i < dataDisks; i++) {
                ctx.idx[i] = b * BLOCK;
            }
            xor.xorAssign(parity, b * BLOCK, ctx.srcs, ctx.idx, dataDisks, (end - b) * BLOCK);
            b = Bits.nextSet(columns, end, blocksPerChunk);
        }
        Arrays.fill(ctx.srcs, null);
    }

    private void addRuns(MemberIoExecutor.Batch batch, int member, long memberOffset, ByteBuffer chunkBuffer,
                         long[] bits, boolean write) {
        for (int b = Bits.nextSet(bits, 0, blocksPerChunk); b < blocksPerChunk; ) {
            int end = Bits.nextClear(bits, b, blocksPerChunk);
            batch.add(member, roles[member].device, memberOffset + (long) b * BLOCK,
                    chunkBuffer.slice(b * BLOCK, (end - b) * BLOCK), write);
            b = Bits.nextSet(bits, end, blocksPerChunk);
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
                memberFailed(batch.member(i), batch.error(i));
            }
        }
        batch.clear();
        checkUsable(row * rowBytes, true);
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

    /** Marks member {@code role} faulty (once) and records it in the other members' superblocks. */
    private void memberFailed(int role, Throwable cause) {
        synchronized (stateLock) {
            Member m = roles[role];
            if (m.state != Raid5Status.MemberState.ACTIVE) {
                return;
            }
            m.state = Raid5Status.MemberState.FAULTY;
            if (failedRole >= 0) {
                failed = true;
                LOG.error("{}: member {} ({}) failed: {}. A second member is lost ({}): the array has FAILED and "
                        + "refuses all I/O", name, role, m.displayName, cause.getMessage(), describeFaulty());
            } else {
                failedRole = role;
                LOG.error("{}: member {} ({}) failed: {}. The array is DEGRADED: reads of its chunks are rebuilt "
                        + "from parity. Replace {} and rebuild the array (another failure would lose data)",
                        name, role, m.displayName, cause.getMessage(), m.displayName);
            }
            writeSuperblocksLocked(false);
        }
    }

    /**
     * Bumps the event count and writes every active member's superblock (roles of faulty or missing
     * members recorded as faulty); {@code clean} says whether parity is known to be in sync. A member
     * whose superblock write fails is faulty in turn.
     */
    private void writeSuperblocksLocked(boolean clean) {
        Md1Superblock t = template;
        t.events++;
        t.utime = Md1Superblock.mdTime(System.currentTimeMillis());
        t.resyncOffset = clean ? Md1Superblock.RESYNC_DONE : 0;
        for (Member m : roles) {
            if (m.state != Raid5Status.MemberState.ACTIVE) {
                for (int d = 0; d < t.devRoles.length; d++) {
                    if (t.devRoles[d] == m.role) {
                        t.devRoles[d] = Md1Superblock.ROLE_FAULTY;
                    }
                }
            }
        }
        List<Member> newlyFailed = new ArrayList<>();
        for (Member m : roles) {
            if (m.state != Raid5Status.MemberState.ACTIVE) {
                continue;
            }
            Md1Superblock sb = t.copy();
            sb.devNumber = m.devNumber;
            sb.deviceUuid = m.deviceUuid;
            sb.dataSizeSectors = m.dataSizeSectors;
            try {
                m.device.write(Md1Superblock.OFFSET_BYTES, sb.encode());
                m.device.flush();
            } catch (IOException e) {
                LOG.error("{}: writing the superblock of member {} ({}) failed: {}", name, m.role, m.displayName,
                        e.getMessage());
                newlyFailed.add(m);
            }
        }
        for (Member m : newlyFailed) {
            m.state = Raid5Status.MemberState.FAULTY;
            if (failedRole >= 0 && failedRole != m.role) {
                failed = true;
            } else {
                failedRole = m.role;
            }
        }
        if (!newlyFailed.isEmpty() && !failed) {
            writeSuperblocksLocked(clean);
        }
    }

    // ----------------------------------------------------------------------------------------- per-thread

    /** Scratch state of one calling thread; used only by that thread (see the class comment). */
    private final class Context {
        final RowWrite rowWrite = new RowWrite();
        RowWrite[] batch = new RowWrite[8];
        final long[][] written;
        final long[] columns;
        final long[] rebuild;
        final long[][] need;
        final ByteBuffer[] srcs = new ByteBuffer[members + 1];
        final int[] idx = new int[members + 1];
        final ByteBuffer[] views = new ByteBuffer[members];
        int[] pieceChunk = new int[16];
        private ByteBuffer parity;
        private ByteBuffer scratch;
        private ByteBuffer accumulator;

        Context() {
            int words = (blocksPerChunk + 63) / 64;
            written = new long[dataDisks][words];
            columns = new long[words];
            rebuild = new long[words];
            need = new long[members][words];
        }

        /**
         * Exactly one chunk, page-aligned (members may be opened with O_DIRECT), native order. The final
         * slice matters: an aligned slice of an allocation that happens to be aligned keeps the extra page,
         * and {@code clear()} would then expose it.
         */
        private ByteBuffer alignedChunk() {
            return ByteBuffer.allocateDirect(chunk + StripeCache.PAGE).alignedSlice(StripeCache.PAGE)
                    .slice(0, chunk).order(NATIVE);
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
        return "Raid5Array[" + name + ", " + members + " members, " + chunk / 1024 + "K chunk, " + layout.mdName() + "]";
    }
}
