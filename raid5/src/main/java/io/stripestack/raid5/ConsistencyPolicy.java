package io.stripestack.raid5;

import java.util.Locale;

/**
 * How an array keeps parity consistent across a crash, md's {@code consistency_policy}: {@link #PPL} logs the
 * partial parity of every row update first (no resync after a crash, no write hole); {@link #BITMAP} records
 * the regions being written (a crash resyncs those; the write hole stays open); {@link #RESYNC} records
 * nothing (a crash resyncs everything; the write hole stays open).
 */
public enum ConsistencyPolicy {
    PPL, BITMAP, RESYNC;

    /** md's name, as mdadm's "Consistency Policy" shows it. */
    public String mdName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The policy md calls {@code name}; IllegalArgumentException listing the names otherwise. */
    public static ConsistencyPolicy fromMdName(String name) {
        for (ConsistencyPolicy p : values()) {
            if (p.mdName().equals(name)) {
                return p;
            }
        }
        throw new IllegalArgumentException("consistency policy '" + name + "' is not one of ppl, bitmap, resync");
    }

    /** The policy a superblock records. */
    static ConsistencyPolicy of(Md1Superblock sb) {
        return sb.hasPpl() ? PPL : sb.hasBitmap() ? BITMAP : RESYNC;
    }
}
