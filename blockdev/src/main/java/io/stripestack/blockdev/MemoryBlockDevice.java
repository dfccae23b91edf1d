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
public final class MemoryBlockDevice extends MeteredBlockDevice {
    private final String name;
    private final ByteBuffer data;
    private final int blockSize;

    public MemoryBlockDevice(String name, int size, int blockSize) {
        super(name);
        if (size <= 0 || size % blockSize != 0) {
            throw new IllegalArgumentException("size " + size + " must be a positive multiple of " + blockSize);
        }
        this.name = name;
        this.data = ByteBuffer.allocateDirect(size);
        this.blockSize = blockSize;
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
    protected void readBlocks(long offset, ByteBuffer dst) {
        dst.put(data.duplicate().position((int) offset).limit((int) offset + dst.remaining()));
    }

    @Override
    protected void writeBlocks(long offset, ByteBuffer src) {
        data.duplicate().position((int) offset).put(src);
    }

    @Override
    protected void flushDevice() {
        // memory needs no flush
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
    protected void discardBlocks(long offset, long length) {
        ByteBuffer view = data.duplicate().position((int) offset);
        for (long i = 0; i < length; i++) {
            view.put((byte) 0);
        }
    }

    @Override
    public void close() {
        // Nothing to release: the buffer goes with the object.
    }
}
