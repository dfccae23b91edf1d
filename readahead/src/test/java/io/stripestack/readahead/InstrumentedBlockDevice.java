package io.stripestack.readahead;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * Test wrapper below a readahead stage: records every read, tells reads on prefetch threads
 * ({@code readahead-*}) from others, can slow reads down, can hold prefetch reads before or after they have read their
 * bytes (so a test can write while a prefetch holding old bytes is in flight, or arm a fault below for
 * the prefetch alone), and can offer a geometry of its own.
 */
final class InstrumentedBlockDevice implements BlockDevice {
    private final BlockDevice inner;
    private final Geometry geometry;
    final LongAdder foregroundReads = new LongAdder();
    final LongAdder prefetchReads = new LongAdder();
    /** Every read as {offset, length}: prefetches are the segment-sized ones, whichever thread ran them. */
    final ConcurrentLinkedQueue<long[]> reads = new ConcurrentLinkedQueue<>();
    final AtomicInteger heldPrefetches = new AtomicInteger();
    private volatile long readDelayNanos;
    private volatile CountDownLatch prefetchGate;
    private volatile boolean holdBeforeReading;

    InstrumentedBlockDevice(BlockDevice inner) {
        this(inner, inner.geometry());
    }

    InstrumentedBlockDevice(BlockDevice inner, Geometry geometry) {
        this.inner = inner;
        this.geometry = geometry;
    }

    void delayReads(long nanos) {
        readDelayNanos = nanos;
    }

    /** Prefetch reads from now on read their bytes, then wait until {@link #releasePrefetches}. */
    void holdPrefetches() {
        holdBeforeReading = false;
        prefetchGate = new CountDownLatch(1);
    }

    /** Prefetch reads from now on wait until {@link #releasePrefetches}, then read. */
    void holdPrefetchesBeforeReading() {
        holdBeforeReading = true;
        prefetchGate = new CountDownLatch(1);
    }

    void releasePrefetches() {
        CountDownLatch gate = prefetchGate;
        prefetchGate = null;
        if (gate != null) {
            gate.countDown();
        }
    }

    static boolean isPrefetchThread() {
        return Thread.currentThread().getName().startsWith("readahead-");
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        boolean prefetch = isPrefetchThread();
        (prefetch ? prefetchReads : foregroundReads).increment();
        reads.add(new long[] {offset, dst.remaining()});
        long delay = readDelayNanos;
        if (delay > 0) {
            LockSupport.parkNanos(delay);
        }
        if (prefetch && holdBeforeReading) {
            awaitGate();
        }
        inner.read(offset, dst);
        if (prefetch && !holdBeforeReading) {
            awaitGate();
        }
    }

    private void awaitGate() throws IOException {
        CountDownLatch gate = prefetchGate;
        if (gate == null) {
            return;
        }
        heldPrefetches.incrementAndGet();
        try {
            if (!gate.await(10, TimeUnit.SECONDS)) {
                throw new IOException("test gate never released");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted at test gate", e);
        } finally {
            heldPrefetches.decrementAndGet();
        }
    }

    @Override public String name() { return inner.name(); }
    @Override public long size() { return inner.size(); }
    @Override public int logicalBlockSize() { return inner.logicalBlockSize(); }
    @Override public Geometry geometry() { return geometry; }
    @Override public void write(long offset, ByteBuffer src) throws IOException { inner.write(offset, src); }
    @Override public void flush() throws IOException { inner.flush(); }
    @Override public boolean supportsDiscard() { return inner.supportsDiscard(); }
    @Override public boolean discardZeroes() { return inner.discardZeroes(); }
    @Override public void discard(long offset, long length) throws IOException { inner.discard(offset, length); }
    @Override public IoStats stats() { return inner.stats(); }
    @Override public BlockDevice below() { return inner; }
    @Override public void close() throws IOException { inner.close(); }
}
