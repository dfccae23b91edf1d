package io.stripestack.bench;

import io.stripestack.blockdev.BlockDevice;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Issues a {@link Workload} against a {@link BlockDevice} from {@code queueDepth} threads (one request
 * outstanding per thread, the way fio's psync engine with numjobs emulates a queue depth) and times it.
 *
 * <p>Buffers: one direct, 4 KiB-aligned buffer per thread (O_DIRECT members need the alignment), filled
 * with pseudo-random bytes when allocated and grown only between runs, so the measuring loop allocates
 * nothing. Reads overwrite them; that is harmless, writes only need some bytes.
 *
 * <p>Concurrency: {@link #run} is called by one thread at a time (the study's); it hands each worker its
 * own buffer and a shared atomic request counter, and returns after every worker has finished.
 */
final class LoadRunner implements AutoCloseable {
    private static final int ALIGNMENT = 4096;

    private final List<ByteBuffer> buffers = new ArrayList<>();
    private ExecutorService pool;
    private int poolThreads;

    /** Runs {@code workload} once and returns what it moved and cost. */
    Sample run(BlockDevice device, Workload workload) throws IOException {
        int threads = workload.queueDepth();
        prepare(threads, workload.ioBytes());
        long operations = workload.operations();
        long slots = workload.random()
                ? (workload.regionBytes() - workload.shift() - workload.ioBytes()) / workload.alignment() + 1
                : (workload.regionBytes() - workload.shift()) / workload.ioBytes();
        AtomicLong next = new AtomicLong();
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> workers = new ArrayList<>(threads);
        for (int t = 0; t < threads; t++) {
            ByteBuffer buffer = buffers.get(t);
            SplittableRandom random = new SplittableRandom(0x5eed + t);
            workers.add(pool.submit(() -> {
                start.await();
                long op;
                while ((op = next.getAndIncrement()) < operations) {
                    long step = workload.random() ? random.nextLong(slots) : op % slots;
                    long offset = workload.shift() + step * (workload.random() ? workload.alignment() : workload.ioBytes());
                    buffer.clear().limit(workload.ioBytes());
                    if (workload.write()) {
                        device.write(offset, buffer);
                    } else {
                        device.read(offset, buffer);
                    }
                }
                return null;
            }));
        }
        long cpu0 = processCpuNanos();
        long t0 = System.nanoTime();
        start.countDown();
        try {
            for (Future<?> worker : workers) {
                worker.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("benchmark interrupted", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException io) {
                throw io;
            }
            throw new IOException(workload.describe() + " on " + device.name() + " failed: " + cause, cause);
        }
        long wall = System.nanoTime() - t0;
        long cpu = processCpuNanos() - cpu0;
        return new Sample(operations * workload.ioBytes(), Math.max(1, wall), cpu);
    }

    private void prepare(int threads, int ioBytes) {
        if (pool == null || poolThreads < threads) {
            if (pool != null) {
                pool.shutdown();
            }
            pool = Executors.newFixedThreadPool(threads, r -> {
                Thread thread = new Thread(r, "bench-io");
                thread.setDaemon(true);
                return thread;
            });
            poolThreads = threads;
        }
        SplittableRandom fill = new SplittableRandom(42);
        for (int t = 0; t < threads; t++) {
            if (t == buffers.size() || buffers.get(t).capacity() < ioBytes) {
                ByteBuffer b = ByteBuffer.allocateDirect(ioBytes + ALIGNMENT).alignedSlice(ALIGNMENT);
                for (int i = 0; i + 8 <= b.capacity(); i += 8) {
                    b.putLong(i, fill.nextLong());
                }
                if (t == buffers.size()) {
                    buffers.add(b);
                } else {
                    buffers.set(t, b);
                }
            }
        }
    }

    /** CPU time of every thread of this process, or of the calling thread where the JDK cannot tell. */
    static long processCpuNanos() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            long nanos = sun.getProcessCpuTime();
            if (nanos >= 0) {
                return nanos;
            }
        }
        return ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdownNow();
        }
        buffers.clear();
    }
}
