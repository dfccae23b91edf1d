package io.stripestack.blockdev;

/**
 * I/O hints a layer passes up, like Linux's queue limits (io_min, io_opt, alignment_offset,
 * max_hw_sectors). The SCSI layer turns them into Block Limits VPD (0xB0) and READ CAPACITY(16).
 *
 * @param minimumIo       bytes: the granularity below which writes cost extra (RAID chunk); a power of two
 * @param optimalIo       bytes: the size that costs least per byte (RAID full stripe: chunk x data disks);
 *                        a multiple of {@code minimumIo}
 * @param alignmentOffset bytes: the lowest offset in this device that starts an {@code optimalIo} unit of
 *                        the storage below, in {@code [0, optimalIo)}; 0 when aligned
 * @param maxTransfer     bytes: the largest single request this device wants (0 = no limit)
 */
public record Geometry(int minimumIo, int optimalIo, long alignmentOffset, int maxTransfer) {

    public Geometry {
        if (minimumIo <= 0 || optimalIo <= 0 || optimalIo % minimumIo != 0) {
            throw new IllegalArgumentException("minimumIo " + minimumIo + " must divide optimalIo " + optimalIo);
        }
        if (alignmentOffset < 0 || alignmentOffset >= optimalIo) {
            throw new IllegalArgumentException("alignmentOffset " + alignmentOffset + " outside [0, " + optimalIo + ")");
        }
        if (maxTransfer < 0) {
            throw new IllegalArgumentException("maxTransfer " + maxTransfer + " < 0");
        }
    }

    /** Hints of a plain device with no preferred unit beyond its block. */
    public static Geometry simple(int blockSize) {
        return new Geometry(blockSize, blockSize, 0, 0);
    }

    /**
     * The geometry seen by a layer whose byte 0 lies {@code bytesSkipped} into this device (a crypto
     * payload offset): the alignment moves back by that amount.
     */
    public Geometry shiftedBy(long bytesSkipped) {
        long aligned = Math.floorMod(alignmentOffset - bytesSkipped, (long) optimalIo);
        return new Geometry(minimumIo, optimalIo, aligned, maxTransfer);
    }

    /** Whether offset 0 of this device starts a {@code minimumIo} unit below. */
    public boolean isMinimumIoAligned() {
        return alignmentOffset % minimumIo == 0;
    }

    /** Whether offset 0 of this device starts an {@code optimalIo} unit below. */
    public boolean isOptimalIoAligned() {
        return alignmentOffset == 0;
    }
}
