package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Runs the member reads and writes of one array request in parallel.
 *
 * <p>Threads: a fixed pool of daemon threads named {@code stripestack-<array>-member-io-N}, by default
 * two per member (at least 4, at most 64), so that every member can have two requests queued in the
 * kernel while the calling thread works on its own share. Their only job is a blocking positional
 * read/write on one member; they never take array locks, so a caller waiting for them cannot deadlock.
 * The queue is a bounded array (no allocation per task); when it is full the calling thread runs the
 * piece itself.
 *
 * <p>A {@link Batch} belongs to one calling thread (handed out by {@link #batch()} from a thread-local),
 * is filled, {@link Batch#run() run} (the caller executes the last piece itself and parks until the pool
 * has done the others) and reused for that thread's next request: no per-request allocation besides
 * the buffer views the caller creates.
 *
 * <p>Public only so that the bench's RAID-0 baseline ({@code io.stripestack.bench.raid5.Raid0Array}) runs its
 * member I/O exactly as RAID-5 does; no other module uses it.
 */
public final class MemberIoExecutor implements AutoCloseable {
    private final ThreadPoolExecutor pool;
    private final ThreadLocal<Batch> batches = ThreadLocal.withInitial(Batch::new);

    public MemberIoExecutor(String arrayName, int threads) {
        AtomicInteger counter = new AtomicInteger();
        ThreadFactory factory = r -> {
            Thread t = new Thread(r, "stripestack-" + arrayName + "-member-io-" + counter.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
        pool = new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS, new ArrayBlockingQueue<>(4096),
                factory, new ThreadPoolExecutor.CallerRunsPolicy());
        pool.prestartAllCoreThreads();
    }

    public static int defaultThreads(int members) {
        return Math.max(4, Math.min(64, 2 * members));
    }

    /** The calling thread's batch, emptied. */
    public Batch batch() {
        Batch b = batches.get();
        b.clear();
        b.executor = this;
        return b;
    }

    @Override
    public void close() {
        pool.shutdown();
    }

    /** A list of member I/Os run together; see the class comment for ownership. */
    public static final class Batch {
        private MemberIoExecutor executor;
        private int count;
        private int[] member = new int[16];
        private BlockDevice[] device = new BlockDevice[16];
        private long[] offset = new long[16];
        private ByteBuffer[] buffer = new ByteBuffer[16];
        private boolean[] write = new boolean[16];
        private IOException[] error = new IOException[16];
        private Piece[] pieces = new Piece[0];
        private final AtomicInteger remaining = new AtomicInteger();
        private volatile Thread owner;

        public void clear() {
            for (int i = 0; i < count; i++) {
                buffer[i] = null;
                device[i] = null;
                error[i] = null;
            }
            count = 0;
        }

        public int size() {
            return count;
        }

        public void add(int memberIndex, BlockDevice dev, long memberOffset, ByteBuffer buf, boolean isWrite) {
            if (count == member.length) {
                grow();
            }
            member[count] = memberIndex;
            device[count] = dev;
            offset[count] = memberOffset;
            buffer[count] = buf;
            write[count] = isWrite;
            error[count] = null;
            count++;
        }

        private void grow() {
            int n = member.length * 2;
            member = java.util.Arrays.copyOf(member, n);
            device = java.util.Arrays.copyOf(device, n);
            offset = java.util.Arrays.copyOf(offset, n);
            buffer = java.util.Arrays.copyOf(buffer, n);
            write = java.util.Arrays.copyOf(write, n);
            error = java.util.Arrays.copyOf(error, n);
        }

        /** Runs every piece, in parallel when there are several; errors are kept per piece. */
        public void run() {
            if (count == 0) {
                return;
            }
            if (count == 1) {
                execute(0);
                return;
            }
            if (pieces.length < count) {
                Piece[] grown = java.util.Arrays.copyOf(pieces, member.length);
                for (int i = pieces.length; i < grown.length; i++) {
                    grown[i] = new Piece(this, i);
                }
                pieces = grown;
            }
            owner = Thread.currentThread();
            remaining.set(count - 1);
            for (int i = 0; i < count - 1; i++) {
                executor.pool.execute(pieces[i]);
            }
            execute(count - 1);
            while (remaining.get() > 0) {
                LockSupport.park(this);
            }
            owner = null;
        }

        /**
         * Runs every piece as {@link #run} does, then clears the batch; throws the first failed piece's error, for a
         * caller whose request fails as a whole when any member I/O fails (no repair from parity).
         */
        public void runThrowingFirstError() throws IOException {
            try {
                run();
                for (int i = 0; i < count; i++) {
                    if (error[i] != null) {
                        throw error[i];
                    }
                }
            } finally {
                clear();
            }
        }

        private void execute(int i) {
            try {
                if (write[i]) {
                    device[i].write(offset[i], buffer[i]);
                } else {
                    device[i].read(offset[i], buffer[i]);
                }
            } catch (IOException e) {
                error[i] = e;
            } catch (RuntimeException e) {
                error[i] = new IOException(device[i].name() + ": " + e, e);
            }
        }

        private void pieceDone() {
            if (remaining.decrementAndGet() == 0) {
                LockSupport.unpark(owner);
            }
        }

        int member(int i) {
            return member[i];
        }

        IOException error(int i) {
            return error[i];
        }

        long offset(int i) {
            return offset[i];
        }

        ByteBuffer buffer(int i) {
            return buffer[i];
        }

        BlockDevice device(int i) {
            return device[i];
        }
    }

    private static final class Piece implements Runnable {
        private final Batch batch;
        private final int index;

        Piece(Batch batch, int index) {
            this.batch = batch;
            this.index = index;
        }

        @Override
        public void run() {
            try {
                batch.execute(index);
            } finally {
                batch.pieceDone();
            }
        }
    }
}
