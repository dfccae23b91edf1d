package io.stripestack.blockdev;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A layer over one device below that keeps its own counters (readahead, encryption): the request checks and
 * metering of {@link MeteredBlockDevice}, and every call the layer does not change passed to the device below,
 * so a layer writes only what it does differently. Unlike {@link ForwardingBlockDevice}, whose counters are the
 * device below's, this one counts what reaches this layer.
 *
 * <p>Concurrency: as thread-safe as the device below; a subclass documents its own state.
 */
public abstract class MeteredForwardingBlockDevice extends MeteredBlockDevice implements StackedBlockDevice {
    protected final BlockDevice below;

    protected MeteredForwardingBlockDevice(String statsName, BlockDevice below) {
        super(statsName);
        this.below = below;
    }

    @Override
    public BlockDevice below() {
        return below;
    }

    @Override
    protected void readBlocks(long offset, ByteBuffer dst) throws IOException {
        below.read(offset, dst);
    }

    @Override
    protected void writeBlocks(long offset, ByteBuffer src) throws IOException {
        below.write(offset, src);
    }

    @Override
    protected void flushDevice() throws IOException {
        below.flush();
    }

    @Override
    protected void discardBlocks(long offset, long length) throws IOException {
        below.discard(offset, length);
    }
}
