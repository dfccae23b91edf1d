package io.stripestack.raid5;

import static io.stripestack.raid5.Raid5ArrayTest.DATA_OFFSET_SECTORS;
import static io.stripestack.raid5.Raid5ArrayTest.SECTOR;
import static io.stripestack.raid5.Raid5ArrayTest.assertParityConsistent;
import static io.stripestack.raid5.Raid5ArrayTest.create;
import static io.stripestack.raid5.Raid5ArrayTest.memoryMembers;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Holding partial row writes (md's delayed stripes, work-conserving): a partial write waits for a write in
 * progress that will add to its row, so that the two become one full-row write without pre-reads, but only
 * while other work keeps the array busy; with idle members it is issued at once, and a lone writer is never
 * held. No timer: nothing here depends on how long anything takes.
 */
class Raid5WriteHoldTest {
    private static final int CHUNK = 16384;
    private static final int N = 4;
    private static final int ROW = (N - 1) * CHUNK;
    /** Room for a write longer than the rows one caller queues at once, and a few rows more. */
    private static final int ROWS = WriteScheduler.WRITE_WINDOW_ROWS + 8;
    /** A row that a write starting at row 1 reaches only after its first window of rows is done. */
    private static final int LATE_ROW = WriteScheduler.WRITE_WINDOW_ROWS + 2;

    /** A member whose first data write after {@link #arm()} blocks until {@link #release()}. */
    static final class GatedDevice implements BlockDevice {
        final BlockDevice inner;
        final AtomicBoolean armed = new AtomicBoolean();
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch released = new CountDownLatch(1);

        GatedDevice(BlockDevice inner) {
            this.inner = inner;
        }

        void arm() {
            armed.set(true);
        }

        void release() {
            released.countDown();
        }

        @Override public String name() { return inner.name(); }
        @Override public long size() { return inner.size(); }
        @Override public int logicalBlockSize() { return inner.logicalBlockSize(); }
        @Override public Geometry geometry() { return inner.geometry(); }
        @Override public void read(long offset, ByteBuffer dst) throws IOException { inner.read(offset, dst); }
        @Override public void flush() throws IOException { inner.flush(); }
        @Override public IoStats stats() { return inner.stats(); }
        @Override public void close() throws IOException { inner.close(); }

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            if (offset >= DATA_OFFSET_SECTORS * SECTOR && armed.compareAndSet(true, false)) {
                entered.countDown();
                try {
                    if (!released.await(30, TimeUnit.SECONDS)) {
                        throw new IOException(name() + ": the test never released the gated write");
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException(name() + ": interrupted while gated", e);
                }
            }
            inner.write(offset, src);
        }
    }

    private static List<GatedDevice> gatedMembers() {
        List<GatedDevice> members = new ArrayList<>();
        for (BlockDevice d : memoryMembers(N, CHUNK, ROWS)) {
            members.add(new GatedDevice(d));
        }
        return members;
    }

    private static long counter(Raid5Array array, String name) {
        return array.stats().layerCounter(name);
    }

    /** Writes {@code data[start, start + length)} on a pool thread. */
    private static Future<?> startWrite(ExecutorService pool, Raid5Array array, byte[] data, int start, int length) {
        return pool.submit(() -> {
            array.write(start, ByteBuffer.wrap(data, start, length));
            return null;
        });
    }

    /** Like {@link #startWrite}, with member 0's next data write stalled; returns once the write is stalled there. */
    private static Future<?> startStalledWrite(ExecutorService pool, Raid5Array array, List<GatedDevice> members,
                                               byte[] data, int start, int length) throws InterruptedException {
        members.get(0).arm();
        Future<?> write = startWrite(pool, array, data, start, length);
        assertTrue(members.get(0).entered.await(10, TimeUnit.SECONDS), "the first write never reached the member");
        return write;
    }

    private static void awaitCounter(Raid5Array array, String name, long value) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (counter(array, name) < value) {
            assertTrue(System.nanoTime() < deadline, name + " never reached " + value);
            Thread.sleep(1);
        }
    }

    /**
     * Writer B covers row 1 and the head of row 2 (up to {@code split}); its row-1 write is stalled on a
     * member. B queued its row-2 piece together with row 1, so writer A's rest of row 2 waits behind it
     * instead of pre-reading, and the two pieces go out as one full-row write whose parity is computed from
     * both callers' buffers (the split falls inside a chunk, on a chunk boundary, or near the row's ends).
     */
    @ParameterizedTest
    @ValueSource(ints = {SECTOR, 4096, CHUNK, ROW / 2, 2 * CHUNK + 4096, ROW - SECTOR})
    void aPartialRowJoinsTheQueuedPieceOfAWriteInProgress(int split) throws Exception {
        assertTwoWritesFillARow(ROW + split, 0, 0);
    }

    /**
     * As above, but B is longer than the rows one caller queues at once: its piece of A's row is not queued
     * yet while its first rows are stalled. A must hold (wait for B's piece) instead of pre-reading.
     */
    @ParameterizedTest
    @ValueSource(ints = {SECTOR, 4096, CHUNK, ROW / 2, 2 * CHUNK + 4096, ROW - SECTOR})
    void aPartialRowWaitsForTheWriteInProgressThatCompletesIt(int split) throws Exception {
        assertTwoWritesFillARow((LATE_ROW - 1) * ROW + split, 1, 0);
    }

    /**
     * As above, after more threads than the scheduler tracks at once wrote and ended (a pool that renewed its
     * workers, a benchmark's earlier rounds): their entries are free again, so B is seen and A still holds.
     */
    @Test
    void endedWritersDoNotHideAWriteInProgress() throws Exception {
        assertTwoWritesFillARow((LATE_ROW - 1) * ROW + CHUNK, 1, 2 * WriteScheduler.TRACKED_WRITERS);
    }

    /**
     * B writes {@code bLength} bytes from row 1 with its first member write stalled; A writes from where B
     * ends to the end of that row. A must not complete before B's piece of the row is there; then every row
     * touched is one full-row write and nothing is pre-read. {@code held} is the number of holds expected
     * (0 when A simply queues behind B's piece, 1 when it must hold for a piece B has not queued yet).
     */
    private static void assertTwoWritesFillARow(int bLength, int held, int endedWriters) throws Exception {
        List<GatedDevice> members = gatedMembers();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try (Raid5Array array = create(members, CHUNK, Raid5Layout.LEFT_SYMMETRIC, 8)) {
            byte[] data = new byte[ROWS * ROW];
            new Random(5).nextBytes(data);
            writeOnceOnEndedThreads(array, data, endedWriters);
            long prereads = counter(array, "member_prereads");
            long partialRows = counter(array, "rmw_writes") + counter(array, "reconstruct_writes");
            long fullRows = counter(array, "full_stripe_writes");
            int bStart = ROW;
            int aStart = bStart + bLength;
            int aEnd = (aStart / ROW + 1) * ROW;
            Future<?> b = startStalledWrite(pool, array, members, data, bStart, bLength);
            Future<?> a = startWrite(pool, array, data, aStart, aEnd - aStart);
            if (held > 0) {
                awaitCounter(array, "held_writes", held);
            }
            assertThrows(TimeoutException.class, () -> a.get(200, TimeUnit.MILLISECONDS),
                    "A's part of the row must not be written before B's part arrives");
            members.get(0).release();
            b.get(10, TimeUnit.SECONDS);
            a.get(10, TimeUnit.SECONDS);

            assertEquals(prereads, counter(array, "member_prereads"), "the parts fill the row together: nothing to read");
            assertEquals(fullRows + aEnd / ROW - 1, counter(array, "full_stripe_writes"),
                    "every row is written as a full row");
            assertEquals(partialRows, counter(array, "rmw_writes") + counter(array, "reconstruct_writes"));
            assertEquals(held, counter(array, "held_writes"));
            byte[] got = new byte[aEnd - ROW];
            array.read(ROW, ByteBuffer.wrap(got));
            assertArrayEquals(java.util.Arrays.copyOfRange(data, ROW, aEnd), got);
            assertParityConsistent(members, CHUNK, ROWS);
        } finally {
            members.forEach(GatedDevice::release);
            pool.shutdownNow();
        }
    }

    /**
     * Has {@code threads} threads, one after the other, each write one block of row 0 (rewritten by nobody else
     * here) and end; their contexts stay uncollected (no garbage collection is asked for).
     */
    private static void writeOnceOnEndedThreads(Raid5Array array, byte[] data, int threads) throws Exception {
        for (int t = 0; t < threads; t++) {
            int offset = (t % (ROW / 4096)) * 4096;
            FutureTask<Void> task = new FutureTask<>(() -> {
                array.write(offset, ByteBuffer.wrap(data, offset, 4096));
                return null;
            });
            Thread thread = new Thread(task, "ended-writer-" + t);
            thread.start();
            task.get(10, TimeUnit.SECONDS);
            thread.join();
        }
    }

    /**
     * A hold ends when nothing else is being written, not at its bound: A continues P's stream (it starts where
     * P's write ends) and is held while P is in progress; when P completes and no other write is in progress,
     * nobody can complete A's row, so A goes ahead at once (md releases delayed stripes when the array idles).
     */
    @Test
    void aHoldEndsWhenNoOtherWriteIsInProgress() throws Exception {
        List<GatedDevice> members = gatedMembers();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try (Raid5Array array = create(members, CHUNK, Raid5Layout.LEFT_SYMMETRIC, 8)) {
            byte[] data = new byte[ROWS * ROW];
            new Random(9).nextBytes(data);
            Future<?> p = startStalledWrite(pool, array, members, data, ROW, ROW);
            Future<?> a = startWrite(pool, array, data, 2 * ROW, ROW / 2);
            awaitCounter(array, "held_writes", 1);
            members.get(0).release();
            p.get(10, TimeUnit.SECONDS);
            long released = System.nanoTime();
            a.get(10, TimeUnit.SECONDS);
            assertTrue(System.nanoTime() - released < TimeUnit.SECONDS.toNanos(5),
                    "A waited for its hold's bound although nothing else was being written");
            assertTrue(counter(array, "member_prereads") > 0, "alone, A's half row needs the old contents");
            byte[] got = new byte[ROW + ROW / 2];
            array.read(ROW, ByteBuffer.wrap(got));
            assertArrayEquals(java.util.Arrays.copyOfRange(data, ROW, 2 * ROW + ROW / 2), got);
            assertParityConsistent(members, CHUNK, ROWS);
        } finally {
            members.forEach(GatedDevice::release);
            pool.shutdownNow();
        }
    }

    /**
     * With idle members a partial row is issued at once, even when it continues a stream: A's piece of row 2 and
     * P's piece just before it queue behind G's stalled discard of that row; once G's row is written nothing
     * else runs (a discard publishes no write in progress), P is parked (its piece is in A's batch) and nobody can
     * add to the row, so A's batch goes out without a hold (the timed hold waited here for P, who could bring
     * nothing more).
     */
    @Test
    void aPartialRowIsIssuedAtOnceWhenNothingElseRuns() throws Exception {
        List<GatedDevice> members = gatedMembers();
        ExecutorService pool = Executors.newFixedThreadPool(1);
        try (Raid5Array array = create(members, CHUNK, Raid5Layout.LEFT_SYMMETRIC, 8)) {
            byte[] data = new byte[ROWS * ROW];
            new Random(6).nextBytes(data);
            byte[] later = new byte[ROWS * ROW];
            new Random(8).nextBytes(later);
            int aStart = 2 * ROW + CHUNK + 4096;
            int pStart = aStart - 4096;
            members.get(0).arm();
            Future<?> g = pool.submit(() -> {
                array.discard(2 * ROW, ROW);
                return null;
            });
            assertTrue(members.get(0).entered.await(10, TimeUnit.SECONDS), "the discard never reached the member");
            FutureTask<Void> a = parkedWrite(array, later, aStart, 4096);
            FutureTask<Void> p = parkedWrite(array, later, pStart, 4096);
            members.get(0).release();
            g.get(10, TimeUnit.SECONDS);
            a.get(10, TimeUnit.SECONDS);
            p.get(10, TimeUnit.SECONDS);

            assertEquals(0, counter(array, "held_writes"), "nothing else ran: A's batch had nothing to wait for");
            assertEquals(1, counter(array, "full_stripe_writes"), "G's row of zeros");
            assertEquals(1, counter(array, "rmw_writes") + counter(array, "reconstruct_writes"),
                    "A's and P's pieces are one partial row update");
            java.util.Arrays.fill(data, 2 * ROW, 3 * ROW, (byte) 0);
            System.arraycopy(later, pStart, data, pStart, 2 * 4096);
            byte[] got = new byte[ROW];
            array.read(2 * ROW, ByteBuffer.wrap(got));
            assertArrayEquals(java.util.Arrays.copyOfRange(data, 2 * ROW, 3 * ROW), got);
            assertParityConsistent(members, CHUNK, ROWS);
        } finally {
            members.forEach(GatedDevice::release);
            pool.shutdownNow();
        }
    }

    /**
     * Writes {@code data[start, start + length)} on a new thread and returns once that thread waits in the write
     * scheduler (its row is queued behind another owner's).
     */
    private static FutureTask<Void> parkedWrite(Raid5Array array, byte[] data, int start, int length)
            throws InterruptedException {
        FutureTask<Void> task = new FutureTask<>(() -> {
            array.write(start, ByteBuffer.wrap(data, start, length));
            return null;
        });
        Thread t = new Thread(task, "parked-write-" + start);
        t.setDaemon(true);
        t.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!(t.getState() == Thread.State.WAITING && LockSupport.getBlocker(t) instanceof WriteScheduler)) {
            assertFalse(task.isDone(), "the write completed while another write of its row was stalled");
            assertTrue(System.nanoTime() < deadline, "the write never queued");
            Thread.sleep(1);
        }
        return task;
    }

    /**
     * A sequential writer with nobody else in its stream is never held (nobody could complete its rows),
     * even while another thread keeps writing elsewhere on the array.
     */
    @Test
    void aLoneSequentialWriterIsNeverHeld() throws Exception {
        List<GatedDevice> members = gatedMembers();
        ExecutorService pool = Executors.newFixedThreadPool(1);
        AtomicBoolean stop = new AtomicBoolean();
        try (Raid5Array array = create(members, CHUNK, Raid5Layout.LEFT_SYMMETRIC, 8)) {
            byte[] data = new byte[ROWS * ROW];
            new Random(7).nextBytes(data);
            int elsewhere = (ROWS - 1) * ROW;
            Future<Integer> other = pool.submit(() -> {
                int writes = 0;
                while (!stop.get()) {
                    array.write(elsewhere + (writes % 8) * 4096, ByteBuffer.wrap(data, elsewhere, 4096));
                    writes++;
                }
                return writes;
            });
            int shift = 4096;
            int streamEnd = shift + 5 * ROW;
            long started = System.nanoTime();
            for (int round = 0; round < 20; round++) {
                for (int off = shift; off < streamEnd; off += ROW) {
                    array.write(off, ByteBuffer.wrap(data, off, ROW));
                }
            }
            stop.set(true);
            assertTrue(other.get(10, TimeUnit.SECONDS) > 0, "the other writer never wrote");
            assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(10), "the sequential writer was held");
            assertEquals(0, counter(array, "held_writes"));
            byte[] got = new byte[streamEnd - shift];
            array.read(shift, ByteBuffer.wrap(got));
            assertArrayEquals(java.util.Arrays.copyOfRange(data, shift, streamEnd), got);
            assertParityConsistent(members, CHUNK, ROWS);
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }
}
