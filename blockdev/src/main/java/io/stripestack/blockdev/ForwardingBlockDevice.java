package io.stripestack.blockdev;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A device that passes every call to the one below: a wrapper (a pacing or fault-injecting device, a
 * test's device with another geometry) overrides only what it changes. Counters are the device
 * below's unless a subclass keeps its own. Closing it closes the device below.
 *
 * <p>Concurrency: as thread-safe as the device below; a subclass documents its own state.
 */
public abstract class ForwardingBlockDevice implements StackedBlockDevice {
    protected final BlockDevice below;

    protected ForwardingBlockDevice(BlockDevice below) {
        this.below = below;
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        below.read(offset, dst);
    }

    @Override
    public void write(long offset, ByteBuffer src) throws IOException {
        below.write(offset, src);
    }

    @Override
    public void writeDurable(long offset, ByteBuffer src) throws IOException {
        below.writeDurable(offset, src);
    }

    @Override
    public void flush() throws IOException {
        below.flush();
    }

    @Override
    public void discard(long offset, long length) throws IOException {
        below.discard(offset, length);
    }

    @Override
    public IoStats stats() {
        return below.stats();
    }

    @Override
    public BlockDevice below() {
        return below;
    }
}
