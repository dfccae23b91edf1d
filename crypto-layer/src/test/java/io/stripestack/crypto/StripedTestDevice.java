package io.stripestack.crypto;

import io.stripestack.blockdev.ForwardingBlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MemoryBlockDevice;

/** A memory device that reports a RAID-like geometry, for the crypto layer's geometry and alignment tests. */
final class StripedTestDevice extends ForwardingBlockDevice {
    private final Geometry geometry;

    StripedTestDevice(int size, int blockSize, Geometry geometry) {
        super(new MemoryBlockDevice("striped", size, blockSize));
        this.geometry = geometry;
    }

    @Override
    public Geometry geometry() {
        return geometry;
    }
}
