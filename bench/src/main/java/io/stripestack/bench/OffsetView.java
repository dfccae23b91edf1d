package io.stripestack.bench;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MeteredBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A borrowed window onto another device starting {@code offset} bytes in (dm-linear): the "plain" stack of
 * the alignment study, and the way one prefilled array is shared by the stacks built on it in turn.
 * Closing it closes the device below only if the view was told it owns it; a borrowed array stays open
 * for the next stack.
 *
 * <p>Concurrency: stateless besides the thread-safe counters; any number of callers.
 */
final class OffsetView extends MeteredBlockDevice {
    private final BlockDevice below;
    private final long offset;
    private final boolean ownsBelow;
    private final String name;

    /** @param ownsBelow whether {@link #close()} closes {@code below} */
    OffsetView(BlockDevice below, long offset, boolean ownsBelow) {
        super(below.name() + "+" + offset);
        if (offset < 0 || offset % below.logicalBlockSize() != 0 || offset >= below.size()) {
            throw new IllegalArgumentException("offset " + offset + " into " + below.name() + " must be a multiple of "
                    + below.logicalBlockSize() + " inside its " + below.size() + " bytes");
        }
        this.below = below;
        this.offset = offset;
        this.ownsBelow = ownsBelow;
        this.name = below.name() + "+" + offset;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long size() {
        return below.size() - offset;
    }

    @Override
    public int logicalBlockSize() {
        return below.logicalBlockSize();
    }

    @Override
    public Geometry geometry() {
        return below.geometry().shiftedBy(offset);
    }

    @Override
    protected void readBlocks(long position, ByteBuffer dst) throws IOException {
        below.read(offset + position, dst);
    }

    @Override
    protected void writeBlocks(long position, ByteBuffer src) throws IOException {
        below.write(offset + position, src);
    }

    @Override
    protected void flushDevice() throws IOException {
        below.flush();
    }

    @Override
    public BlockDevice below() {
        return below;
    }

    @Override
    public void close() throws IOException {
        if (ownsBelow) {
            below.close();
        }
    }
}
