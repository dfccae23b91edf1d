package io.stripestack.raid5;

import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MediumErrorException;
import io.stripestack.blockdev.Quiesce;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The parts of a {@link Raid5Array} that belong to one geometry: the members as roles, the superblocks, the
 * stripe cache, the read and write paths, the sync engine and their threads. The array holds one set at a
 * time; a finished reshape replaces it with a set built for the new geometry (see {@link Reshaper}).
 *
 * <p>Concurrency: built on one thread before any I/O reaches it; its fields are final except the
 * consistency policy, which {@link Raid5Array#setConsistencyPolicy} switches. Each part documents its own
 * locking.
 */
final class ArrayParts {
    private static final Logger LOG = LoggerFactory.getLogger(ArrayParts.class);

    final StripeGeometry geo;
    final Geometry ioHints;
    /** Switched by {@link Raid5Array#setConsistencyPolicy} under the array's policy lock. */
    volatile ConsistencyPolicy consistencyPolicy;
    final RowUpdater updater;
    /** What the partial parity log's replay did at open, or empty when there was none. */
    final String startRecovery;
    final StripeCache cache;
    final MemberIoExecutor io;
    final MemberSet members;
    final Superblocks superblocks;
    final WriteScheduler writes;
    final ReadPath reads;
    final SyncEngine sync;

    /**
     * Opens the parts for the geometry {@code template} describes, marks the array active in the superblocks
     * (events + 1) and starts their threads. {@code reshapeTargets} are the members a reshape grows onto
     * (empty when none runs): their superblocks are written with the others', and they are not spares.
     */
    ArrayParts(String name, int blockSize, IoStats stats, Md1Superblock template, MemberSet.Member[] roles,
               List<MemberSet.Member> spareMembers, List<MemberSet.Member> reshapeTargets, long resumeRecoveryRows,
               WriteIntentBitmap loadedBitmap, Raid5Options options, Quiesce quiesce) throws IOException {
        this.geo = StripeGeometry.of(template);
        this.ioHints = geo.ioHints();
        this.cache = new StripeCache(geo.members, geo.chunk, options.stripeCacheRows() > 0 ? options.stripeCacheRows()
                : Raid5Array.defaultStripeCacheRows(geo.members, geo.chunk));
        this.members = new MemberSet(name, geo, roles, spareMembers, resumeRecoveryRows);
        members.reshapeTargets.addAll(reshapeTargets);
        boolean recordsLog = template.hasPpl();
        ConsistencyPolicy policy = options.consistencyPolicy() != null ? options.consistencyPolicy()
                : recordsLog ? ConsistencyPolicy.PPL : ConsistencyPolicy.BITMAP;
        this.startRecovery = recordsLog && !template.isClean() ? replayLog(name, blockSize, stats, template, options) : "";
        if (policy != ConsistencyPolicy.PPL) {
            template.featureMap &= ~Md1Superblock.FEATURE_ANY_PPL;
        } else if (!recordsLog) {
            template.featureMap = (template.featureMap & ~Md1Superblock.FEATURE_BITMAP) | Md1Superblock.FEATURE_PPL;
            PartialParityLog.place(template);
        } else {
            // never into md's bad-block log, whatever the recorded size says
            template.pplSize = (int) Math.min(template.pplSize, WriteIntentBitmap.roomBeforeData(template) / 512);
        }
        PartialParityLog ppl = null;
        if (policy == ConsistencyPolicy.PPL) {
            String why = PartialParityLog.whyNot(template);
            if (why != null) {
                members.closeRoleDevices();
                throw new IllegalArgumentException(name + ": " + why);
            }
            ppl = new PartialParityLog(name, geo, members, template, blockSize, stats);
            ppl.writeEmptyHeaders();
        }
        WriteIntentBitmap bitmap = policy != ConsistencyPolicy.BITMAP ? null
                : loadedBitmap != null ? loadedBitmap
                : geo.members <= 64 ? WriteIntentBitmap.create(template, options.bitmapChunkBytes()) : null;
        if (bitmap == null && policy == ConsistencyPolicy.BITMAP) {
            policy = ConsistencyPolicy.RESYNC;   // no room for a bitmap before the data
        }
        this.consistencyPolicy = policy;
        this.superblocks = new Superblocks(name, geo, template, bitmap, ppl != null, members,
                stats.counter("bitmap_writes"));
        int threads = options.ioThreads() > 0 ? options.ioThreads() : MemberIoExecutor.defaultThreads(geo.members);
        this.io = new MemberIoExecutor(name, threads);
        Xor xor = Xor.best();
        this.updater = new RowUpdater(geo, members, superblocks, cache, io, xor, stats, ppl, blockSize);
        this.writes = new WriteScheduler(name, geo, updater, ByteBuffer.allocateDirect(geo.chunk),
                stats.counter("held_writes"));
        this.reads = new ReadPath(name, geo, members, writes, io, xor, stats, options.checkParityOnReads());
        this.sync = new SyncEngine(name, geo, members, superblocks, writes, updater, io, xor, stats, template,
                bitmap != null && bitmap == loadedBitmap, quiesce);
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
    }

    /**
     * Replays the partial parity log of an array that was not shut down cleanly, before anything else
     * touches the members. When every present member's log was intact, the rows that were in flight have
     * consistent parity again and the array counts as clean (md does the same): no resync, and a degraded
     * start is safe. Otherwise the usual rules for a dirty array apply.
     */
    private String replayLog(String name, int blockSize, IoStats stats, Md1Superblock template, Raid5Options options)
            throws IOException {
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
}
