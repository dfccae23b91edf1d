package io.stripestack.raid5;

import static io.stripestack.raid5.MdadmExamineTest.examine;
import static io.stripestack.raid5.MdadmExamineTest.field;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.blockdev.ForwardingBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The partial parity log: md's format (mdadm reads the policy), and the write hole it closes: a crash
 * between a row's data and parity writes, then a start without the member whose chunk was left alone.
 */
class PartialParityLogTest {
    static final int CHUNK = 16384;
    static final Raid5Config CONFIG = Raid5Config.defaults("ppl").withChunk(CHUNK);
    static final long MEMBER = 4L << 20;
    static final long DATA_OFFSET = Raid5Config.DEFAULT_DATA_OFFSET_SECTORS * 512;
    static final Raid5Options PPL = Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.PPL);

    @TempDir
    Path dir;

    /** A member whose data-area writes can be made to vanish, as when the process dies before they are issued. */
    static final class LosingWrites extends ForwardingBlockDevice {
        volatile boolean lose;

        LosingWrites(BlockDevice below) {
            super(below);
        }

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            if (lose && offset >= DATA_OFFSET) {
                src.position(src.limit());
                return;
            }
            super.write(offset, src);
        }
    }

    /**
     * A member below a volatile write cache, like a disk's or the page cache under a power loss: writes
     * stay in the cache until a flush; a durable write goes to the media at once; {@link #powerLoss}
     * drops what the cache holds.
     */
    static final class VolatileCache extends ForwardingBlockDevice {
        private final List<long[]> offsets = new ArrayList<>();
        private final List<byte[]> cached = new ArrayList<>();

        VolatileCache(BlockDevice below) {
            super(below);
        }

        @Override
        public synchronized void write(long offset, ByteBuffer src) throws IOException {
            byte[] bytes = new byte[src.remaining()];
            src.get(bytes);
            offsets.add(new long[] {offset});
            cached.add(bytes);
        }

        @Override
        public synchronized void read(long offset, ByteBuffer dst) throws IOException {
            int start = dst.position();
            int length = dst.remaining();
            below.read(offset, dst);
            for (int i = 0; i < cached.size(); i++) {
                long at = offsets.get(i)[0];
                byte[] bytes = cached.get(i);
                long from = Math.max(at, offset);
                long to = Math.min(at + bytes.length, offset + length);
                for (long b = from; b < to; b++) {
                    dst.put(start + (int) (b - offset), bytes[(int) (b - at)]);
                }
            }
        }

        @Override
        public synchronized void flush() throws IOException {
            for (int i = 0; i < cached.size(); i++) {
                below.write(offsets.get(i)[0], ByteBuffer.wrap(cached.get(i)));
            }
            powerLoss();
            below.flush();
        }

        synchronized void powerLoss() {
            offsets.clear();
            cached.clear();
        }
    }

    private List<Path> paths(String prefix) {
        return List.of(dir.resolve(prefix + "0"), dir.resolve(prefix + "1"), dir.resolve(prefix + "2"));
    }

    @Test
    void mdadmReportsThePolicyAndTheLogArea() throws Exception {
        List<Path> paths = paths("m");
        try (Raid5Array array = Raid5Files.create(paths, MEMBER, CONFIG, PPL)) {
            assertEquals(ConsistencyPolicy.PPL, array.consistencyPolicy());
            array.write(0, ByteBuffer.wrap(new byte[3 * 4096]));
        }
        String sb = examine(paths.get(1));
        // mdadm --examine names the log's place (its --detail of an assembled array says "Consistency Policy : ppl")
        assertEquals("0x800", field(sb, "Feature Map"), sb);   // the log, units one after another (md's bit alone)
        assertEquals("clean", field(sb, "State"), sb);
        assertTrue(field(sb, "PPL").startsWith("2032 sectors at offset 8 sectors from superblock"), sb);
        assertFalse(sb.contains("Internal Bitmap"), sb);
        try (Raid5Array array = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            assertEquals(ConsistencyPolicy.PPL, array.consistencyPolicy(), "the members' policy is kept");
        }
        try (Raid5Array array = Raid5Files.assemble(paths,
                Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.BITMAP), false)) {
            assertEquals(ConsistencyPolicy.BITMAP, array.consistencyPolicy());
        }
        String switched = examine(paths.get(1));
        assertEquals("0x1", field(switched, "Feature Map"), switched);
        assertEquals("8 sectors from superblock", field(switched, "Internal Bitmap"));
        assertFalse(switched.contains("PPL :"), switched);
    }

    @Test
    void aChunkLargerThanTheLogAreaIsRefusedWithTheFix() {
        Raid5Config big = Raid5Config.defaults("big").withChunk(1 << 20);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Raid5Files.create(paths("b"), 8L << 20, big, PPL).close());
        assertTrue(e.getMessage().contains("consistency_policy bitmap"), e.getMessage());
    }

    @Test
    void withTheLogATornRowRebuildsTheUntouchedChunk() throws Exception {
        byte[][] result = tornWriteThenDegradedStart(PPL, null, Raid5Options.defaults());
        assertArrayEquals(result[0], result[1], "the untouched chunk, rebuilt from parity after the crash");
        assertArrayEquals(result[2], result[3], "the written block");
    }

    @Test
    void aLogSwitchedOnAtRunTimeClosesTheHoleToo() throws Exception {
        Raid5Options resync = Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.RESYNC);
        byte[][] result = tornWriteThenDegradedStart(resync, ConsistencyPolicy.PPL, Raid5Options.defaults());
        assertArrayEquals(result[0], result[1], "the untouched chunk, rebuilt from parity after the crash");
    }

    @Test
    void theBitmapCannotBeSwitchedAtRunTime() throws Exception {
        try (Raid5Array array = Raid5Files.create(paths("s"), MEMBER, CONFIG, Raid5Options.defaults())) {
            assertEquals(ConsistencyPolicy.BITMAP, array.consistencyPolicy());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> array.setConsistencyPolicy(ConsistencyPolicy.PPL));
            assertTrue(e.getMessage().contains("needs a restart with consistency_policy ppl"), e.getMessage());
            assertEquals(ConsistencyPolicy.BITMAP, array.consistencyPolicy());
        }
    }

    @Test
    void withoutTheLogTheSameCrashLosesTheUntouchedChunk() throws Exception {
        Raid5Options bitmap = Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.BITMAP);
        byte[][] result = tornWriteThenDegradedStart(bitmap, null, bitmap.withStartDirtyDegraded(true));
        assertFalse(Arrays.equals(result[0], result[1]), "the write hole: stale parity rebuilds the wrong data");
    }

    /**
     * Fills a 3-member array, then writes one block of row 5's first chunk while the row's parity write is
     * lost, copies the members (the crash) and starts the copies without the member of the row's second
     * chunk, which the write never touched; {@code switchTo}, if given, is switched to on the running array
     * before the write. Returns {expected, read} of that chunk and of the written block.
     */
    private byte[][] tornWriteThenDegradedStart(Raid5Options create, ConsistencyPolicy switchTo, Raid5Options restart)
            throws Exception {
        List<Path> paths = paths("t");
        List<LosingWrites> devices = new ArrayList<>();
        for (Path p : paths) {
            devices.add(new LosingWrites(FileBlockDevice.create(p, MEMBER, 512)));
        }
        long row = 5;
        int rowBytes = 2 * CHUNK;
        int parity = Raid5Layout.LEFT_SYMMETRIC.parityMember(row, 3);
        int untouched = Raid5Layout.LEFT_SYMMETRIC.dataMember(row, 1, 3);
        byte[] model;
        byte[] update = new byte[4096];
        List<Path> crashed = new ArrayList<>();
        try (Raid5Array array = Raid5Array.create(devices, CONFIG, create, true)) {
            model = new byte[(int) array.size()];
            new Random(7).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            if (switchTo != null) {
                array.setConsistencyPolicy(switchTo);
                assertEquals(switchTo, array.consistencyPolicy());
            }
            new Random(8).nextBytes(update);
            devices.get(parity).lose = true;
            array.write(row * rowBytes, ByteBuffer.wrap(update));
            for (Path p : paths) {
                Path copy = dir.resolve(p.getFileName() + ".crash");
                Files.copy(p, copy);
                crashed.add(copy);
            }
            devices.get(parity).lose = false;
        }
        crashed.set(untouched, dir.resolve("gone"));
        try (Raid5Array array = Raid5Files.assemble(crashed, restart, false)) {
            assertEquals(Raid5Status.Health.DEGRADED, array.status().health());
            if (create.consistencyPolicy() == ConsistencyPolicy.PPL || switchTo == ConsistencyPolicy.PPL) {
                assertTrue(array.startRecovery().contains("entries replayed"), array.startRecovery());
                assertTrue(array.wasCleanAtOpen() == false);
            }
            ByteBuffer chunk = ByteBuffer.allocate(CHUNK);
            array.read(row * rowBytes + CHUNK, chunk);
            ByteBuffer written = ByteBuffer.allocate(update.length);
            array.read(row * rowBytes, written);
            return new byte[][] {
                Arrays.copyOfRange(model, (int) (row * rowBytes + CHUNK), (int) (row * rowBytes + 2 * CHUNK)),
                chunk.array(), update, written.array()};
        }
    }

    /**
     * Two updates of one row over the same columns, in different chunks, with nothing flushed between
     * them, then a power loss and a start without the member of a chunk neither touched: the second
     * update's partial parity holds the first one's data, so that data must reach the media before the
     * second entry is logged, or the untouched chunk is rebuilt wrong.
     */
    @Test
    void aPowerLossAfterTwoUpdatesOfOneRowRebuildsTheUntouchedChunk() throws Exception {
        List<Path> paths = List.of(dir.resolve("p0"), dir.resolve("p1"), dir.resolve("p2"), dir.resolve("p3"));
        List<VolatileCache> devices = new ArrayList<>();
        for (Path p : paths) {
            devices.add(new VolatileCache(FileBlockDevice.create(p, MEMBER, 512)));
        }
        long row = 5;
        int rowBytes = 3 * CHUNK;
        int untouched = Raid5Layout.LEFT_SYMMETRIC.dataMember(row, 2, 4);
        byte[] model;
        byte[] first = new byte[4096];
        byte[] second = new byte[4096];
        List<Path> lost = new ArrayList<>();
        try (Raid5Array array = Raid5Array.create(devices, CONFIG, PPL, true)) {
            model = new byte[(int) array.size()];
            new Random(9).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            array.flush();
            new Random(10).nextBytes(first);
            new Random(11).nextBytes(second);
            array.write(row * rowBytes + CHUNK, ByteBuffer.wrap(first));
            long flushes = array.stats().counter("ppl_ordering_flushes").sum();
            array.write(row * rowBytes, ByteBuffer.wrap(second));
            assertEquals(flushes + 1, array.stats().counter("ppl_ordering_flushes").sum(),
                    "the second entry waited for a flush");
            for (int i = 0; i < paths.size(); i++) {
                devices.get(i).powerLoss();
                Path copy = dir.resolve("p" + i + ".lost");
                Files.copy(paths.get(i), copy);
                lost.add(copy);
            }
        }
        lost.set(untouched, dir.resolve("gone"));
        try (Raid5Array array = Raid5Files.assemble(lost, Raid5Options.defaults(), false)) {
            assertEquals(Raid5Status.Health.DEGRADED, array.status().health());
            assertTrue(array.startRecovery().contains("entries replayed"), array.startRecovery());
            ByteBuffer chunk = ByteBuffer.allocate(CHUNK);
            array.read(row * rowBytes + 2 * CHUNK, chunk);
            assertArrayEquals(Arrays.copyOfRange(model, (int) (row * rowBytes + 2 * CHUNK),
                    (int) (row * rowBytes + 3 * CHUNK)), chunk.array(), "the chunk neither update touched");
        }
    }

    /**
     * A member that records, for the kernel's sake, whether a log unit was written while the rows of an earlier unit
     * were still writing a member or were not flushed since: the kernel replays only the newest unit.
     */
    static final class UnitOrder extends ForwardingBlockDevice {
        static final java.util.concurrent.CountDownLatch BLOCKED = new java.util.concurrent.CountDownLatch(1);
        static final java.util.concurrent.CountDownLatch RELEASE = new java.util.concurrent.CountDownLatch(1);
        static volatile boolean armed;
        static volatile boolean gated;
        /** The gated data write started and is not on the media yet (written, not flushed since). */
        static volatile boolean notDurable;
        static final List<String> violations = java.util.Collections.synchronizedList(new ArrayList<>());
        final boolean gate;

        UnitOrder(BlockDevice below, boolean gate) {
            super(below);
            this.gate = gate;
        }

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            if (gate && armed && !gated && offset >= DATA_OFFSET) {
                gated = true;
                notDurable = true;
                BLOCKED.countDown();
                try {
                    RELEASE.await();
                } catch (InterruptedException e) {
                    throw new IOException(e);
                }
            }
            super.write(offset, src);
        }

        @Override
        public void flush() throws IOException {
            boolean wasGated = gate && gated;
            super.flush();
            if (wasGated && RELEASE.getCount() == 0) {
                notDurable = false;
            }
        }

        @Override
        public void writeDurable(long offset, ByteBuffer src) throws IOException {
            if (armed && offset < DATA_OFFSET && notDurable) {
                violations.add("a log unit at member byte " + offset + " was written while a row of an earlier unit"
                        + " was not durable on its members");
                RELEASE.countDown();
            }
            super.writeDurable(offset, src);
        }
    }

    @Test
    void aUnitIsWrittenOnlyOnceTheRowsOfTheUnitBeforeItAreOnTheMedia() throws Exception {
        List<Path> paths = paths("u");
        List<BlockDevice> devices = new ArrayList<>();
        for (int i = 0; i < paths.size(); i++) {
            devices.add(new UnitOrder(FileBlockDevice.create(paths.get(i), MEMBER, 512), i == 0));
        }
        int rowBytes = 3 * CHUNK;
        ExecutorService writers = Executors.newFixedThreadPool(2);
        try (Raid5Array array = Raid5Array.create(devices, CONFIG, PPL, true)) {
            // rows 0 and 4 share the parity member (3) and so its log; chunk 0 of both is on member 0
            UnitOrder.armed = true;
            Future<?> first = writers.submit(() -> {
                array.write(0, ByteBuffer.wrap(new byte[4096]));
                return null;
            });
            assertTrue(UnitOrder.BLOCKED.await(60, TimeUnit.SECONDS), "row 0's data write started");
            Thread[] second = new Thread[1];
            Future<?> later = writers.submit(() -> {
                second[0] = Thread.currentThread();
                array.write(4L * rowBytes, ByteBuffer.wrap(new byte[4096]));
                return null;
            });
            // release row 0 once row 4's unit was written (the violation) or row 4 waits in the log for row 0
            long guard = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (UnitOrder.RELEASE.getCount() > 0 && !waitsInTheLog(second[0]) && System.nanoTime() < guard) {
                Thread.sleep(1);
            }
            UnitOrder.RELEASE.countDown();
            first.get(60, TimeUnit.SECONDS);
            later.get(60, TimeUnit.SECONDS);
        } finally {
            UnitOrder.armed = false;
            writers.shutdownNow();
        }
        assertEquals(List.of(), UnitOrder.violations);
    }

    private static boolean waitsInTheLog(Thread t) {
        if (t == null || t.getState() != Thread.State.WAITING) {
            return false;
        }
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().equals(PartialParityLog.class.getName()) && e.getMethodName().equals("log")) {
                return true;
            }
        }
        return false;
    }

    /** A member whose reads can be slowed down, so that a resync pass lasts. */
    static final class SlowReads extends ForwardingBlockDevice {
        volatile boolean slow = true;

        SlowReads(BlockDevice below) {
            super(below);
        }

        @Override
        public void read(long offset, ByteBuffer dst) throws IOException {
            if (slow && offset >= DATA_OFFSET) {
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            super.read(offset, dst);
        }
    }

    /**
     * A crashed array opened with the log while its parity still needs a resync: the members must not say
     * ppl until the resync is done, or a restart in between would replay an empty log and skip the resync.
     */
    @Test
    void theMembersSayPplOnlyOnceAPendingResyncIsDone() throws Exception {
        List<Path> paths = paths("r");
        List<Path> crashed = new ArrayList<>();
        try (Raid5Array array = Raid5Files.create(paths, MEMBER, CONFIG,
                Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.RESYNC))) {
            array.write(0, ByteBuffer.wrap(new byte[64 * 1024]));
            for (Path p : paths) {
                Path copy = dir.resolve(p.getFileName() + ".crash");
                Files.copy(p, copy);
                crashed.add(copy);
            }
        }
        List<SlowReads> devices = new ArrayList<>();
        for (Path p : crashed) {
            devices.add(new SlowReads(FileBlockDevice.open(p, 512, false, false)));
        }
        try (Raid5Array array = Raid5Assembler.assemble(devices, List.of(), PPL)) {
            assertEquals(ConsistencyPolicy.PPL, array.consistencyPolicy());
            assertFalse(array.wasCleanAtOpen(), "the copies were taken while the array was open");
            String during = examine(crashed.get(0));
            assertEquals("0x0", field(during, "Feature Map"), "no log recorded while the resync runs:\n" + during);
            for (SlowReads d : devices) {
                d.slow = false;
            }
            assertTrue(array.awaitSyncIdle(60, TimeUnit.SECONDS));
            String after = examine(crashed.get(0));
            assertEquals("0x800", field(after, "Feature Map"), "the log, once parity is consistent:\n" + after);
        }
    }

    /** Many threads of partial-row writes share each member's log: afterwards data and parity agree everywhere. */
    @Test
    void concurrentPartialWritesKeepDataAndParity() throws Exception {
        concurrentPartialWrites(false);
    }

    /** The same while the log is switched off and on again and again: no update is lost, none hangs. */
    @Test
    void concurrentPartialWritesKeepDataAndParityWhileTheLogIsSwitched() throws Exception {
        concurrentPartialWrites(true);
    }

    private void concurrentPartialWrites(boolean switching) throws Exception {
        List<Path> paths = paths(switching ? "w" : "c");
        byte[] model;
        try (Raid5Array array = Raid5Files.create(paths, MEMBER, CONFIG, PPL)) {
            model = new byte[(int) array.size()];
            int threads = 8;
            int blocks = model.length / 4096;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<?>> done = new ArrayList<>();
            // the writers go on until the policy switched a few times under them, however slow either side runs
            java.util.concurrent.atomic.AtomicInteger switches = new java.util.concurrent.atomic.AtomicInteger();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    Random random = new Random(thread);
                    byte[] b = new byte[4096];
                    for (int i = 0; i < 300 || (switching && switches.get() <= 4); i++) {
                        // each thread owns the blocks b with b % threads == thread: no two write the same block
                        int block = (random.nextInt(blocks / threads)) * threads + thread;
                        random.nextBytes(b);
                        array.write((long) block * 4096, ByteBuffer.wrap(b));
                        synchronized (model) {
                            System.arraycopy(b, 0, model, block * 4096, 4096);
                        }
                    }
                    return null;
                }));
            }
            while (switching && !allDone(done)) {
                array.setConsistencyPolicy(switches.getAndIncrement() % 2 == 0 ? ConsistencyPolicy.RESYNC
                        : ConsistencyPolicy.PPL);
            }
            // a writer's failure ends the switching early: it is the failure to report, not the count of switches
            for (Future<?> f : done) {
                f.get(2, TimeUnit.MINUTES);
            }
            if (switching) {
                array.setConsistencyPolicy(ConsistencyPolicy.PPL);
                assertTrue(switches.get() > 4, "switches during the writes: " + switches);
            }
            pool.shutdown();
            assertTrue(array.stats().counter("ppl_writes").sum() > 0);
            assertTrue(array.stats().counter("ppl_rows").sum() >= array.stats().counter("ppl_writes").sum());
            assertTrue(switching || array.stats().counter("ppl_area_restarts").sum() > 0, "the logs went round their areas");
        }
        try (Raid5Array array = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            array.setSyncAction("check");
            assertTrue(array.awaitSyncIdle(60, TimeUnit.SECONDS));
            assertEquals(0, array.mismatchCount());
            ByteBuffer all = ByteBuffer.allocate(model.length);
            array.read(0, all);
            assertArrayEquals(model, all.array());
        }
    }

    private static boolean allDone(List<Future<?>> futures) {
        for (Future<?> f : futures) {
            if (!f.isDone()) {
                return false;
            }
        }
        return true;
    }
    /**
     * A write across a chunk boundary (the end of chunk 0 and the start of chunk 1 of a row) whose parity write is
     * lost, then a start without chunk 1's member: the part of chunk 1 the write never touched rebuilds intact. An
     * entry naming chunk 1 over chunk 0's columns too would be skipped for the missing member and leave the parity of
     * those columns stale (the test fails so without the exact entries).
     */
    @Test
    void aWriteAcrossAChunkBoundaryTornThenAStartWithoutOneOfItsChunksRebuildsWhatItDidNotTouch() throws Exception {
        int chunk = 16384;
        int n = 4;
        List<Path> paths = new ArrayList<>();
        List<LosingWrites> devices = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            paths.add(dir.resolve("g" + i));
            devices.add(new LosingWrites(FileBlockDevice.create(paths.get(i), 4L << 20, 512)));
        }
        long row = 5;
        int rowBytes = (n - 1) * chunk;
        int parity = Raid5Layout.LEFT_SYMMETRIC.parityMember(row, n);
        int second = Raid5Layout.LEFT_SYMMETRIC.dataMember(row, 1, n);
        byte[] model;
        List<Path> crashed = new ArrayList<>();
        try (Raid5Array array = Raid5Array.create(devices, Raid5Config.defaults("gap").withChunk(chunk), PPL, true)) {
            model = new byte[(int) array.size()];
            new Random(7).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            byte[] update = new byte[8192];
            new Random(8).nextBytes(update);
            devices.get(parity).lose = true;
            array.write(row * rowBytes + chunk - 4096, ByteBuffer.wrap(update));
            for (Path p : paths) {   // the members as a crash leaves them: the parity write lost
                Path copy = dir.resolve(p.getFileName() + ".crash");
                Files.copy(p, copy);
                crashed.add(copy);
            }
            devices.get(parity).lose = false;
        }
        crashed.set(second, dir.resolve("gone"));
        try (Raid5Array array = Raid5Files.assemble(crashed, Raid5Options.defaults(), false)) {
            ByteBuffer untouched = ByteBuffer.allocate(chunk - 4096);
            array.read(row * rowBytes + chunk + 4096, untouched);
            byte[] expected = Arrays.copyOfRange(model, (int) (row * rowBytes + chunk + 4096),
                    (int) (row * rowBytes + 2 * chunk));
            assertArrayEquals(expected, untouched.array(), "chunk 1 past what the write touched, rebuilt");
        }
    }
}
