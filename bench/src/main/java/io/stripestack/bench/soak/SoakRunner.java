package io.stripestack.bench.soak;

import io.stripestack.bench.soak.BlockPattern.Verdict;
import io.stripestack.bench.soak.SoakStats.Corruption;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * The soak: {@code queueDepth} workers write self-checking 4 KiB blocks ({@link BlockPattern}) and read them
 * back, remembering per block the last acknowledged generation ({@link GenerationTable}); every read is
 * verified against it. Optionally a sync thread issues SYNCHRONIZE CACHE periodically and a member of the array
 * below is failed mid-run. A summary line is printed every {@code reportEvery}.
 *
 * <p>Threads: {@link #run} is called by one controlling thread, which also prints the summaries and triggers
 * the member failure; it starts the {@code soak-N} workers and the {@code soak-sync} thread and joins them
 * before returning. A worker owns one extent ({@code maxIoBlocks} blocks) at a time, claimed in
 * {@code extentBusy} by compare-and-set, so no two I/Os ever touch the same block at once and the expected
 * generation of a block is exact. {@link #stop} may be called from any thread (a shutdown hook). Each worker
 * owns its direct buffer and its {@link BlockPattern}: the I/O loop allocates nothing.
 */
public final class SoakRunner {
    private final SoakDevice device;
    private final SoakSettings settings;
    private final ArrayChaos chaos;
    private final PrintStream out;
    private final int extentBlocks;
    private final int extents;
    private final GenerationTable table;
    private final AtomicIntegerArray extentBusy;
    private final SoakStats stats = new SoakStats();
    private final Object stopSignal = new Object();
    private volatile boolean stopping;
    private volatile int[] durable;
    private boolean memberFailed;

    /**
     * @param chaos  null unless the settings ask for a member failure
     * @param out    where summaries and corruption reports go
     */
    public SoakRunner(SoakDevice device, SoakSettings settings, ArrayChaos chaos, PrintStream out) {
        if (BlockPattern.BLOCK % device.logicalBlockSize() != 0) {
            throw new IllegalArgumentException(device.description() + ": logical block size "
                    + device.logicalBlockSize() + " does not divide the soak's 4 KiB block");
        }
        if (settings.failMemberAfter() != null && chaos == null) {
            throw new IllegalArgumentException("a member failure was asked for, but " + device.description()
                    + " has no RAID-5 array below it that the soak can reach (in-process: a LUN on an array;"
                    + " iSCSI: give the admin socket)");
        }
        long span = settings.spanBytes() == 0 ? device.size() : Math.min(settings.spanBytes(), device.size());
        long blocks = span / BlockPattern.BLOCK;
        if (blocks > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(device.description() + ": " + span + " bytes is more than the soak"
                    + " tracks (8 TiB); give --span");
        }
        long tableBytes = blocks * 8;
        if (tableBytes > Runtime.getRuntime().maxMemory() / 2) {
            throw new IllegalArgumentException("tracking " + blocks + " blocks needs " + (tableBytes >> 20)
                    + " MiB of heap; give a smaller --span or a larger -Xmx");
        }
        this.extentBlocks = settings.maxIoBlocks();
        this.extents = (int) (blocks / extentBlocks);
        if (extents < 1) {
            throw new IllegalArgumentException(device.description() + ": " + span + " bytes is smaller than one "
                    + extentBlocks * BlockPattern.BLOCK + "-byte I/O");
        }
        this.device = device;
        this.settings = settings;
        this.chaos = chaos;
        this.out = out;
        this.table = new GenerationTable(extents * extentBlocks);
        this.extentBusy = new AtomicIntegerArray(extents);
    }

    /** What a run ended with. */
    public record Result(Duration elapsed, SoakStats stats) {
        public boolean passed() {
            return stats.corruptions() == 0 && stats.ioErrors() == 0;
        }

        /** 0 passed, 1 corruption found, 2 I/O errors without corruption. */
        public int exitCode() {
            return stats.corruptions() > 0 ? 1 : stats.ioErrors() > 0 ? 2 : 0;
        }
    }

    public GenerationTable generations() {
        return table;
    }

    public SoakStats stats() {
        return stats;
    }

    /** The acknowledged generations as of the last SYNCHRONIZE CACHE that completed, or null before the first. */
    public int[] durableGenerations() {
        return durable;
    }

    /** Asks {@link #run} to finish: workers complete their current I/O and stop. */
    public void stop() {
        stopping = true;
        synchronized (stopSignal) {
            stopSignal.notifyAll();
        }
    }

    /**
     * Runs the workers until the duration passes, {@link #stop} is called, or the device becomes unusable;
     * prints the summaries and a final line. May be called again to continue with the same table.
     */
    public Result run() throws InterruptedException {
        stopping = false;
        long start = System.nanoTime();
        out.printf("soak %s: %d blocks of 4 KiB (%d MiB), %d I/Os in flight, I/O up to %d KiB, %d%% reads, seed %d%s%n",
                device.description(), table.blocks(), (long) table.blocks() * BlockPattern.BLOCK >> 20,
                settings.queueDepth(), extentBlocks * 4, settings.readPercent(), settings.seed(),
                settings.duration() == null ? ", until Ctrl-C" : ", for " + SoakSettings.format(settings.duration()));
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < settings.queueDepth(); i++) {
            long workerSeed = settings.seed() * 31 + i + System.nanoTime();
            Thread t = new Thread(() -> work(new SplittableRandom(workerSeed)), "soak-" + i);
            t.setDaemon(true);
            threads.add(t);
        }
        if (!settings.syncEvery().isZero()) {
            Thread t = new Thread(this::syncLoop, "soak-sync");
            t.setDaemon(true);
            threads.add(t);
        }
        threads.forEach(Thread::start);
        long deadline = settings.duration() == null ? Long.MAX_VALUE : start + settings.duration().toNanos();
        long nextReport = start + settings.reportEvery().toNanos();
        long lastWritten = 0;
        long lastVerified = 0;
        long lastReport = start;
        try {
            while (!stopping) {
                long now = System.nanoTime();
                if (now >= deadline || !device.usable()) {
                    break;
                }
                maybeFailMember(now - start);
                if (now >= nextReport) {
                    long written = stats.blocksWritten();
                    long verified = stats.blocksVerified();
                    out.println(summary(Duration.ofNanos(now - start), written, verified,
                            (written - lastWritten) * BlockPattern.BLOCK, (verified - lastVerified) * BlockPattern.BLOCK,
                            now - lastReport));
                    lastWritten = written;
                    lastVerified = verified;
                    lastReport = now;
                    nextReport = now + settings.reportEvery().toNanos();
                }
                long wakeAt = Math.min(deadline, nextReport);
                if (settings.failMemberAfter() != null && !memberFailed) {
                    wakeAt = Math.min(wakeAt, start + settings.failMemberAfter().toNanos());
                }
                long waitMs = Math.max(1, Math.min(1000, (wakeAt - now) / 1_000_000));
                synchronized (stopSignal) {
                    if (!stopping) {
                        stopSignal.wait(waitMs);
                    }
                }
            }
        } finally {
            stop();
            for (Thread t : threads) {
                t.join();
            }
        }
        Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
        Result result = new Result(elapsed, stats);
        out.println(finalLine(result));
        return result;
    }

    private void maybeFailMember(long elapsedNanos) {
        if (settings.failMemberAfter() == null || memberFailed || elapsedNanos < settings.failMemberAfter().toNanos()) {
            return;
        }
        memberFailed = true;
        String when = SoakSettings.format(Duration.ofNanos(elapsedNanos));
        try {
            out.println("soak: failing member " + settings.failRole() + " at " + when + ": "
                    + chaos.failMember(settings.failRole()));
            if (settings.spare() != null) {
                out.println("soak: adding spare " + settings.spare() + ": " + chaos.addSpare(settings.spare()));
            }
        } catch (IOException | RuntimeException e) {
            if (stats.ioError("chaos at " + when + ": " + e.getMessage())) {
                out.println("soak: chaos action at " + when + " failed: " + e.getMessage());
            }
        }
    }

    private void work(SplittableRandom random) {
        try {
            workLoop(random);
        } catch (RuntimeException | Error e) {
            // a bug of the soak itself: stop the run loudly rather than let the load quietly shrink
            stats.ioError("soak worker " + Thread.currentThread().getName() + " failed: " + e);
            out.println("soak: INTERNAL ERROR in " + Thread.currentThread().getName() + ": " + e);
            stop();
            throw e;
        }
    }

    private void workLoop(SplittableRandom random) {
        ByteBuffer buffer = ByteBuffer.allocateDirect(extentBlocks * BlockPattern.BLOCK);
        BlockPattern pattern = new BlockPattern(settings.seed(), buffer);
        while (!stopping && device.usable()) {
            int extent = random.nextInt(extents);
            if (!extentBusy.compareAndSet(extent, 0, 1)) {
                continue;
            }
            try {
                int startInExtent;
                int count;
                if (random.nextInt(4) == 0) {
                    startInExtent = 0;
                    count = extentBlocks; // whole extents: full-stripe writes when the extent covers a stripe
                } else {
                    startInExtent = random.nextInt(extentBlocks);
                    count = 1 + random.nextInt(extentBlocks - startInExtent);
                }
                int first = extent * extentBlocks + startInExtent;
                if (random.nextInt(100) < settings.readPercent()) {
                    readAndVerify(buffer, pattern, first, count);
                } else {
                    write(buffer, pattern, first, count);
                }
            } finally {
                extentBusy.set(extent, 0);
            }
        }
    }

    private void write(ByteBuffer buffer, BlockPattern pattern, int first, int count) {
        buffer.clear();
        for (int i = 0; i < count; i++) {
            pattern.fill(i * BlockPattern.BLOCK, first + i, table.issue(first + i));
        }
        buffer.limit(count * BlockPattern.BLOCK).position(0);
        try {
            device.write((long) first * BlockPattern.BLOCK, buffer);
        } catch (IOException e) {
            ioError("write of blocks " + first + ".." + (first + count - 1), e);
            return;
        }
        for (int i = 0; i < count; i++) {
            table.acknowledge(first + i, table.issued(first + i));
        }
        stats.writes.increment();
        stats.blocksWritten.add(count);
    }

    private void readAndVerify(ByteBuffer buffer, BlockPattern pattern, int first, int count) {
        buffer.limit(count * BlockPattern.BLOCK).position(0);
        try {
            device.read((long) first * BlockPattern.BLOCK, buffer);
        } catch (IOException e) {
            ioError("read of blocks " + first + ".." + (first + count - 1), e);
            return;
        }
        stats.reads.increment();
        for (int i = 0; i < count; i++) {
            int block = first + i;
            verify(pattern, i * BlockPattern.BLOCK, block, table.acknowledged(block), table.issued(block));
        }
    }

    /** Checks one block in the pattern's buffer against {@code [min, max]}; counts and reports what it finds. */
    private boolean verify(BlockPattern pattern, int at, int block, int min, int max) {
        Verdict v = pattern.check(at, block, min, max);
        if (v == Verdict.OK) {
            stats.blocksVerified.increment();
            return true;
        }
        if (v == Verdict.UNWRITTEN) {
            return true;
        }
        Corruption c = new Corruption(block, (long) block * BlockPattern.BLOCK / device.logicalBlockSize(), v, min,
                max, pattern.foundGeneration(), pattern.foundBlock());
        if (stats.corruption(c)) {
            out.println("soak: CORRUPTION " + c);
        }
        return false;
    }

    private void ioError(String what, IOException e) {
        if (stats.ioError(what + ": " + e.getMessage()) && !stopping) {
            out.println("soak: I/O ERROR " + what + ": " + e.getMessage());
        }
    }

    private void syncLoop() {
        long periodMs = Math.max(1, settings.syncEvery().toMillis());
        while (!stopping && device.usable()) {
            synchronized (stopSignal) {
                try {
                    stopSignal.wait(periodMs);
                } catch (InterruptedException e) {
                    return;
                }
            }
            if (stopping) {
                return;
            }
            int[] snapshot = table.snapshotAcknowledged();
            try {
                device.flush();
                durable = snapshot;
                stats.syncs.increment();
            } catch (IOException e) {
                ioError("SYNCHRONIZE CACHE", e);
            }
        }
    }

    /**
     * Reads every block this run has written, sequentially in {@code maxIoBlocks} pieces, and verifies it
     * against {@code [minimum, issued]} where the minimum is {@code floor[block]}, or the acknowledged
     * generation when {@code floor} is null. Call it while {@link #run} is not running. Returns the number of
     * corrupted blocks found (also counted in {@link #stats()}).
     */
    public long verifyAll(int[] floor) throws IOException {
        return verifyAll(device, floor);
    }

    /**
     * {@link #verifyAll(int[])} through another device onto the same LUN, e.g. a new session after the target
     * was killed and restarted (the crash test).
     */
    public long verifyAll(SoakDevice on, int[] floor) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocateDirect(extentBlocks * BlockPattern.BLOCK);
        BlockPattern pattern = new BlockPattern(settings.seed(), buffer);
        long before = stats.corruptions();
        for (int first = 0; first < table.blocks(); first += extentBlocks) {
            boolean written = false;
            for (int i = 0; i < extentBlocks && !written; i++) {
                written = table.issued(first + i) > 0;
            }
            if (!written) {
                continue;
            }
            buffer.clear();
            on.read((long) first * BlockPattern.BLOCK, buffer);
            for (int i = 0; i < extentBlocks; i++) {
                int block = first + i;
                verify(pattern, i * BlockPattern.BLOCK, block, floor == null ? table.acknowledged(block) : floor[block],
                        table.issued(block));
            }
        }
        return stats.corruptions() - before;
    }

    private String summary(Duration elapsed, long written, long verified, long writtenBytes, long verifiedBytes,
            long intervalNanos) {
        double seconds = Math.max(1e-9, intervalNanos / 1e9);
        StringBuilder s = new StringBuilder(String.format(
                "soak %s written %d blocks (%d MiB, %.1f MB/s) verified %d blocks (%d MiB, %.1f MB/s) syncs %d"
                        + " | corruption: %s | I/O errors: %d",
                SoakSettings.format(elapsed), written, written * BlockPattern.BLOCK >> 20, writtenBytes / seconds / 1e6,
                verified, verified * BlockPattern.BLOCK >> 20, verifiedBytes / seconds / 1e6, stats.syncs(),
                stats.corruptionSummary(), stats.ioErrors()));
        List<Corruption> first = stats.firstCorruptions();
        if (!first.isEmpty()) {
            s.append(" | first corrupted LBAs:");
            for (int i = 0; i < Math.min(5, first.size()); i++) {
                s.append(' ').append(first.get(i).lba());
            }
        }
        return s.toString();
    }

    private String finalLine(Result r) {
        String totals = String.format("written %d blocks, verified %d blocks, %d syncs", stats.blocksWritten(),
                stats.blocksVerified(), stats.syncs());
        if (r.passed()) {
            return "soak PASSED after " + SoakSettings.format(r.elapsed()) + ": " + totals
                    + ", no corruption, no I/O errors";
        }
        StringBuilder s = new StringBuilder("soak FAILED after " + SoakSettings.format(r.elapsed()) + ": " + totals
                + "; corrupted block reads: " + stats.corruptions() + " (" + stats.corruptionSummary() + "); I/O errors: "
                + stats.ioErrors());
        List<Corruption> first = stats.firstCorruptions();
        if (!first.isEmpty()) {
            s.append("; first: ").append(first.get(0));
        }
        if (stats.firstIoError() != null) {
            s.append("; first I/O error: ").append(stats.firstIoError());
        }
        return s.toString();
    }
}
