package io.stripestack.testkit;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.ForwardingBlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;

/**
 * A device of which only a prefix is visible until {@link #grow}: a device that grows at run time, as an array does
 * after a reshape, for tests of the layers above.
 *
 * <p>Thread-safe: the visible size is volatile; the rest is the device below's.
 */
public final class GrowableBlockDevice extends ForwardingBlockDevice {
    private volatile long visible;

    /** Memory of {@code fullBytes}, the first {@code visibleBytes} visible. */
    public GrowableBlockDevice(String name, long visibleBytes, int fullBytes) {
        this(new MemoryBlockDevice(name, fullBytes, 512), visibleBytes);
    }

    /** {@code full}, of which the first {@code visibleBytes} are visible. */
    public GrowableBlockDevice(BlockDevice full, long visibleBytes) {
        super(full);
        if (visibleBytes <= 0 || visibleBytes > full.size() || visibleBytes % full.logicalBlockSize() != 0) {
            throw new IllegalArgumentException(full.name() + ": visible size " + visibleBytes + " must be a multiple "
                    + "of " + full.logicalBlockSize() + " in (0, " + full.size() + "]");
        }
        this.visible = visibleBytes;
    }

    /** Makes the first {@code bytes} visible; the layers above learn of it through {@code resized()}. */
    public void grow(long bytes) {
        if (bytes < visible || bytes > below.size()) {
            throw new IllegalArgumentException(name() + ": cannot grow from " + visible + " to " + bytes + " bytes");
        }
        visible = bytes;
    }

    @Override
    public long size() {
        return visible;
    }
}
