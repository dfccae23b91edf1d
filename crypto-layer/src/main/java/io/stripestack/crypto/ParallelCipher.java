package io.stripestack.crypto;

import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Splits the encryption or decryption of one large request across a small pool shared by every crypto
 * layer in the process ({@code availableProcessors - 1} daemon threads named {@code crypt-worker-N}); the
 * calling thread works on the request too. Requests below {@link #PARALLEL_MIN_BYTES}, or on a one-core
 * machine, stay on the calling thread.
 *
 * <p>How it stays allocation-free: each calling thread owns one reusable {@link Job} (a ThreadLocal). The
 * caller publishes the request in it and offers the job to the pool once per worker; workers and caller
 * claim parts with an atomic counter, so a worker that starts late, or a job the full queue refused, just
 * means the caller does more parts itself. The pool's queue is an array, so offering allocates nothing.
 * After the last part the job's claim counter is pushed past any part count, so a stale worker that runs
 * the job after the request finished claims nothing.
 *
 * <p>Threads: a job's request fields are written only by its owner thread, before the volatile reset of
 * the claim counter that publishes them, and read by workers after claiming a part; the owner parks until
 * the count of unfinished parts reaches zero.
 */
final class ParallelCipher {
    /** Requests smaller than this are not worth the hand-off to another core. */
    static final int PARALLEL_MIN_BYTES = 256 * 1024;
    /** Parts smaller than this cost more to hand over than to encrypt. */
    private static final int MIN_PART_BYTES = 64 * 1024;
    private static final int DONE = Integer.MAX_VALUE / 2;
    private static final int WORKERS = Math.max(0, Runtime.getRuntime().availableProcessors() - 1);
    private static final ThreadPoolExecutor POOL = WORKERS == 0 ? null : newPool();
    private static final ThreadLocal<Job> JOBS = ThreadLocal.withInitial(Job::new);

    private ParallelCipher() {
    }

    /**
     * Encrypts ({@code encrypt}) or decrypts {@code length} bytes from {@code src} at {@code srcIndex} into
     * {@code dst} at {@code dstIndex} (the same buffer and index for in place), starting at dm-crypt sector
     * {@code sector}; see {@link SectorCipher} for the sector numbering.
     */
    static void run(SectorCipher cipher, boolean encrypt, ByteBuffer src, int srcIndex, ByteBuffer dst, int dstIndex,
                    int length, long sector) {
        if (POOL == null || length < PARALLEL_MIN_BYTES) {
            Job.apply(cipher, encrypt, src, srcIndex, dst, dstIndex, length, sector);
            return;
        }
        int sectorSize = cipher.sectorSize();
        int parts = Math.min(WORKERS + 1, length / MIN_PART_BYTES);
        int sectorsPerPart = (length / sectorSize + parts - 1) / parts;
        JOBS.get().runInParallel(cipher, encrypt, src, srcIndex, dst, dstIndex, length, sector,
                sectorsPerPart * sectorSize, (length + sectorsPerPart * sectorSize - 1) / (sectorsPerPart * sectorSize));
    }

    private static ThreadPoolExecutor newPool() {
        AtomicInteger ids = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(WORKERS, WORKERS, 60, TimeUnit.SECONDS,
                new ArrayBlockingQueue<>(64 * WORKERS), r -> {
                    Thread t = new Thread(r, "crypt-worker-" + ids.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                }, new ThreadPoolExecutor.DiscardPolicy());
        pool.prestartAllCoreThreads();
        return pool;
    }

    /** One calling thread's reusable request; see the class comment for who touches what. */
    private static final class Job implements Runnable {
        private final AtomicInteger nextPart = new AtomicInteger(DONE);
        private final AtomicInteger unfinished = new AtomicInteger();
        private final Thread owner = Thread.currentThread();
        private SectorCipher cipher;
        private boolean encrypt;
        private ByteBuffer src;
        private int srcIndex;
        private ByteBuffer dst;
        private int dstIndex;
        private int length;
        private long sector;
        private int partBytes;
        private int parts;
        private volatile RuntimeException failure;

        void runInParallel(SectorCipher cipher, boolean encrypt, ByteBuffer src, int srcIndex, ByteBuffer dst,
                           int dstIndex, int length, long sector, int partBytes, int parts) {
            this.cipher = cipher;
            this.encrypt = encrypt;
            this.src = src;
            this.srcIndex = srcIndex;
            this.dst = dst;
            this.dstIndex = dstIndex;
            this.length = length;
            this.sector = sector;
            this.partBytes = partBytes;
            this.parts = parts;
            this.failure = null;
            unfinished.set(parts);
            nextPart.set(0); // publishes the fields above to workers
            for (int i = 1; i < parts; i++) {
                POOL.execute(this);
            }
            run();
            while (unfinished.get() != 0) {
                LockSupport.park(this);
            }
            this.cipher = null;
            this.src = null;
            this.dst = null;
            RuntimeException failed = failure;
            if (failed != null) {
                failure = null;
                throw failed;
            }
        }

        /** Claims and processes parts until none is left; run by workers and by the owner. */
        @Override
        public void run() {
            int part;
            while ((part = nextPart.getAndIncrement()) < parts) {
                try {
                    int from = part * partBytes;
                    int n = Math.min(partBytes, length - from);
                    long partSector = sector + (long) (from / cipher.sectorSize()) * (cipher.sectorSize() / 512);
                    apply(cipher, encrypt, src, srcIndex + from, dst, dstIndex + from, n, partSector);
                } catch (RuntimeException e) {
                    failure = e;
                } finally {
                    if (unfinished.decrementAndGet() == 0) {
                        nextPart.set(DONE);
                        LockSupport.unpark(owner);
                    }
                }
            }
        }

        static void apply(SectorCipher cipher, boolean encrypt, ByteBuffer src, int srcIndex, ByteBuffer dst,
                          int dstIndex, int length, long sector) {
            if (encrypt) {
                cipher.encrypt(src, srcIndex, dst, dstIndex, length, sector);
            } else {
                cipher.decrypt(src, srcIndex, dst, dstIndex, length, sector);
            }
        }
    }
}
