package io.stripestack.testkit;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.ForwardingBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A device paced like an independent disk of fixed bandwidth, for benchmarks: requests are served one after
 * another, each occupying the device for its size divided by the bandwidth, and a caller returns when its
 * request's turn has ended (the real I/O runs first and overlaps that time). Several members paced so behave
 * like separate spindles, which files sharing one disk or the page cache cannot: the (n-1) x bandwidth
 * ceiling of a RAID-5 array, and what a layer above costs when the disks, not the CPU, are the limit.
 *
 * <p>Thread-safe: the device's busy-until time is one atomic; everything else is the device below's.
 */
public final class PacedBlockDevice extends ForwardingBlockDevice {
    private final long bytesPerSecond;
    private final AtomicLong busyUntil = new AtomicLong(System.nanoTime());

    public PacedBlockDevice(BlockDevice below, long bytesPerSecond) {
        super(below);
        if (bytesPerSecond <= 0) {
            throw new IllegalArgumentException(below.name() + ": pacing needs a bandwidth above 0 bytes/s, got " + bytesPerSecond);
        }
        this.bytesPerSecond = bytesPerSecond;
    }

    /** Takes the device's next turn for {@code bytes} and waits until it ends. */
    private void pace(long started, long bytes) {
        long cost = (long) (bytes * 1e9 / bytesPerSecond);
        long end;
        long busy;
        do {
            busy = busyUntil.get();
            end = Math.max(started, busy) + cost;
        } while (!busyUntil.compareAndSet(busy, end));
        for (long left = end - System.nanoTime(); left > 0; left = end - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        long started = System.nanoTime();
        int bytes = dst.remaining();
        below.read(offset, dst);
        pace(started, bytes);
    }

    @Override
    public void write(long offset, ByteBuffer src) throws IOException {
        long started = System.nanoTime();
        int bytes = src.remaining();
        below.write(offset, src);
        pace(started, bytes);
    }

    /** A log's durable write takes its turn like any other write of its size. */
    @Override
    public void writeDurable(long offset, ByteBuffer src) throws IOException {
        long started = System.nanoTime();
        int bytes = src.remaining();
        below.writeDurable(offset, src);
        pace(started, bytes);
    }
}
