package io.stripestack.testkit;

import io.stripestack.blockdev.ForwardingBlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;

/**
 * Memory of a final size of which only a prefix is visible until {@link #grow}: a device that grows at run time,
 * as an array does after a reshape, for tests of the layers above.
 *
 * <p>Thread-safe: the visible size is volatile; the memory is {@link MemoryBlockDevice}'s.
 */
public final class GrowableBlockDevice extends ForwardingBlockDevice {
    private volatile long visible;

    public GrowableBlockDevice(String name, long visibleBytes, int fullBytes) {
        super(new MemoryBlockDevice(name, fullBytes, 512));
        if (visibleBytes <= 0 || visibleBytes > fullBytes || visibleBytes % 512 != 0) {
            throw new IllegalArgumentException(name + ": visible size " + visibleBytes + " must be a multiple of 512 "
                    + "in (0, " + fullBytes + "]");
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
