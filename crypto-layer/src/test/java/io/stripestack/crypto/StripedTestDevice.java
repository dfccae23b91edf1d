package io.stripestack.crypto;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;

/** A memory device that reports a RAID-like geometry, for the crypto layer's geometry and alignment tests. */
final class StripedTestDevice implements BlockDevice {
    private final MemoryBlockDevice memory;
    private final Geometry geometry;

    StripedTestDevice(int size, int blockSize, Geometry geometry) {
        this.memory = new MemoryBlockDevice("striped", size, blockSize);
        this.geometry = geometry;
    }

    @Override public String name() { return memory.name(); }
    @Override public long size() { return memory.size(); }
    @Override public int logicalBlockSize() { return memory.logicalBlockSize(); }
    @Override public Geometry geometry() { return geometry; }
    @Override public void read(long offset, ByteBuffer dst) throws IOException { memory.read(offset, dst); }
    @Override public void write(long offset, ByteBuffer src) throws IOException { memory.write(offset, src); }
    @Override public void flush() throws IOException { memory.flush(); }
    @Override public IoStats stats() { return memory.stats(); }
    @Override public void close() throws IOException { memory.close(); }
}
