package io.stripestack.testkit;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.ForwardingBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Wraps a device and makes it fail on command, like dm-flakey / dm-error: for fault-injection tests and
 * the soak tool. Modes combine: fail every I/O from the N-th on, fail only writes, or fail everything
 * now. A failed read leaves the caller's buffer partly filled (a short read), as a real failing disk.
 *
 * <p>Concurrency: all settings are atomics read once per I/O; they may be changed while I/O runs.
 */
public final class FaultInjectingBlockDevice extends ForwardingBlockDevice {
    private final AtomicLong ioCount = new AtomicLong();
    private volatile long failFromIo = Long.MAX_VALUE;
    private volatile boolean failReads = true;
    private volatile boolean failWrites = true;

    public FaultInjectingBlockDevice(BlockDevice inner) {
        super(inner);
    }

    /** Every I/O whose sequence number (from 1) is {@code >= n} fails. */
    public void failFromIo(long n) {
        failFromIo = n;
    }

    /** Fails every I/O from now on. */
    public void failNow() {
        failFromIo = 0;
    }

    /** Stops failing. */
    public void heal() {
        failFromIo = Long.MAX_VALUE;
    }

    /** Which directions the failure applies to (both by default). */
    public void failDirections(boolean reads, boolean writes) {
        failReads = reads;
        failWrites = writes;
    }

    public long ioCount() {
        return ioCount.get();
    }

    private boolean shouldFail(boolean write) {
        long n = ioCount.incrementAndGet();
        return n >= failFromIo && (write ? failWrites : failReads);
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        if (shouldFail(false)) {
            int half = dst.remaining() / 2;
            ByteBuffer part = dst.duplicate();
            part.limit(part.position() + half - half % logicalBlockSize());
            below.read(offset, part);
            throw new IOException(name() + ": injected read error at byte " + offset);
        }
        below.read(offset, dst);
    }

    @Override
    public void write(long offset, ByteBuffer src) throws IOException {
        if (shouldFail(true)) {
            throw new IOException(name() + ": injected write error at byte " + offset);
        }
        below.write(offset, src);
    }

    @Override
    public void flush() throws IOException {
        if (shouldFail(true)) {
            throw new IOException(name() + ": injected flush error");
        }
        below.flush();
    }
}
