package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MediumErrorException;
import io.stripestack.blockdev.MeteredBlockDevice;
import io.stripestack.blockdev.Quiesce;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongConsumer;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Linux-md-compatible RAID-5 array over {@code n >= 3} member devices: md v1.2 superblocks, md's four
 * layouts, byte-for-byte md's data placement, so the member files can be assembled by the kernel.
 * Open one with {@link #create} or {@link Raid5Assembler#assemble}.
 *
 * <p>This class is the public face: it checks requests, counts them, and hands them to the parts, each
 * of which says in its class comment which thread owns what and which lock guards what:
 * <ul>
 *   <li>{@link StripeGeometry}: where a block lives (row, member, member offset); immutable.</li>
 *   <li>{@link ReadPath}: healthy reads straight into the caller's buffer, degraded reconstruction,
 *       read-error correction, check_parity_on_reads.</li>
 *   <li>{@link WriteScheduler}: writes, discards and sync steps as row writes on
 *       {@value WriteScheduler#SLOTS} write slots; batching of concurrent writes to a row, the write
 *       window, work-conserving holds; the row locks reads take. {@link RowUpdater}: one row update (full-stripe,
 *       read-modify-write or reconstruct-write, through the {@link StripeCache}).</li>
 *   <li>{@link SyncEngine}: md's sync actions (resync, recover, check, repair) on their own threads,
 *       with progress and speed limits.</li>
 *   <li>{@link MemberSet}: member health, spares, failures (a member that fails an I/O, or
 *       {@link #failMember}, is marked faulty; its chunks are then rebuilt from the others on read and
 *       implied by parity on write; a second failure stops all I/O with {@link MediumErrorException}).
 *       Its state lock also guards the sync state and the superblocks.</li>
 *   <li>{@link ArrayParts}: the parts above, for one geometry; {@link Reshaper}: md's grow by members, online
 *       and resumable (the data moves to a new geometry; at the end a new set of parts replaces the old).</li>
 *   <li>{@link Superblocks}: the superblocks and the write-intent bitmap. {@link PartialParityLog}: md's
 *       partial parity log, replayed at open after a crash, written before every row update when the
 *       {@link ConsistencyPolicy} is ppl.</li>
 * </ul>
 *
 * <p>Any number of threads may call read, write, discard and flush (the BlockDevice contract); the
 * controls are thread-safe. Every request and every sync step is entered in the array's {@link Quiesce}; whoever
 * must change the array with nothing in flight suspends it: the consistency-policy switch (no row update may run
 * with the old log, or without one, once the superblocks say ppl), the start of a reshape (every request that
 * read no reshape has finished before the mover claims rows) and close (the members are flushed and marked clean
 * with no request left). The policy lock ({@code policySwitch}) serializes these controls; a suspender never
 * runs inside a request, and the sync workers stop before close suspends. Lifecycle (md's sync_action): {@link #addSpare} adds a hot spare, onto which
 * a failed (or missing) role is rebuilt online, resumed from its checkpoint after a restart;
 * {@code check} counts mismatching 4 KiB parity pages ({@link #mismatchCount()} in 512-byte sectors, 8
 * per page, as md), {@code repair} rewrites them, {@code resync} recomputes parity (started by itself
 * after an unclean shutdown); the sync keeps at least {@link #syncSpeedMin()} KiB/s and never exceeds
 * {@link #syncSpeedMax()}, yielding to foreground I/O in between.
 */
public final class Raid5Array extends MeteredBlockDevice {
    private static final Logger LOG = LoggerFactory.getLogger(Raid5Array.class);
    /** Memory the automatic stripe cache size aims at; see {@link #defaultStripeCacheRows}. */
    public static final long DEFAULT_STRIPE_CACHE_BYTES = 32L << 20;
    /** A discard during a reshape passes its gate in pieces of at most this many bytes (one request each). */
    private static final int DISCARD_PIECE_BYTES = 1 << 30;
    /** md's default sync_speed_min / sync_speed_max, KiB/s. */
    public static final int DEFAULT_SYNC_SPEED_MIN = 1000;
    public static final int DEFAULT_SYNC_SPEED_MAX = 200000;
    /** The layer counters of {@link #stats()}, in the order they are listed. */
    private static final List<String> LAYER_COUNTERS = List.of("full_stripe_writes", "rmw_writes",
            "reconstruct_writes", "member_prereads", "degraded_reads", "stripe_cache_hits", "held_writes",
            "parity_mismatches", "read_errors_corrected", "ppl_writes", "ppl_bytes", "ppl_rows", "ppl_area_restarts");

    private final String name;
    private final int blockSize;
    private final List<String> assemblyProblems;
    private final boolean cleanAtOpen;
    private final Raid5Options options;
    private final Object policySwitch = new Object();
    /** Requests and sync steps in flight, and the controls that wait for none (see the class comment). */
    private final Quiesce quiesce = new Quiesce();
    /**
     * The parts of the current geometry. Replaced only by a finished reshape, while {@link #reshape} is set and
     * its gate holds every request out; the volatile write that clears {@link #reshape} publishes it, so I/O
     * pays one volatile read ({@link #reshape}) and none for this field.
     */
    private ArrayParts parts;
    /** The running reshape, or null: the only volatile read on the I/O path. */
    private volatile Reshaper reshape;
    /** Told the new size when a reshape has grown the array; see {@link #addCapacityListener}. */
    private final List<LongConsumer> capacityListeners = new CopyOnWriteArrayList<>();

    /**
     * Opens an array whose superblock facts were checked by the caller ({@link #create} or
     * {@link Raid5Assembler}), marks it active in the superblocks (events + 1) and starts its threads. A
     * template whose superblocks say a reshape is under way opens the old geometry over the first roles and
     * resumes the reshape onto the others from its checkpoint.
     */
    Raid5Array(Md1Superblock template, MemberSet.Member[] roles, List<MemberSet.Member> spareMembers,
               long resumeRecoveryRows, WriteIntentBitmap loadedBitmap, Raid5Options options,
               List<String> assemblyProblems) throws IOException {
        super(template.setName);
        this.name = template.setName;
        this.assemblyProblems = List.copyOf(assemblyProblems);
        this.cleanAtOpen = template.isClean();
        this.options = options;
        int block = 512;
        for (MemberSet.Member m : roles) {
            if (m.device != null) {
                block = Math.max(block, m.device.logicalBlockSize());
            }
        }
        this.blockSize = block;
        // Registration order is the order status and the Prometheus text list the counters in.
        for (String counter : LAYER_COUNTERS) {
            stats.counter(counter);
        }
        if (template.isReshaping()) {
            Reshaper.Resume resume;
            try {
                resume = Reshaper.resume(name, template, roles, options);
            } catch (Raid5AssembleException e) {
                for (MemberSet.Member m : roles) {
                    if (m.device != null) {
                        m.device.close();
                    }
                }
                throw e;
            }
            this.parts = new ArrayParts(name, blockSize, stats, resume.oldTemplate(), resume.oldRoles(), spareMembers,
                    resume.targets(), 0, null, resume.oldOptions(), quiesce);
            this.reshape = new Reshaper(this, parts, resume.oldTemplate(), resume.targets(), resume.positionSectors(),
                    resume.newOffsetSectors(), resume.newChunkSectors(), options);
            reshape.start();
        } else {
            this.parts = new ArrayParts(name, blockSize, stats, template, roles, spareMembers, List.of(),
                    resumeRecoveryRows, loadedBitmap, options, quiesce);
            parts.sync.start();
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
        return current().geo.size;
    }

    @Override
    public int logicalBlockSize() {
        return blockSize;
    }

    @Override
    public Geometry geometry() {
        return current().ioHints;
    }

    /** In range and block-aligned, and the array still open. */
    @Override
    protected void checkRequest(long offset, long length) throws IOException {
        super.checkRequest(offset, length);
        checkOpen();
    }

    /** Each request runs entered in the array's quiesce, and reads {@link #reshape} only once entered. */
    @Override
    protected void readBlocks(long offset, ByteBuffer dst) throws IOException {
        int length = dst.remaining();
        quiesce.enter();
        try {
            checkOpen();   // again: a close may have run while this request waited to enter
            Reshaper r = reshape;
            if (length > 0 && (r == null || !r.read(offset, dst, dst.position(), length))) {
                parts.reads.read(offset, dst, dst.position(), length);
            }
        } finally {
            quiesce.exit();
        }
        dst.position(dst.limit());
    }

    @Override
    protected void writeBlocks(long offset, ByteBuffer src) throws IOException {
        quiesce.enter();
        try {
            checkOpen();
            Reshaper r = reshape;
            if (r == null || !r.write(offset, src, src.position(), src.remaining())) {
                parts.writes.write(offset, src, src.position(), src.remaining());
            }
        } finally {
            quiesce.exit();
        }
        src.position(src.limit());
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
    protected void discardBlocks(long offset, long length) throws IOException {
        quiesce.enter();
        try {
            checkOpen();
            Reshaper r = reshape;
            while (r != null && length > 0) {
                int piece = (int) Math.min(length, DISCARD_PIECE_BYTES);
                if (!r.write(offset, null, 0, piece)) {
                    break;   // the reshape finished: the new parts take the rest
                }
                offset += piece;
                length -= piece;
            }
            if (length > 0) {
                parts.writes.discard(offset, length);
            }
        } finally {
            quiesce.exit();
        }
    }

    /** Flushes every active member (data and parity); a member whose flush fails is marked faulty. */
    @Override
    protected void flushDevice() throws IOException {
        quiesce.enter();
        try {
            checkOpen();
            Reshaper r = reshape;
            if (r == null || !r.flush()) {
                parts.members.flush();
            }
        } finally {
            quiesce.exit();
        }
    }

    /**
     * Flushes, marks the array clean in the superblocks (if it is usable) and closes the members. Call it
     * after the last I/O has returned; I/O after close fails with {@link java.nio.channels.ClosedChannelException}.
     * Requests still running when it is called are waited for (the array is suspended) before the flush.
     */
    @Override
    public void close() throws IOException {
        synchronized (policySwitch) {   // a policy switch under way writes the superblocks before the clean ones
            closeUnderSwitchLock();
        }
    }

    private void closeUnderSwitchLock() throws IOException {
        Reshaper r = reshape;
        if (r != null) {
            r.stop();   // records the position reached; the superblocks keep saying reshape
            r.flush();
        }
        ArrayParts p = current();
        if (p.members.closed) {
            return;
        }
        p.members.closed = true;   // new requests fail from here on; the sync does not restart
        p.sync.stop();             // before the suspend: its steps would wait for the resume
        p.superblocks.stopBitmapDaemon();
        quiesce.suspend();
        try {
            closeMembers(p);
        } finally {
            quiesce.resume();      // whoever waited to enter finds the array closed
        }
    }

    /** With no request in flight: flushes, marks the array clean (if usable) and closes the members. */
    private static void closeMembers(ArrayParts p) throws IOException {
        IOException first = null;
        try {
            if (!p.members.failed) {
                long rowsBeforeFlush = p.members.recoveredRows;
                p.members.flush();
                synchronized (p.members.lock) {
                    p.superblocks.closeCleanLocked(rowsBeforeFlush,
                            p.members.failedRole >= 0 || p.sync.resyncPendingLocked());
                }
            }
        } catch (IOException e) {
            first = e;
        }
        p.io.close();
        for (BlockDevice d : p.members.allDevices()) {
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
        ArrayParts p = current();
        try {
            p.members.checkOpen();
        } catch (IOException e) {
            ArrayParts now = current();
            if (now == p) {
                throw e;
            }
            now.members.checkOpen();   // a finished reshape closed the old parts just after replacing them
        }
    }

    /** The parts of the current geometry, for the controls (reading {@link #reshape} first publishes them). */
    private ArrayParts current() {
        Reshaper r = reshape;
        return parts;
    }

    // ----------------------------------------------------------------------------------------- reshape

    /**
     * Grows the array onto its first spares to {@code raidDevices} members, online (md's {@code raid_disks}
     * attribute, {@code mdadm --grow --raid-devices}); see {@link #reshape}. Nothing happens when it has that many.
     */
    public void setRaidDevices(int raidDevices) throws IOException {
        refuseWhileReshaping();
        if (raidDevices != raidDevices()) {
            reshape(raidDevices, chunkBytes());
        }
    }

    /**
     * Changes the chunk size to {@code chunkBytes}, online (md's {@code chunk_size} attribute, {@code mdadm --grow
     * --chunk}); see {@link #reshape}. Nothing happens when the chunk is that size already.
     */
    public void setChunkSize(int chunkBytes) throws IOException {
        refuseWhileReshaping();
        if (chunkBytes != chunkBytes()) {
            reshape(raidDevices(), chunkBytes);
        }
    }

    /** A second reshape, or the same again, while one runs: refused, never taken for "nothing to do". */
    private void refuseWhileReshaping() {
        Reshaper running = reshape;
        if (running != null) {
            throw new IllegalStateException(name + ": a reshape to " + running.newMemberCount() + " members of "
                    + running.newChunkBytes() / 1024 + " KiB chunks is running; wait until it ends");
        }
    }

    /**
     * Reshapes the array to {@code raidDevices} members (its first spares join) of {@code chunkBytes} chunks,
     * online ({@code mdadm --grow --raid-devices N --chunk C}): the data moves to the new geometry in the
     * background, resumable after a crash, and when it is done {@link #size()} has grown (when members were added)
     * and the capacity listeners are told. A partial parity log is not compatible with a reshape (as in md): the
     * policy is resync while it runs and ppl again after it.
     *
     * @throws IllegalArgumentException or {@link IllegalStateException} saying why it cannot start (degraded, too
     *                                  few spares, a sync action running, a bitmap, no room to move the data offset,
     *                                  a chunk that does not divide the member size, fewer members, nothing to change)
     */
    public void reshape(int raidDevices, int chunkBytes) throws IOException {
        synchronized (policySwitch) {
            checkOpen();
            refuseWhileReshaping();
            if (chunkBytes % 512 != 0) {
                throw new IllegalArgumentException(name + ": chunk_size " + chunkBytes + " is not a multiple of 512");
            }
            int chunkSectors = chunkBytes / 512;
            ArrayParts p = parts;
            Md1Superblock template;
            synchronized (p.members.lock) {
                template = p.superblocks.templateCopyLocked();
            }
            boolean hadPpl = p.consistencyPolicy == ConsistencyPolicy.PPL;
            Reshaper.checkCanReshape(p, template, raidDevices, chunkSectors, hadPpl);   // before the policy switch below
            if (hadPpl) {
                LOG.info("{}: ppl is not compatible with reshape (as in md): consistency policy resync while it runs",
                        name);
                switchPolicyLocked(ConsistencyPolicy.RESYNC);
            }
            Raid5Options after = hadPpl ? options.withConsistencyPolicy(ConsistencyPolicy.PPL) : options;
            Reshaper r;
            try {
                r = Reshaper.begin(this, p, template, raidDevices, chunkSectors, hadPpl, after);
            } catch (RuntimeException e) {
                if (hadPpl) {
                    switchPolicyLocked(ConsistencyPolicy.PPL);
                }
                throw e;
            }
            // Once no request is in flight, every later one reads the reshape and passes its gate: the mover
            // needs to wait for no request it cannot count.
            quiesce.suspend();
            reshape = r;
            quiesce.resume();
            r.start();
        }
    }

    /** md's raid_disks: the member count, the new one while a reshape runs. */
    public int raidDevices() {
        Reshaper r = reshape;
        return r != null ? r.newMemberCount() : parts.geo.members;
    }

    /**
     * Registers {@code listener} to be told the size in bytes whenever a reshape has finished (grown by members, or
     * the same size after a chunk change): the SCSI layer raises CAPACITY DATA HAS CHANGED from it, the server
     * rewrites the array's configuration entry. Called on the reshape thread.
     */
    public void addCapacityListener(LongConsumer listener) {
        capacityListeners.add(listener);
    }

    /**
     * Waits until no reshape runs (finished, or stopped: see {@link #syncProgress()}).
     *
     * @return false if the time ran out first
     */
    public boolean awaitReshape(long timeout, TimeUnit unit) throws InterruptedException {
        Reshaper r = reshape;
        return r == null || r.await(timeout, unit);
    }

    /** Builds the parts of a finished reshape's geometry and makes them the array's; the reshape gate is closed. */
    void installParts(Md1Superblock template, MemberSet.Member[] roles, List<MemberSet.Member> spares,
                      Raid5Options newOptions) throws IOException {
        parts = new ArrayParts(name, blockSize, stats, template, roles, spares, List.of(), 0, null, newOptions, quiesce);
    }

    /** The reshape is over: the new parts serve every request, their sync starts, the listeners learn the size. */
    void reshapeDone() {
        ArrayParts p = parts;
        reshape = null;
        p.sync.start();
        for (LongConsumer listener : capacityListeners) {
            try {
                listener.accept(p.geo.size);
            } catch (RuntimeException e) {   // the reshape is done; one listener's failure must not hide that
                LOG.error("{}: a listener of the finished reshape failed: {}", name, e.toString());
            }
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
        return current().cache.capacity();
    }

    /** Rows the stripe cache holds memory for right now (md's stripe_cache_active). */
    public int stripeCacheActive() {
        return current().cache.allocated();
    }

    /** Sets the stripe cache capacity in rows (1..32768); shrinking frees unpinned rows at once. */
    public void setStripeCacheSize(int rows) {
        ArrayParts p = current();
        p.cache.setCapacity(rows);
        LOG.info("{}: stripe cache size set to {} rows ({} KiB each)", name, rows,
                (long) p.geo.chunk * p.geo.members / 1024);
    }

    public boolean checkParityOnReads() {
        return current().reads.checkParityOnReads();
    }

    public void setCheckParityOnReads(boolean enabled) {
        current().reads.setCheckParityOnReads(enabled);
        LOG.info("{}: check_parity_on_reads {}", name, enabled ? "on" : "off");
    }

    /** Marks member {@code role} faulty as if it had returned an I/O error (operator action, like mdadm --fail). */
    public void failMember(int role) throws IOException {
        // during a reshape a failure stops it (it does not run degraded); the old geometry keeps serving
        current().members.failMember(role);
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
        current().members.addSpare(device, blockSize);
    }

    /**
     * Puts the faulty member of {@code role} back with the device it still holds (like {@code mdadm --re-add}),
     * once that device works again (a remote target that came back): with the write-intent bitmap only the
     * regions written since it failed are rebuilt, else all of it (see MemberReAdd). Returns whether the
     * rebuild is the bitmap's.
     *
     * @throws IllegalStateException when the member is not faulty with its device attached, or the array failed
     */
    public boolean reAddMember(int role) {
        refuseWhileReshaping("re-add member " + role);
        ArrayParts p = current();
        return MemberReAdd.start(name, p.members, p.superblocks, p.sync, role);
    }

    /**
     * Brings the array back after it failed, as stopping it and {@code mdadm --assemble --force} would: the members
     * that turned faulty as it failed (remote targets that died at once) are taken back in sync once their devices
     * answer, and the member that left first is re-added (see ForcedReturn). Returns what was done, a line per
     * member.
     *
     * @throws IllegalStateException naming the reason, with nothing changed, when the array has not failed or a
     *                               member to take back does not answer
     */
    public List<String> forceAssemble() {
        refuseWhileReshaping("force the array back");
        ArrayParts p = current();
        return ForcedReturn.start(name, p.members, p.superblocks, p.sync);
    }

    /**
     * Puts back a member that failed and was removed, given its device again (like {@code mdadm --re-add} of a
     * removed disk): the role comes from the device's superblock, which must be that member's own, and the role
     * must still be empty; the rebuild is the bitmap's where there is one, else whole (see {@link #reAddMember(int)}).
     * The array owns the device from then on.
     *
     * @return the role the device holds again
     * @throws IllegalArgumentException when the device carries no superblock of this array's removed member, so
     *                                  that the caller may add it as a spare instead; nothing changed then
     */
    public int reAddMember(BlockDevice device) throws IOException {
        refuseWhileReshaping("re-add " + device.name());
        Md1Superblock sb;
        if (device.size() < Md1Superblock.OFFSET_BYTES + Md1Superblock.BLOCK_BYTES) {
            throw new IllegalArgumentException(name + ": " + device.name() + " is too small to carry a superblock");
        }
        ByteBuffer block = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
        device.read(Md1Superblock.OFFSET_BYTES, block);
        sb = Md1Superblock.decode(block.flip(), device.name());
        ArrayParts p = current();
        return MemberReAdd.startWithDevice(name, p.members, p.superblocks, p.sync, device, sb);
    }

    /**
     * Detaches the faulty member of {@code role} (like {@code mdadm --remove}): its device is closed and
     * the role is missing until a spare is added. Only a faulty member can be removed.
     *
     * @throws IllegalStateException when the member is active or being rebuilt (fail it first)
     */
    public void removeMember(int role) throws IOException {
        current().members.removeMember(role);
    }

    public Raid5Status status() {
        List<Raid5Status.Member> roles;
        List<String> spareNames;
        long events;
        ArrayParts p = current();
        synchronized (p.members.lock) {
            events = p.superblocks.events();
            roles = p.members.describeRolesLocked();
            if (!p.members.reshapeTargets.isEmpty()) {
                // md lists the members a reshape grows onto with their new roles: [4/4] [UUUU] while 3 -> 4 runs
                List<Raid5Status.Member> grown = new java.util.ArrayList<>(roles);
                for (MemberSet.Member t : p.members.reshapeTargets) {
                    grown.add(new Raid5Status.Member(grown.size(), t.displayName, Raid5Status.MemberState.ACTIVE));
                }
                roles = List.copyOf(grown);
            }
            spareNames = p.members.spareNamesLocked();
        }
        return new Raid5Status(name, p.members.health(), roles, events, p.geo.size, p.geo.chunk, p.geo.layout,
                spareNames, syncProgress(), p.sync.mismatchCount(), p.consistencyPolicy, p.startRecovery);
    }

    /** How this array keeps parity consistent across a crash (md's consistency_policy). */
    public ConsistencyPolicy consistencyPolicy() {
        return current().consistencyPolicy;
    }

    /**
     * Switches between {@code ppl} and {@code resync} on the running array, as md's writable
     * {@code consistency_policy} attribute does. To ppl: the log is placed and emptied on every member, the
     * array is suspended (no row update in flight) while row updates start logging, the members are flushed,
     * and then the superblocks say ppl (until then a crash means a resync, as before). To resync: the
     * superblocks stop saying ppl first, then updates stop logging (suspended likewise). The write-intent bitmap shares the log's space; switching to or from it needs a
     * restart with the new {@code consistency_policy}.
     *
     * @throws IllegalArgumentException naming why the switch is refused; nothing changed then
     */
    public void setConsistencyPolicy(ConsistencyPolicy policy) throws IOException {
        synchronized (policySwitch) {
            checkOpen();
            if (reshape != null) {
                throw new IllegalStateException(name + ": a reshape is running; the policy is resync until it is done "
                        + "(ppl is not compatible with reshape)");
            }
            switchPolicyLocked(policy);
        }
    }

    /** Switches the consistency policy; the caller holds the policy lock. */
    private void switchPolicyLocked(ConsistencyPolicy policy) throws IOException {
        ArrayParts p = parts;
        ConsistencyPolicy current = p.consistencyPolicy;
        if (policy == current) {
            return;
        }
        if (policy == ConsistencyPolicy.BITMAP || current == ConsistencyPolicy.BITMAP) {
            throw new IllegalArgumentException(name + ": switching between " + current.mdName() + " and "
                    + policy.mdName() + " needs a restart with consistency_policy " + policy.mdName()
                    + " (the write-intent bitmap and the partial parity log share the space after the superblock);"
                    + " on a running array ppl and resync switch");
        }
        if (policy == ConsistencyPolicy.PPL) {
            String[] why = new String[1];
            Md1Superblock placement;
            synchronized (p.members.lock) {
                placement = p.superblocks.partialParityLogPlacementLocked(why);
            }
            if (placement == null) {
                throw new IllegalArgumentException(name + ": " + why[0]);
            }
            PartialParityLog log = new PartialParityLog(name, p.geo, p.members, placement, blockSize, stats);
            log.writeEmptyHeaders();
            switchLogSuspended(p, log);
            // the unlogged updates before the switch reach the disks before any superblock says ppl: a replay
            // after a power loss would not cover them (md writes its superblocks with a preflush)
            p.members.flush();
            synchronized (p.members.lock) {
                p.superblocks.switchPartialParityLogLocked(true, placement);
            }
        } else {
            synchronized (p.members.lock) {
                p.superblocks.switchPartialParityLogLocked(false, null);
            }
            switchLogSuspended(p, null);
        }
        p.consistencyPolicy = policy;
        LOG.info("{}: consistency policy {} (was {})", name, policy.mdName(), current.mdName());
    }

    /** Starts or stops logging with no row update in flight: each one runs wholly with or without the log. */
    private void switchLogSuspended(ArrayParts p, PartialParityLog log) {
        quiesce.suspend();
        try {
            p.updater.switchLog(log);
        } finally {
            quiesce.resume();
        }
    }

    /** What recovery the array did at open before serving (the partial parity log's replay), or empty. */
    public String startRecovery() {
        return current().startRecovery;
    }

    /** Problems assemble found and worked around (stale, foreign or missing members); empty when none. */
    public List<String> assemblyProblems() {
        return assemblyProblems;
    }

    /** Whether the superblocks said the array was shut down cleanly when it was opened. */
    public boolean wasCleanAtOpen() {
        return cleanAtOpen;
    }

    /** md's chunk_size: the chunk in bytes, the new one while a reshape runs (as {@link #raidDevices()}). */
    public int chunkBytes() {
        Reshaper r = reshape;
        return r != null ? r.newChunkBytes() : parts.geo.chunk;
    }

    /** The smallest device that can be a member or spare: data offset + used member size, in bytes. */
    public long memberBytes() {
        return current().geo.memberBytes();
    }

    public int memberCount() {
        return current().geo.members;
    }

    public Raid5Layout layout() {
        return current().geo.layout;
    }

    /** The set UUID as mdadm prints it. */
    public String uuid() {
        return current().superblocks.uuid();
    }

    /**
     * Recomputes the parity of every row from its data (md's resync) and returns when done; other I/O may
     * run meanwhile. Used by {@link #create} on members that were not zero; after an unclean shutdown the
     * resync starts by itself at open.
     *
     * @throws IOException when the resync cannot complete (degraded, failed or closed array)
     */
    public void resync() throws IOException {
        refuseWhileReshaping("resync");
        current().sync.resync();
    }

    // ----------------------------------------------------------------------------------------- sync

    /** md's sync_action: what the sync thread is doing ("idle", "frozen", "resync", "recover", "check", "repair"). */
    public String syncAction() {
        Reshaper r = reshape;
        return r != null ? r.progress().action() : parts.sync.action();
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
        refuseWhileReshaping(action);
        current().sync.setAction(action);
    }

    /** Progress of the running sync action; see {@link SyncProgress}. */
    public SyncProgress syncProgress() {
        Reshaper r = reshape;
        return r != null ? r.progress() : parts.sync.progress();
    }

    /** md's mismatch_cnt: 512-byte sectors found inconsistent by the last check or repair (8 per 4 KiB page). */
    public long mismatchCount() {
        return current().sync.mismatchCount();
    }

    /** md's sync_speed_min in KiB/s: the sync runs at least this fast even with foreground I/O. */
    public int syncSpeedMin() {
        return current().sync.speedMin();
    }

    public void setSyncSpeedMin(int kibPerSecond) {
        current().sync.setSpeedMin(kibPerSecond);
    }

    /** md's sync_speed_max in KiB/s: the sync never runs faster. */
    public int syncSpeedMax() {
        return current().sync.speedMax();
    }

    public void setSyncSpeedMax(int kibPerSecond) {
        current().sync.setSpeedMax(kibPerSecond);
    }

    /**
     * Waits until no sync action runs or is pending (for tests and the CLI's "wait").
     *
     * @return false if the time ran out first
     */
    public boolean awaitSyncIdle(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        if (!awaitReshape(timeout, unit)) {
            return false;
        }
        timeout = Math.max(0, deadline - System.nanoTime());
        unit = TimeUnit.NANOSECONDS;
        return current().sync.awaitIdle(timeout, unit);
    }

    private void refuseWhileReshaping(String action) {
        Reshaper r = reshape;
        if (r != null) {
            throw new IllegalStateException(name + ": cannot " + action + " while a reshape to " + r.newMemberCount()
                    + " members runs (md's sync_action says reshape); wait for it to finish");
        }
    }

    @Override
    public String toString() {
        StripeGeometry geo = current().geo;
        return "Raid5Array[" + name + ", " + geo.members + " members, " + geo.chunk / 1024 + "K chunk, "
                + geo.layout.mdName() + "]";
    }
}
