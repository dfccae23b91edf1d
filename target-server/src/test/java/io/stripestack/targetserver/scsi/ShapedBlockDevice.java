package io.stripestack.targetserver.scsi;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.ForwardingBlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MediumErrorException;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A memory device with the geometry, discard support and failures a test asks for: stands in for a
 * RAID-5 array (chunk / stripe hints), a crypto layer (shifted alignment), a device without discard, or
 * a stack that reports a {@link MediumErrorException} at a chosen byte.
 */
class ShapedBlockDevice extends ForwardingBlockDevice {
    private final Geometry geometry;
    private final boolean discard;
    private volatile long mediumErrorOffset = -1;
    private volatile boolean mediumErrorOnWrite;

    ShapedBlockDevice(BlockDevice inner, Geometry geometry, boolean discard) {
        super(inner);
        this.geometry = geometry;
        this.discard = discard;
    }

    /** Reads (or writes) covering {@code offset} fail with a MediumErrorException naming that offset. */
    void failAt(long offset, boolean onWrite) {
        mediumErrorOffset = offset;
        mediumErrorOnWrite = onWrite;
    }

    private void maybeFail(long offset, int length, boolean write) throws MediumErrorException {
        long bad = mediumErrorOffset;
        if (bad >= offset && bad < offset + length && write == mediumErrorOnWrite) {
            throw new MediumErrorException(name() + ": unrecoverable at byte " + bad, bad, write);
        }
    }

    @Override
    public String name() {
        return "shaped(" + below.name() + ")";
    }

    @Override
    public Geometry geometry() {
        return geometry;
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        maybeFail(offset, dst.remaining(), false);
        below.read(offset, dst);
    }

    @Override
    public void write(long offset, ByteBuffer src) throws IOException {
        maybeFail(offset, src.remaining(), true);
        below.write(offset, src);
    }

    @Override
    public boolean supportsDiscard() {
        return discard;
    }

    @Override
    public boolean discardZeroes() {
        return discard && below.discardZeroes();
    }

    @Override
    public void discard(long offset, long length) throws IOException {
        if (!discard) {
            throw new UnsupportedOperationException(name() + " does not support discard");
        }
        below.discard(offset, length);
    }
}
