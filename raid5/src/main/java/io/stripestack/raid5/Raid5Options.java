package io.stripestack.raid5;

/**
 * Run-time settings of an opened array (none is stored on the members).
 *
 * @param stripeCacheRows    stripe cache capacity in rows; 0 = automatic ({@link Raid5Array#defaultStripeCacheRows})
 * @param checkParityOnReads verify the parity of every row a read touches (off by default)
 * @param ioThreads          member I/O threads; 0 = two per member, at least 4, at most 64
 * @param allowDegraded      whether assemble may start the array with one member missing, stale or foreign
 */
public record Raid5Options(int stripeCacheRows, boolean checkParityOnReads, int ioThreads, boolean allowDegraded) {
    public Raid5Options {
        if (stripeCacheRows != 0) {
            StripeCache.checkCapacity(stripeCacheRows);
        }
        if (ioThreads < 0 || ioThreads > 256) {
            throw new IllegalArgumentException("ioThreads " + ioThreads + " must be 0 (automatic) .. 256");
        }
    }

    public static Raid5Options defaults() {
        return new Raid5Options(0, false, 0, true);
    }

    public Raid5Options withStripeCacheRows(int rows) {
        return new Raid5Options(rows, checkParityOnReads, ioThreads, allowDegraded);
    }

    public Raid5Options withAllowDegraded(boolean allow) {
        return new Raid5Options(stripeCacheRows, checkParityOnReads, ioThreads, allow);
    }
}
