package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MediumErrorException;
import io.stripestack.blockdev.MeteredBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
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
 *       window, holds; the row locks reads take. {@link RowUpdater}: one row update (full-stripe,
 *       read-modify-write or reconstruct-write, through the {@link StripeCache}).</li>
 *   <li>{@link SyncEngine}: md's sync actions (resync, recover, check, repair) on their own threads,
 *       with progress and speed limits.</li>
 *   <li>{@link MemberSet}: member health, spares, failures (a member that fails an I/O, or
 *       {@link #failMember}, is marked faulty; its chunks are then rebuilt from the others on read and
 *       implied by parity on write; a second failure stops all I/O with {@link MediumErrorException}).
 *       Its state lock also guards the sync state and the superblocks.</li>
 *   <li>{@link Superblocks}: the superblocks and the write-intent bitmap. {@link PartialParityLog}: md's
 *       partial parity log, replayed at open after a crash, written before every row update when the
 *       {@link ConsistencyPolicy} is ppl.</li>
 * </ul>
 *
 * <p>Any number of threads may call read, write, discard and flush (the BlockDevice contract); the
 * controls are thread-safe. Lifecycle (md's sync_action): {@link #addSpare} adds a hot spare, onto which
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
    /** md's default sync_speed_min / sync_speed_max, KiB/s. */
    public static final int DEFAULT_SYNC_SPEED_MIN = 1000;
    public static final int DEFAULT_SYNC_SPEED_MAX = 200000;
    /** The layer counters of {@link #stats()}, in the order they are listed. */
    private static final List<String> LAYER_COUNTERS = List.of("full_stripe_writes", "rmw_writes",
            "reconstruct_writes", "member_prereads", "degraded_reads", "stripe_cache_hits", "held_writes",
            "parity_mismatches", "read_errors_corrected", "ppl_writes", "ppl_bytes", "ppl_rows", "ppl_area_restarts");

    private final String name;
    private final StripeGeometry geo;
    private final int blockSize;
    private final Geometry ioHints;
    private final List<String> assemblyProblems;
    private final boolean cleanAtOpen;
    /** Switched by {@link #setConsistencyPolicy} under {@link #policySwitch}. */
    private volatile ConsistencyPolicy consistencyPolicy;
    private final Object policySwitch = new Object();
    private final RowUpdater updater;
    /** What the partial parity log's replay did at open, or empty when there was none. */
    private final String startRecovery;
    private final StripeCache cache;
    private final MemberIoExecutor io;
    private final MemberSet members;
    private final Superblocks superblocks;
    private final WriteScheduler writes;
    private final ReadPath reads;
    private final SyncEngine sync;

    /**
     * Opens an array whose superblock facts were checked by the caller ({@link #create} or
     * {@link Raid5Assembler}), marks it active in the superblocks (events + 1) and starts its threads.
     */
    Raid5Array(Md1Superblock template, MemberSet.Member[] roles, List<MemberSet.Member> spareMembers,
               long resumeRecoveryRows, WriteIntentBitmap loadedBitmap, Raid5Options options,
               List<String> assemblyProblems) throws IOException {
        super(template.setName);
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
        this.cache = new StripeCache(geo.members, geo.chunk, options.stripeCacheRows() > 0 ? options.stripeCacheRows()
                : defaultStripeCacheRows(geo.members, geo.chunk));
        // Registration order is the order status and the Prometheus text list the counters in.
        for (String counter : LAYER_COUNTERS) {
            stats.counter(counter);
        }
        this.members = new MemberSet(name, geo, roles, spareMembers, resumeRecoveryRows);
        boolean recordsLog = template.hasPpl();
        this.consistencyPolicy = options.consistencyPolicy() != null ? options.consistencyPolicy()
                : recordsLog ? ConsistencyPolicy.PPL : ConsistencyPolicy.BITMAP;
        this.startRecovery = recordsLog && !template.isClean() ? replayLog(template, options) : "";
        if (consistencyPolicy != ConsistencyPolicy.PPL) {
            template.featureMap &= ~(Md1Superblock.FEATURE_PPL | Md1Superblock.FEATURE_MULTIPLE_PPLS);
        } else if (!recordsLog) {
            template.featureMap = (template.featureMap & ~Md1Superblock.FEATURE_BITMAP) | Md1Superblock.FEATURE_PPL;
            PartialParityLog.place(template);
        } else {
            // never into md's bad-block log, whatever the recorded size says
            template.pplSize = (int) Math.min(template.pplSize, WriteIntentBitmap.roomBeforeData(template) / 512);
        }
        PartialParityLog ppl = null;
        if (consistencyPolicy == ConsistencyPolicy.PPL) {
            String why = PartialParityLog.whyNot(template);
            if (why != null) {
                members.closeRoleDevices();
                throw new IllegalArgumentException(name + ": " + why);
            }
            ppl = new PartialParityLog(name, geo, members, template, blockSize, stats);
            ppl.writeEmptyHeaders();
        }
        WriteIntentBitmap bitmap = consistencyPolicy != ConsistencyPolicy.BITMAP ? null
                : loadedBitmap != null ? loadedBitmap
                : geo.members <= 64 ? WriteIntentBitmap.create(template, options.bitmapChunkBytes()) : null;
        if (bitmap == null && consistencyPolicy == ConsistencyPolicy.BITMAP) {
            consistencyPolicy = ConsistencyPolicy.RESYNC;   // no room for a bitmap before the data
        }
        this.superblocks = new Superblocks(name, geo, template, bitmap, ppl != null, members);
        int threads = options.ioThreads() > 0 ? options.ioThreads() : MemberIoExecutor.defaultThreads(geo.members);
        this.io = new MemberIoExecutor(name, threads);
        Xor xor = Xor.best();
        this.updater = new RowUpdater(geo, members, superblocks, cache, io, xor, stats, ppl, blockSize);
        this.writes = new WriteScheduler(name, geo, updater, ByteBuffer.allocateDirect(geo.chunk),
                stats.counter("held_writes"));
        this.reads = new ReadPath(name, geo, members, writes, io, xor, stats, options.checkParityOnReads());
        this.sync = new SyncEngine(name, geo, members, superblocks, writes, updater, io, xor, stats, template,
                bitmap != null && bitmap == loadedBitmap);
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
        LOG.info("{}: raid5 {} members, {} KiB chunk, {}, {} bytes, {}; consistency policy {}; xor {}; stripe cache {} "
                        + "rows; {} I/O threads", name, geo.members, geo.chunk / 1024, geo.layout.mdName(), geo.size,
                members.failedRole < 0 ? "clean" : "DEGRADED", consistencyPolicy.mdName(), xor.name(),
                cache.capacity(), threads);
        sync.start();
    }

    /**
     * Replays the partial parity log of an array that was not shut down cleanly, before anything else
     * touches the members. When every present member's log was intact, the rows that were in flight have
     * consistent parity again and the array counts as clean (md does the same): no resync, and a degraded
     * start is safe. Otherwise the usual rules for a dirty array apply.
     */
    private String replayLog(Md1Superblock template, Raid5Options options) throws IOException {
        PartialParityLog.Recovery r;
        try {
            r = new PartialParityLog(name, geo, members, template, blockSize, stats).recover();
            members.flush();
        } catch (IOException | RuntimeException e) {
            members.closeRoleDevices();
            throw e;
        }
        String what = "partial parity log replayed at start: " + r.describe();
        if (r.clean()) {
            template.resyncOffset = Md1Superblock.RESYNC_DONE;
            LOG.warn("{}: was not shut down cleanly; {}; parity is consistent, no resync needed", name, what);
        } else if (members.failedRole >= 0 && !options.startDirtyDegraded()) {
            members.closeRoleDevices();
            throw new Raid5AssembleException("cannot start " + name + ": it was not shut down cleanly, is degraded, "
                    + "and the partial parity log of a member is unreadable, so rows being written at the crash may "
                    + "have parity that does not match their data (the RAID-5 write hole). Bring the missing member "
                    + "back if you can; otherwise start it anyway with start_dirty_degraded and check the data "
                    + "written last", List.of(what));
        } else {
            LOG.warn("{}: was not shut down cleanly; {}; a resync follows", name, what);
        }
        return what;
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

    /** In range and block-aligned, and the array still open. */
    @Override
    protected void checkRequest(long offset, long length) throws IOException {
        super.checkRequest(offset, length);
        checkOpen();
    }

    @Override
    protected void readBlocks(long offset, ByteBuffer dst) throws IOException {
        int length = dst.remaining();
        if (length > 0) {
            reads.read(offset, dst, dst.position(), length);
        }
        dst.position(dst.limit());
    }

    @Override
    protected void writeBlocks(long offset, ByteBuffer src) throws IOException {
        writes.write(offset, src, src.position(), src.remaining());
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
        writes.discard(offset, length);
    }

    /** Flushes every active member (data and parity); a member whose flush fails is marked faulty. */
    @Override
    protected void flushDevice() throws IOException {
        checkOpen();
        members.flush();
    }

    /**
     * Flushes, marks the array clean in the superblocks (if it is usable) and closes the members. Call it
     * after the last I/O has returned; I/O after close fails with {@link java.nio.channels.ClosedChannelException}.
     */
    @Override
    public void close() throws IOException {
        synchronized (policySwitch) {   // a policy switch under way writes the superblocks before the clean ones
            closeUnderSwitchLock();
        }
    }

    private void closeUnderSwitchLock() throws IOException {
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
        LOG.info("{}: stripe cache size set to {} rows ({} KiB each)", name, rows,
                (long) geo.chunk * geo.members / 1024);
    }

    public boolean checkParityOnReads() {
        return reads.checkParityOnReads();
    }

    public void setCheckParityOnReads(boolean enabled) {
        reads.setCheckParityOnReads(enabled);
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
     * Puts the faulty member of {@code role} back with the device it still holds (like {@code mdadm --re-add}),
     * once that device works again (a remote target that came back): with the write-intent bitmap only the
     * regions written since it failed are rebuilt, else all of it (see MemberReAdd). Returns whether the
     * rebuild is the bitmap's.
     *
     * @throws IllegalStateException when the member is not faulty with its device attached, or the array failed
     */
    public boolean reAddMember(int role) {
        return MemberReAdd.start(name, members, superblocks, sync, role);
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
                spareNames, syncProgress(), sync.mismatchCount(), consistencyPolicy, startRecovery);
    }

    /** How this array keeps parity consistent across a crash (md's consistency_policy). */
    public ConsistencyPolicy consistencyPolicy() {
        return consistencyPolicy;
    }

    /**
     * Switches between {@code ppl} and {@code resync} on the running array, as md's writable
     * {@code consistency_policy} attribute does. To ppl: the log is placed and emptied on every member, row
     * updates start logging, and once none that began unlogged is still running the superblocks say ppl
     * (until then a crash means a resync, as before). To resync: the superblocks stop saying ppl first, then
     * updates stop logging. The write-intent bitmap shares the log's space; switching to or from it needs a
     * restart with the new {@code consistency_policy}.
     *
     * @throws IllegalArgumentException naming why the switch is refused; nothing changed then
     */
    public void setConsistencyPolicy(ConsistencyPolicy policy) throws IOException {
        synchronized (policySwitch) {
            checkOpen();
            ConsistencyPolicy current = consistencyPolicy;
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
                synchronized (members.lock) {
                    placement = superblocks.partialParityLogPlacementLocked(why);
                }
                if (placement == null) {
                    throw new IllegalArgumentException(name + ": " + why[0]);
                }
                PartialParityLog log = new PartialParityLog(name, geo, members, placement, blockSize, stats);
                log.writeEmptyHeaders();
                updater.switchLog(log);
                synchronized (members.lock) {
                    superblocks.switchPartialParityLogLocked(true, placement);
                }
            } else {
                synchronized (members.lock) {
                    superblocks.switchPartialParityLogLocked(false, null);
                }
                updater.switchLog(null);
            }
            consistencyPolicy = policy;
            LOG.info("{}: consistency policy {} (was {})", name, policy.mdName(), current.mdName());
        }
    }

    /** What recovery the array did at open before serving (the partial parity log's replay), or empty. */
    public String startRecovery() {
        return startRecovery;
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

    @Override
    public String toString() {
        return "Raid5Array[" + name + ", " + geo.members + " members, " + geo.chunk / 1024 + "K chunk, "
                + geo.layout.mdName() + "]";
    }
}
