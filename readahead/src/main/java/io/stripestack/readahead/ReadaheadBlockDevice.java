package io.stripestack.readahead;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MeteredForwardingBlockDevice;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The readahead stage: the top layer of a LUN's chain. It recognises sequential read streams, reads
 * ahead of them asynchronously into segments of a shared {@link ReadaheadBudget}, and serves later reads
 * from those segments. See docs/readahead.md for the algorithm and its defaults.
 *
 * <p>Streams (the policy alone is {@link StreamDetector}): up to {@value #MAX_STREAMS} per device, so
 * interleaved sequential readers (several sessions, or several threads of one initiator) each keep their
 * own state. A read starting exactly where
 * a stream's furthest read ended continues it; once the stream reads ahead, so does one starting up to
 * four requests before that point (queued reads of one initiator arrive slightly out of order), though it
 * issues nothing unless it ends beyond the furthest read. Anything else starts a candidate stream, which
 * reads nothing ahead. The second read of a stream opens a window sized from
 * the request (as the kernel's ondemand readahead does); each time the reader enters the most recently
 * prefetched window, the next one is issued, larger as the kernel grows it, up to {@code read_ahead_kb}.
 * Once a stream has read two full windows and a window is a single prefetch read, the mark moves one
 * window back: the next window is issued when the reader enters the one before the most recent, so two
 * prefetch reads stay queued ahead of it. Random reads therefore never prefetch, and a read at least as
 * large as {@code read_ahead_kb} prefetches nothing (its own size already gives the device below the
 * large I/O readahead would).
 *
 * <p>Prefetch I/O: a window is read below in reads of {@link #PREFETCH_READ_BYTES} or one full stripe,
 * whichever is larger (within the device's maxTransfer), issued in device order, each into a run of
 * segments adjacent in memory ({@link ReadaheadBudget#tryAcquireRun}); when the budget has no run that
 * long, a read covers less. A reader can so start on the first part of a large window while the rest is
 * read, and two prefetch reads are in flight, one per prefetch thread.
 *
 * <p>Serving: a read whose every segment is READY is copied from the segments (a hit). If all its
 * segments are held but some are still queued, the reader takes one's run off the queue and fetches it
 * itself (neither waiting behind other prefetches nor reading the blocks twice); if some are being read, it
 * waits for them. If any is missing, it goes to the device below itself (a miss) and gets that device's
 * error, if any. A failed prefetch is dropped and reported to nobody: its readers then miss.
 *
 * <p>Writes and discards go below first; before they return, every segment overlapping them is dropped,
 * including ones queued or being loaded, which then go back to the budget instead of being installed
 * (see {@link Segment}). A read that starts after a write returned therefore never sees older bytes.
 * Flush passes through: this layer holds no written data.
 *
 * <p>Concurrency: one {@link ReentrantLock} per device guards the stream table, the segment table, the
 * state of every segment the device holds, the bytes of READY segments and changes of the size (volatile,
 * grown by {@link #resized}; the range checks read it without the lock). Hits copy under it (one
 * memcpy of the request, microseconds, far below a network round trip), which makes dropping a segment
 * atomic with respect to every hit. I/O below (misses, prefetch reads, writes) runs without it. Prefetch
 * reads run on this device's own executor of {@code prefetchThreads} daemon threads named
 * {@code readahead-<device>-<n>}; its queue is bounded by the budget's segment count, and each queued task
 * (a run's first segment) holds a segment, so a submission is never rejected. Readers waiting for a
 * LOADING segment wait on the lock's condition, signalled whenever a load ends or a segment still loading
 * is dropped. With readahead off a read takes no lock: turning it off dropped everything held.
 */
public final class ReadaheadBlockDevice extends MeteredForwardingBlockDevice {
    private static final Logger log = LoggerFactory.getLogger(ReadaheadBlockDevice.class);

    /** Sequential streams tracked per device. */
    public static final int MAX_STREAMS = StreamDetector.MAX_STREAMS;
    /** Prefetch threads per device unless the constructor is told otherwise. */
    public static final int DEFAULT_PREFETCH_THREADS = 2;
    /** The floor of the default window: the kernel's default read_ahead_kb. */
    public static final int MIN_DEFAULT_READ_AHEAD_BYTES = 128 * 1024;
    /**
     * The largest prefetch read, unless one full stripe of the device below is larger: like the kernel's
     * max_sectors_kb (1280 KiB by default), it lets a reader start on the first part of a large window
     * while the rest is read. On the bench's file, 1 MiB reads two at a time were no slower than 4 MiB
     * reads one at a time (docs/readahead.md).
     */
    public static final int PREFETCH_READ_BYTES = 1 << 20;

    private final ReadaheadBudget budget;
    private final String name;
    private final int segmentBytes;
    /** Written under {@link #lock} when the device below grew; read without it by the range checks. */
    private volatile long size;
    private final LongAdder hits;
    private final LongAdder hitBytes;
    private final LongAdder misses;
    private final LongAdder prefetchBytes;
    private final LongAdder wastedPrefetchBytes;
    private final LongAdder prefetchErrors;
    private final LongAdder prefetchSkippedNoBudget;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition loadEnded = lock.newCondition();
    private final SegmentTable table;
    private final Segment[] sweep;
    /** Scratch for the segments of one run being issued; guarded by the lock. */
    private final Segment[] run;
    /** The most segments one prefetch read spans: {@link #PREFETCH_READ_BYTES} or a stripe, within maxTransfer. */
    private final int maxRunSegments;
    /** Which reads form streams and which windows they want; guarded by the lock. */
    private final StreamDetector streams;
    /** How this device carries out the detector's decisions: {@link #issue} and {@link #dropRange}. */
    private final StreamDetector.Prefetcher streamActions = new StreamDetector.Prefetcher() {
        @Override
        public long prefetch(long from, long to) {
            return issue(from, to);
        }

        @Override
        public void abandon(long from, long to) {
            dropRange(from / segmentBytes, (to - 1) / segmentBytes, true);
        }
    };
    private final ThreadPoolExecutor prefetcher;
    private boolean closed;
    /** Written under the lock; read without it only by {@link #readAheadKb()}. */
    private volatile long readAheadBytes;

    /** A stage with the default window ({@link #defaultReadAheadBytes}) and {@value #DEFAULT_PREFETCH_THREADS} prefetch threads. */
    public ReadaheadBlockDevice(BlockDevice below, ReadaheadBudget budget) {
        this(below, budget, DEFAULT_PREFETCH_THREADS);
    }

    public ReadaheadBlockDevice(BlockDevice below, ReadaheadBudget budget, int prefetchThreads) {
        super("readahead:" + below.name(), below);
        if (prefetchThreads < 1) {
            throw new IllegalArgumentException("readahead over " + below.name() + ": prefetchThreads " + prefetchThreads
                    + " must be at least 1");
        }
        this.budget = budget;
        this.name = below.name();
        this.segmentBytes = budget.segmentBytes();
        this.size = below.size();
        if (segmentBytes % below.logicalBlockSize() != 0) {
            throw new IllegalArgumentException("readahead over " + name + ": segment of " + segmentBytes
                    + " bytes is not a multiple of the " + below.logicalBlockSize() + "-byte block");
        }
        this.hits = stats.counter("readahead_hits");
        this.hitBytes = stats.counter("readahead_hit_bytes");
        this.misses = stats.counter("readahead_misses");
        this.prefetchBytes = stats.counter("prefetch_bytes");
        this.wastedPrefetchBytes = stats.counter("wasted_prefetch_bytes");
        this.prefetchErrors = stats.counter("prefetch_errors");
        this.prefetchSkippedNoBudget = stats.counter("prefetch_skipped_no_budget");
        this.table = new SegmentTable(budget.segmentCount());
        this.sweep = new Segment[budget.segmentCount()];
        this.run = new Segment[budget.segmentCount()];
        this.maxRunSegments = prefetchReadSegments(below.geometry(), budget);
        this.streams = new StreamDetector(size, segmentBytes, maxRunSegments);
        this.readAheadBytes = defaultReadAheadBytes(below.geometry(), budget);
        AtomicInteger threadNumber = new AtomicInteger();
        this.prefetcher = new ThreadPoolExecutor(prefetchThreads, prefetchThreads, 0, TimeUnit.SECONDS,
                new ArrayBlockingQueue<>(budget.segmentCount()), runnable -> {
                    Thread thread = new Thread(runnable, "readahead-" + name + "-" + threadNumber.incrementAndGet());
                    thread.setDaemon(true);
                    return thread;
                });
        prefetcher.prestartAllCoreThreads();
    }

    /**
     * Two full stripes of the device below ({@code 2 x optimalIo}, what the kernel gives md and dm-crypt),
     * at least {@value #MIN_DEFAULT_READ_AHEAD_BYTES} bytes, rounded up to whole segments and capped at
     * the budget.
     */
    public static long defaultReadAheadBytes(Geometry geometry, ReadaheadBudget budget) {
        long wanted = Math.max(MIN_DEFAULT_READ_AHEAD_BYTES, 2L * geometry.optimalIo());
        long segment = budget.segmentBytes();
        long rounded = (wanted + segment - 1) / segment * segment;
        return Math.min(rounded, budget.totalBytes());
    }

    /**
     * Segments per prefetch read: {@link #PREFETCH_READ_BYTES} or one full stripe ({@code optimalIo}),
     * whichever is larger, at most {@code maxTransfer} and the budget, at least one segment.
     */
    static int prefetchReadSegments(Geometry geometry, ReadaheadBudget budget) {
        long segment = budget.segmentBytes();
        long bytes = Math.max(PREFETCH_READ_BYTES, geometry.optimalIo());
        if (geometry.maxTransfer() != 0) {
            bytes = Math.min(bytes, geometry.maxTransfer());
        }
        long segments = Math.max(1, bytes / segment);
        return (int) Math.min(segments, budget.segmentCount());
    }

    /** The current window limit in KiB; 0 when readahead is off. */
    public long readAheadKb() {
        return readAheadBytes / 1024;
    }

    /**
     * Sets the window limit at run time, like {@code /sys/block/X/queue/read_ahead_kb}; 0 turns readahead
     * off. All streams restart and unread prefetched data is dropped.
     *
     * @throws IllegalArgumentException unless {@code kb} is 0 or a multiple of the segment size no larger
     *                                  than the budget
     */
    public void setReadAheadKb(long kb) {
        long segmentKb = segmentBytes / 1024;
        if (kb < 0 || kb % segmentKb != 0) {
            throw new IllegalArgumentException("read_ahead_kb " + kb + " for " + name + ": must be 0 (off) or a multiple"
                    + " of the " + segmentKb + " KiB readahead segment");
        }
        if (kb * 1024 > budget.totalBytes()) {
            throw new IllegalArgumentException("read_ahead_kb " + kb + " for " + name + ": exceeds the shared readahead"
                    + " budget of " + budget.totalBytes() / 1024 + " KiB; lower it or raise the budget");
        }
        lock.lock();
        try {
            readAheadBytes = kb * 1024;
            streams.clear();
            dropRange(0, (size - 1) / segmentBytes, false);
        } finally {
            lock.unlock();
        }
    }

    public ReadaheadBudget budget() {
        return budget;
    }

    @Override
    public long size() {
        return size;
    }

    /**
     * The device below grew: the new end is readable and the streams' windows may reach it. A segment that held the
     * old end is shorter than a segment and would serve a read past it short: it is dropped first.
     */
    @Override
    public long resized() {
        long grown = below.resized();
        lock.lock();
        try {
            if (grown > size) {
                if (size % segmentBytes != 0) {
                    long tail = (size - 1) / segmentBytes;
                    dropRange(tail, tail, false);
                }
                size = grown;
                streams.resized(grown);
            }
        } finally {
            lock.unlock();
        }
        return size;
    }

    @Override
    protected void readBlocks(long offset, ByteBuffer dst) throws IOException {
        int length = dst.remaining();
        if (length > 0 && servedFromPrefetch(offset, dst, length)) {
            hits.increment();
            hitBytes.add(length);
        } else {
            misses.increment();
            below.read(offset, dst);
        }
    }

    @Override
    protected void writeBlocks(long offset, ByteBuffer src) throws IOException {
        int length = src.remaining();
        try {
            below.write(offset, src);
        } finally {
            invalidate(offset, length);
        }
    }

    @Override
    protected void discardBlocks(long offset, long length) throws IOException {
        try {
            below.discard(offset, length);
        } finally {
            invalidate(offset, length);
        }
    }

    /** Stops the prefetch threads, returns every segment to the budget, then closes the device below. */
    @Override
    public void close() throws IOException {
        lock.lock();
        try {
            closed = true;
            dropRange(0, (size - 1) / segmentBytes, false);
        } finally {
            lock.unlock();
        }
        // Queued prefetches now find their segment dropped and return it without I/O. No interrupt:
        // interrupting a FileChannel read would close the member file under the layers below.
        prefetcher.shutdown();
        try {
            if (!prefetcher.awaitTermination(30, TimeUnit.SECONDS)) {
                log.warn("{}: prefetch threads still busy 30 s after close; closing the device below anyway", name);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        super.close();
    }

    // ---- read path (all private methods below run with the lock held unless they say otherwise) ----

    /** Copies the read from READY segments and returns true, or returns false for the caller to go below. */
    private boolean servedFromPrefetch(long offset, ByteBuffer dst, int length) throws IOException {
        long end = offset + length;
        long first = offset / segmentBytes;
        long last = (end - 1) / segmentBytes;
        if (readAheadBytes == 0) {
            // Off: nothing is held (turning it off dropped everything), so skip the lock altogether.
            return false;
        }
        lock.lock();
        try {
            if (readAheadBytes == 0 || closed) {
                return false;
            }
            streams.onRead(offset, length, readAheadBytes, streamActions);
            while (true) {
                Segment queued = null;
                boolean loading = false;
                for (long i = first; i <= last; i++) {
                    Segment segment = table.get(i);
                    if (segment == null) {
                        dropCoveredBy(first, last, end);
                        return false;
                    }
                    if (segment.state == Segment.State.QUEUED && queued == null) {
                        queued = segment;
                    }
                    loading |= segment.state == Segment.State.LOADING;
                }
                if (queued != null && prefetcher.remove(queued.runHead)) {
                    // Fetch it on this thread rather than wait behind other prefetches or read it twice.
                    Segment head = queued.runHead;
                    markLoading(head);
                    lock.unlock();
                    try {
                        load(head);
                    } finally {
                        lock.lock();
                    }
                } else if (queued != null || loading) {
                    // A prefetch thread has taken the queued one, or is reading one: wait for it.
                    awaitLoad(offset);
                } else {
                    copyOut(offset, dst, length, first, last);
                    return true;
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private void awaitLoad(long offset) throws InterruptedIOException {
        try {
            loadEnded.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException(name + ": interrupted while waiting for a prefetch of byte " + offset);
        }
    }

    private void copyOut(long offset, ByteBuffer dst, int length, long first, long last) {
        int base = dst.position();
        long end = offset + length;
        for (long i = first; i <= last; i++) {
            Segment segment = table.get(i);
            long from = Math.max(offset, segment.start);
            long to = Math.min(end, segment.end());
            dst.put(base + (int) (from - offset), segment.buffer, (int) (from - segment.start), (int) (to - from));
            segment.served = true;
            if (to == segment.end()) {
                // Read to its last block: the stream has moved on, give the memory back.
                table.remove(i);
                drop(segment);
            }
        }
        dst.position(base + length);
    }

    /**
     * On a miss, segments the read went past are of no more use to the stream that fetched them: a reader
     * that overtook its prefetch must not leave it holding budget behind it. A queued one is then freed
     * by its task without I/O.
     */
    private void dropCoveredBy(long first, long last, long end) {
        for (long i = first; i <= last; i++) {
            Segment segment = table.get(i);
            if (segment != null && segment.end() <= end) {
                table.remove(i);
                drop(segment);
            }
        }
    }

    /**
     * Queues prefetches of the segments of {@code [from, to)} not yet held, adjacent ones in runs of up to
     * {@link #maxRunSegments} read with one read below, in device order; returns where it stopped.
     */
    private long issue(long from, long to) {
        long i = from / segmentBytes;
        while (i * segmentBytes < to) {
            if (table.get(i) != null) {
                i++;
                continue;
            }
            int wanted = 1;
            while (wanted < maxRunSegments && (i + wanted) * segmentBytes < to && table.get(i + wanted) == null) {
                wanted++;
            }
            int got = budget.tryAcquireRun(wanted, run);
            if (got == 0) {
                prefetchSkippedNoBudget.increment();
                return i * segmentBytes;
            }
            Segment head = run[0];
            Segment previous = null;
            for (int k = 0; k < got; k++) {
                Segment segment = run[k];
                run[k] = null;
                long start = (i + k) * segmentBytes;
                segment.assign(this, i + k, start, (int) Math.min(segmentBytes, size - start), head);
                if (previous != null) {
                    previous.nextInRun = segment;
                }
                previous = segment;
                table.put(i + k, segment);
            }
            prefetcher.execute(head);
            i += got;
        }
        return to;
    }

    // ---- invalidation and segment release ----

    private void invalidate(long offset, long length) {
        if (length == 0) {
            return;
        }
        lock.lock();
        try {
            dropRange(offset / segmentBytes, (offset + length - 1) / segmentBytes, false);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Drops every segment numbered in {@code [first, last]}; with {@code onlyUnread}, those already
     * partly served stay for their reader.
     */
    private void dropRange(long first, long last, boolean onlyUnread) {
        if (table.size() == 0) {
            return;
        }
        if (last - first < table.size()) {
            for (long i = first; i <= last; i++) {
                Segment segment = table.get(i);
                if (segment != null && !(onlyUnread && segment.served)) {
                    table.remove(i);
                    drop(segment);
                }
            }
            return;
        }
        int found = table.collect(first, last, sweep);
        for (int k = 0; k < found; k++) {
            Segment segment = sweep[k];
            sweep[k] = null;
            if (!(onlyUnread && segment.served)) {
                table.remove(segment.index);
                drop(segment);
            }
        }
    }

    /**
     * The segment has left the table: free it now if READY, else mark it for its loader to free and wake
     * readers waiting for it, who will now find it missing.
     */
    private void drop(Segment segment) {
        segment.dropped = true;
        if (segment.state == Segment.State.READY) {
            if (!segment.served) {
                wastedPrefetchBytes.add(segment.length);
            }
            free(segment);
        } else {
            loadEnded.signalAll();
        }
    }

    private void free(Segment segment) {
        segment.state = Segment.State.FREE;
        segment.owner = null;
        budget.release(segment);
    }

    // ---- prefetch threads ----

    /**
     * Body of a prefetch task, the head of a QUEUED run; runs on this device's executor, without the lock
     * held on entry. A run whose every segment was dropped while queued is freed without I/O.
     */
    void prefetch(Segment head) {
        lock.lock();
        try {
            boolean wanted = false;
            for (Segment segment = head; segment != null; segment = segment.nextInRun) {
                wanted |= !segment.dropped;
            }
            if (!wanted) {
                for (Segment segment = head, next; segment != null; segment = next) {
                    next = segment.nextInRun;
                    free(segment);
                }
                return;
            }
            markLoading(head);
        } finally {
            lock.unlock();
        }
        load(head);
    }

    private static void markLoading(Segment head) {
        for (Segment segment = head; segment != null; segment = segment.nextInRun) {
            segment.state = Segment.State.LOADING;
        }
    }

    /**
     * Reads a LOADING run from below with one read, then installs each of its segments or, if it was
     * dropped meanwhile or the read failed, frees it. Called without the lock, by a prefetch thread or by
     * a reader that took the run's head off the queue.
     */
    private void load(Segment head) {
        boolean loaded = readBelowInto(head);
        long runBytes = 0;
        long wastedBytes = 0;
        lock.lock();
        try {
            for (Segment segment = head, next; segment != null; segment = next) {
                next = segment.nextInRun;
                runBytes += segment.length;
                if (segment.dropped) {
                    if (loaded) {
                        wastedBytes += segment.length;
                    }
                    free(segment);
                } else if (loaded) {
                    segment.state = Segment.State.READY;
                } else {
                    table.remove(segment.index);
                    free(segment);
                }
            }
            loadEnded.signalAll();
        } finally {
            lock.unlock();
        }
        // After the lock: counters are no work for readers waiting on it. Wasted first, so that whoever
        // sees prefetch_bytes grow sees the waste of the same load.
        if (loaded) {
            wastedPrefetchBytes.add(wastedBytes);
            prefetchBytes.add(runBytes);
        } else {
            prefetchErrors.increment();
        }
    }

    /** Reads the run from below without the lock; a failure is logged and reported to no reader. */
    private boolean readBelowInto(Segment head) {
        ByteBuffer buffer = head.runBuffer();
        long end = head.start + buffer.remaining();
        try {
            below.read(head.start, buffer);
            return true;
        } catch (IOException e) {
            log.debug("{}: prefetch of bytes [{}, {}) failed and was dropped; readers of them go below themselves: {}",
                    name, head.start, end, e.toString());
            return false;
        } catch (RuntimeException e) {
            log.warn("{}: prefetch of bytes [{}, {}) failed unexpectedly and was dropped", name, head.start, end, e);
            return false;
        }
    }

    @Override
    public String toString() {
        return "readahead(" + name + ", read_ahead_kb=" + readAheadKb() + ")";
    }
}
