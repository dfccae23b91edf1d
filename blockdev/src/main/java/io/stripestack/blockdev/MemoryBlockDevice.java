package io.stripestack.blockdev;

import java.nio.ByteBuffer;

/**
 * A RAM-backed device (like tgtd's rdwr on tmpfs, or the kernel's brd): for tests, benchmarks that
 * must not measure a disk, and scratch LUNs. Discarded ranges read back as zeros.
 *
 * <p>Concurrency: the backing buffer is shared; each call works on its own duplicate of it, so
 * concurrent calls never disturb each other's positions. Overlapping concurrent writes leave either
 * write's bytes per byte, as a disk would per sector.
 */
public final class MemoryBlockDevice implements BlockDevice {
    private final String name;
    private final ByteBuffer data;
    private final int blockSize;
    private final IoStats stats;

    public MemoryBlockDevice(String name, int size, int blockSize) {
        if (size <= 0 || size % blockSize != 0) {
            throw new IllegalArgumentException("size " + size + " must be a positive multiple of " + blockSize);
        }
        this.name = name;
        this.data = ByteBuffer.allocateDirect(size);
        this.blockSize = blockSize;
        this.stats = new IoStats(name);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long size() {
        return data.capacity();
    }

    @Override
    public int logicalBlockSize() {
        return blockSize;
    }

    @Override
    public Geometry geometry() {
        return Geometry.simple(blockSize);
    }

    @Override
    public void read(long offset, ByteBuffer dst) {
        int length = dst.remaining();
        BlockDevice.checkRange(this, offset, length);
        long start = stats.startIo();
        dst.put(data.duplicate().position((int) offset).limit((int) offset + length));
        stats.endRead(start, length);
    }

    @Override
    public void write(long offset, ByteBuffer src) {
        int length = src.remaining();
        BlockDevice.checkRange(this, offset, length);
        long start = stats.startIo();
        data.duplicate().position((int) offset).put(src);
        stats.endWrite(start, length);
    }

    @Override
    public void flush() {
        stats.countFlush();
    }

    @Override
    public boolean supportsDiscard() {
        return true;
    }

    @Override
    public boolean discardZeroes() {
        return true;
    }

    @Override
    public void discard(long offset, long length) {
        BlockDevice.checkRange(this, offset, length);
        ByteBuffer view = data.duplicate().position((int) offset);
        for (long i = 0; i < length; i++) {
            view.put((byte) 0);
        }
        stats.countDiscard(length);
    }

    @Override
    public IoStats stats() {
        return stats;
    }

    @Override
    public void close() {
        // Nothing to release: the buffer goes with the object.
    }
}
