package io.stripestack.raid5;

/**
 * Run-time settings of an opened array (none is stored on the members).
 *
 * @param stripeCacheRows    stripe cache capacity in rows; 0 = automatic ({@link Raid5Array#defaultStripeCacheRows})
 * @param checkParityOnReads verify the parity of every row a read touches (off by default)
 * @param ioThreads          member I/O threads; 0 = two per member, at least 4, at most 64
 * @param allowDegraded      whether assemble may start the array with one member missing, stale or foreign
 * @param startDirtyDegraded whether assemble may start an array that was not shut down cleanly AND is
 *                           degraded (md's {@code start_dirty_degraded}): rows written at the time of the
 *                           crash may have stale parity, so the missing member's chunks in them can be
 *                           rebuilt wrong (the RAID-5 write hole); off by default
 * @param bitmapChunkBytes   member bytes per write-intent bitmap bit when a bitmap is created (an array
 *                           without one gets one at open if there is room before the data offset);
 *                           0 = mdadm's 64 MiB, doubled as needed to fit; a power of two otherwise
 * @param consistencyPolicy  how parity survives a crash; null keeps what the members record (a new array:
 *                           {@link ConsistencyPolicy#BITMAP}); a different policy is switched to at open, after
 *                           the members' own one has recovered what it must
 * @param force              what {@code mdadm --assemble --force} does: when too few members are current to
 *                           start, the freshest members that left the array only as it failed are taken back in
 *                           sync, the other left-behind ones become spares rebuilt onto, and a dirty degraded
 *                           start is allowed (see {@link Raid5Assembler}); off by default
 */
public record Raid5Options(int stripeCacheRows, boolean checkParityOnReads, int ioThreads, boolean allowDegraded,
                           boolean startDirtyDegraded, long bitmapChunkBytes, ConsistencyPolicy consistencyPolicy,
                           boolean force) {
    public Raid5Options {
        if (stripeCacheRows != 0) {
            StripeCache.checkCapacity(stripeCacheRows);
        }
        if (ioThreads < 0 || ioThreads > 256) {
            throw new IllegalArgumentException("ioThreads " + ioThreads + " must be 0 (automatic) .. 256");
        }
        if (bitmapChunkBytes != 0 && (bitmapChunkBytes < 4096 || Long.bitCount(bitmapChunkBytes) != 1)) {
            throw new IllegalArgumentException("bitmap chunk " + bitmapChunkBytes
                    + " bytes must be 0 (mdadm's 64 MiB) or a power of two of at least 4096");
        }
    }

    /** The settings without {@code startDirtyDegraded} (off). */
    public Raid5Options(int stripeCacheRows, boolean checkParityOnReads, int ioThreads, boolean allowDegraded) {
        this(stripeCacheRows, checkParityOnReads, ioThreads, allowDegraded, false, 0, null, false);
    }

    public static Raid5Options defaults() {
        return new Raid5Options(0, false, 0, true, false, 0, null, false);
    }

    public Raid5Options withStripeCacheRows(int rows) {
        return new Raid5Options(rows, checkParityOnReads, ioThreads, allowDegraded, startDirtyDegraded, bitmapChunkBytes, consistencyPolicy, force);
    }

    public Raid5Options withAllowDegraded(boolean allow) {
        return new Raid5Options(stripeCacheRows, checkParityOnReads, ioThreads, allow, startDirtyDegraded, bitmapChunkBytes, consistencyPolicy, force);
    }

    public Raid5Options withBitmapChunkBytes(long bytes) {
        return new Raid5Options(stripeCacheRows, checkParityOnReads, ioThreads, allowDegraded, startDirtyDegraded, bytes, consistencyPolicy, force);
    }

    public Raid5Options withStartDirtyDegraded(boolean start) {
        return new Raid5Options(stripeCacheRows, checkParityOnReads, ioThreads, allowDegraded, start, bitmapChunkBytes, consistencyPolicy, force);
    }

    public Raid5Options withConsistencyPolicy(ConsistencyPolicy policy) {
        return new Raid5Options(stripeCacheRows, checkParityOnReads, ioThreads, allowDegraded, startDirtyDegraded,
                bitmapChunkBytes, policy, force);
    }

    public Raid5Options withForce(boolean forceAssembly) {
        return new Raid5Options(stripeCacheRows, checkParityOnReads, ioThreads, allowDegraded, startDirtyDegraded,
                bitmapChunkBytes, consistencyPolicy, forceAssembly);
    }
}
