package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.testkit.FaultInjectingBlockDevice;
import io.stripestack.blockdev.MediumErrorException;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class Raid5ArrayTest {
    static final int SECTOR = 512;
    static final long DATA_OFFSET_SECTORS = 16;

    static List<BlockDevice> memoryMembers(int n, int chunk, int rows) {
        List<BlockDevice> members = new ArrayList<>();
        for (int m = 0; m < n; m++) {
            members.add(new MemoryBlockDevice("m" + m, (int) (DATA_OFFSET_SECTORS * SECTOR) + rows * chunk, SECTOR));
        }
        return members;
    }

    @org.junit.jupiter.api.io.TempDir
    static java.nio.file.Path tempDir;

    static List<BlockDevice> fileMembers(int n, int chunk, int rows) throws java.io.IOException {
        List<BlockDevice> members = new ArrayList<>();
        for (int m = 0; m < n; m++) {
            java.nio.file.Path p = java.nio.file.Files.createTempFile(tempDir, "member" + m, ".img");
            java.nio.file.Files.delete(p);
            members.add(io.stripestack.blockdev.FileBlockDevice.create(p,
                    DATA_OFFSET_SECTORS * SECTOR + (long) rows * chunk, SECTOR));
        }
        return members;
    }

    static Raid5Array create(List<? extends BlockDevice> members, int chunk, Raid5Layout layout, int cacheRows)
            throws Exception {
        return Raid5Array.create(members, new Raid5Config("t", chunk, layout, DATA_OFFSET_SECTORS),
                Raid5Options.defaults().withStripeCacheRows(cacheRows), true);
    }

    /** XOR of every member over every row must be zero. */
    static void assertParityConsistent(List<? extends BlockDevice> members, int chunk, long rows) throws Exception {
        for (long row = 0; row < rows; row++) {
            byte[] acc = new byte[chunk];
            for (BlockDevice m : members) {
                byte[] b = new byte[chunk];
                m.read(DATA_OFFSET_SECTORS * SECTOR + row * chunk, ByteBuffer.wrap(b));
                for (int i = 0; i < chunk; i++) {
                    acc[i] ^= b[i];
                }
            }
            for (int i = 0; i < chunk; i++) {
                if (acc[i] != 0) {
                    fail("parity of row " + row + " inconsistent at column byte " + i);
                }
            }
        }
    }

    // --------------------------------------------------------------- self-describing sectors

    /** Fills one sector with its own address and a version, so a torn or misplaced sector is detectable. */
    static void fillSector(byte[] buf, int at, long sector, long version) {
        ByteBuffer b = ByteBuffer.wrap(buf, at, SECTOR);
        b.putLong(sector + 1).putLong(version);
        long x = sector * 0x9E3779B97F4A7C15L ^ version;
        while (b.hasRemaining()) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            b.putLong(x);
        }
    }

    /** Whether the sector is all zeros (never written) or a complete sector written for that address. */
    static boolean sectorIsWhole(byte[] buf, int at, long sector) {
        ByteBuffer b = ByteBuffer.wrap(buf, at, SECTOR);
        long tag = b.getLong(at);
        if (tag == 0) {
            for (int i = 0; i < SECTOR; i++) {
                if (buf[at + i] != 0) {
                    return false;
                }
            }
            return true;
        }
        if (tag != sector + 1) {
            return false;
        }
        byte[] expected = new byte[SECTOR];
        fillSector(expected, 0, sector, b.getLong(at + 8));
        return java.util.Arrays.equals(expected, 0, SECTOR, buf, at, at + SECTOR);
    }

    /**
     * Property test: threads write and read at random while sharing rows. The first half of the array is
     * interleaved (thread t owns 1 KiB granules g with g mod T == t), the second half is cut into one
     * region per thread at boundaries that split rows. Every read must return whole sectors (old or new,
     * never torn); a read of the thread's own data must equal its model. At the end every byte equals the
     * model and every row's parity is consistent.
     */
    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
    void randomConcurrentReadsAndWritesMatchTheModel(long seed) throws Exception {
        Random setup = new Random(seed);
        Raid5Layout layout = Raid5Layout.values()[(int) (seed % 4)];
        int n = 3 + setup.nextInt(3);
        int chunk = 4096 << setup.nextInt(3);
        int rows = 48;
        int cacheRows = new int[] {1, 2, 8, 64}[setup.nextInt(4)];
        boolean failMidway = seed % 2 == 0;
        List<BlockDevice> members = seed == 3 ? fileMembers(n, chunk, rows) : memoryMembers(n, chunk, rows);
        int threads = 4;
        int failedMember = setup.nextInt(n);
        try (Raid5Array array = create(members, chunk, layout, cacheRows)) {
            int size = (int) array.size();
            byte[] model = new byte[size];
            int half = size / 2 / 1024 * 1024;
            int regionBytes = (size - half) / threads / SECTOR * SECTOR;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                final int me = t;
                futures.add(pool.submit(() -> {
                    Random r = new Random(seed * 1000 + me);
                    int regionStart = half + me * regionBytes;
                    for (int op = 0; op < 300; op++) {
                        if (failMidway && me == 0 && op == 150) {
                            array.failMember(failedMember);
                        }
                        int kind = r.nextInt(10);
                        if (kind < 3) {
                            int granules = half / 1024;
                            int g = r.nextInt(granules / threads) * threads + me;
                            writeSectors(array, model, g * 1024, 1024, r.nextLong());
                        } else if (kind < 6) {
                            int sectors = regionBytes / SECTOR;
                            int first = r.nextInt(sectors);
                            int count = 1 + r.nextInt(Math.min(sectors - first, 3 * (n - 1) * chunk / SECTOR));
                            writeSectors(array, model, regionStart + first * SECTOR, count * SECTOR, r.nextLong());
                        } else if (kind < 8) {
                            int sectors = size / SECTOR;
                            int first = r.nextInt(sectors);
                            int count = 1 + r.nextInt(Math.min(sectors - first, 2 * (n - 1) * chunk / SECTOR));
                            byte[] got = new byte[count * SECTOR];
                            array.read((long) first * SECTOR, ByteBuffer.wrap(got));
                            for (int s = 0; s < count; s++) {
                                assertTrue(sectorIsWhole(got, s * SECTOR, first + s), "torn or misplaced sector "
                                        + (first + s) + " (seed " + seed + ")");
                            }
                        } else {
                            int sectors = regionBytes / SECTOR;
                            int first = r.nextInt(sectors);
                            int count = 1 + r.nextInt(sectors - first);
                            byte[] got = new byte[count * SECTOR];
                            int at = regionStart + first * SECTOR;
                            array.read(at, ByteBuffer.wrap(got));
                            if (!java.util.Arrays.equals(model, at, at + got.length, got, 0, got.length)) {
                                fail(describeDifference(array, model, got, at, seed));
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get();
            }
            pool.shutdown();
            byte[] all = new byte[size];
            array.read(0, ByteBuffer.wrap(all));
            assertArrayEquals(model, all, "seed " + seed);
            if (failMidway) {
                assertEquals(Raid5Status.Health.DEGRADED, array.status().health());
            } else {
                assertParityConsistent(members, chunk, rows);
            }
            assertEquals(0, array.stats().layerCounter("parity_mismatches"));
        }
    }

    /** Names the first differing sector: what the model holds, what was read, what a second read finds. */
    static String describeDifference(Raid5Array array, byte[] model, byte[] got, int at, long seed) throws Exception {
        for (int s = 0; s < got.length / SECTOR; s++) {
            int o = at + s * SECTOR;
            if (!java.util.Arrays.equals(model, o, o + SECTOR, got, s * SECTOR, (s + 1) * SECTOR)) {
                ByteBuffer expected = ByteBuffer.wrap(model, o, SECTOR).slice();
                ByteBuffer read = ByteBuffer.wrap(got, s * SECTOR, SECTOR).slice();
                ByteBuffer again = ByteBuffer.allocate(SECTOR);
                array.read(o, again);
                return "own region differs from the model at array byte " + o + " (seed " + seed + "): model sector tag "
                        + expected.getLong(0) + " version " + expected.getLong(8) + ", read tag " + read.getLong(0)
                        + " version " + read.getLong(8) + ", read again tag " + again.getLong(0) + " version "
                        + again.getLong(8);
            }
        }
        return "no difference found";
    }

    static void writeSectors(BlockDevice array, byte[] model, int offset, int length, long version) throws Exception {
        byte[] data = new byte[length];
        for (int s = 0; s < length / SECTOR; s++) {
            fillSector(data, s * SECTOR, offset / SECTOR + s, version);
        }
        ByteBuffer src = ByteBuffer.wrap(data).asReadOnlyBuffer();
        array.write(offset, src);
        assertEquals(src.limit(), src.position());
        System.arraycopy(data, 0, model, offset, length);
    }

    /** Member writes of one array row must stay inside that row's chunk on the member. */
    static final class RowBoundsCheckingDevice extends StallingDevice {
        final int chunk;
        final java.util.List<String> violations = java.util.Collections.synchronizedList(new ArrayList<>());

        RowBoundsCheckingDevice(BlockDevice inner, int chunk) {
            super(inner);
            this.chunk = chunk;
        }

        @Override
        public void write(long offset, ByteBuffer src) throws java.io.IOException {
            long dataStart = DATA_OFFSET_SECTORS * SECTOR;
            if (offset >= dataStart && (offset - dataStart) / chunk != (offset - dataStart + src.remaining() - 1) / chunk) {
                violations.add(name() + ": write of " + src.remaining() + " bytes at " + offset + " crosses a chunk");
            }
            inner.write(offset, src);
        }
    }

    @Test
    void fullStripeWritesReadNoMember() throws Exception {
        int chunk = 16384;
        List<RowBoundsCheckingDevice> members = new ArrayList<>();
        for (BlockDevice d : memoryMembers(5, chunk, 16)) {
            members.add(new RowBoundsCheckingDevice(d, chunk));
        }
        try (Raid5Array array = create(members, chunk, Raid5Layout.LEFT_SYMMETRIC, 8)) {
            int row = 4 * chunk;
            byte[] data = new byte[row * 3];
            new Random(7).nextBytes(data);
            byte[] copy = data.clone();
            array.write(row * 2L, ByteBuffer.wrap(data));
            assertArrayEquals(copy, data, "write must not modify the caller's buffer");
            assertEquals(3, array.stats().layerCounter("full_stripe_writes"));
            assertEquals(0, array.stats().layerCounter("member_prereads"));
            for (RowBoundsCheckingDevice m : members) {
                assertEquals(0, m.stats().readOps(), m.name() + " was read during full-stripe writes");
                assertEquals(List.of(), m.violations);
            }
            assertParityConsistent(members, chunk, 16);
        }
    }

    @Test
    void sequentialUnalignedWritesNeedFewPrereads() throws Exception {
        int chunk = 65536;
        int n = 4;
        int rows = 40;
        List<BlockDevice> members = memoryMembers(n, chunk, rows);
        try (Raid5Array array = create(members, chunk, Raid5Layout.LEFT_SYMMETRIC, 16)) {
            int rowBytes = (n - 1) * chunk;
            int shift = 81 * 1024;               // a crypto payload offset that is not a multiple of anything
            int writes = rows - 2;
            byte[] data = new byte[rowBytes];
            Random r = new Random(3);
            for (int k = 0; k < writes; k++) {
                r.nextBytes(data);
                array.write((long) k * rowBytes + shift, ByteBuffer.wrap(data));
            }
            long prereads = array.stats().layerCounter("member_prereads");
            long hits = array.stats().layerCounter("stripe_cache_hits");
            // Each write completes the row it starts in from cached data (0 reads) and starts the next row
            // (2 reads of the untouched columns); the very first row has no cached head (2 more reads).
            // Without the cache the completing part would need one more read per write.
            assertTrue(prereads <= 2L * writes + 2, "pre-reads " + prereads + " for " + writes + " writes");
            assertTrue(hits >= writes - 1, "stripe cache hits " + hits);
            long memberBytesRead = 0;
            for (BlockDevice m : members) {
                memberBytesRead += m.stats().readBytes();
            }
            // The head of each row (81 KiB: chunk 0 and 17 KiB of chunk 1) must be made consistent before
            // it is acknowledged, so the other chunks' bytes in those columns are read once: at most
            // (n - 2) chunks per write. The tail of the row costs nothing.
            assertTrue(memberBytesRead <= (long) writes * (n - 2) * chunk + rowBytes,
                    "member bytes read " + memberBytesRead + " for " + (long) writes * rowBytes + " written");
            assertParityConsistent(members, chunk, rows);

            // Small sequential writes: after the first chunk of a row is written, the rest needs no reads.
            long before = array.stats().layerCounter("member_prereads");
            byte[] small = new byte[16384];
            long base = 38L * rowBytes;
            for (int off = 0; off < rowBytes; off += small.length) {
                r.nextBytes(small);
                array.write(base + off, ByteBuffer.wrap(small));
            }
            long smallPrereads = array.stats().layerCounter("member_prereads") - before;
            assertTrue(smallPrereads <= 2L * (chunk / small.length), "small writes pre-read " + smallPrereads);
            assertParityConsistent(members, chunk, rows);
        }
    }

    /** A member whose first write stalls, so that other writes to the same row queue up behind it. */
    static class StallingDevice implements BlockDevice {
        final BlockDevice inner;
        final java.util.concurrent.CountDownLatch firstWriteStarted = new java.util.concurrent.CountDownLatch(1);
        final java.util.concurrent.atomic.AtomicBoolean stalled = new java.util.concurrent.atomic.AtomicBoolean();

        StallingDevice(BlockDevice inner) {
            this.inner = inner;
        }

        @Override public String name() { return inner.name(); }
        @Override public long size() { return inner.size(); }
        @Override public int logicalBlockSize() { return inner.logicalBlockSize(); }
        @Override public io.stripestack.blockdev.Geometry geometry() { return inner.geometry(); }
        @Override public void read(long offset, ByteBuffer dst) throws java.io.IOException { inner.read(offset, dst); }
        @Override public void flush() throws java.io.IOException { inner.flush(); }
        @Override public io.stripestack.blockdev.IoStats stats() { return inner.stats(); }
        @Override public void close() throws java.io.IOException { inner.close(); }

        @Override
        public void write(long offset, ByteBuffer src) throws java.io.IOException {
            if (offset >= DATA_OFFSET_SECTORS * SECTOR && stalled.compareAndSet(false, true)) {
                firstWriteStarted.countDown();
                try {
                    Thread.sleep(300);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            inner.write(offset, src);
        }
    }

    @Test
    void concurrentWritesToOneRowAreMergedAndNeedNoPrereads() throws Exception {
        int chunk = 16384;
        int n = 4;
        List<StallingDevice> members = new ArrayList<>();
        for (BlockDevice d : memoryMembers(n, chunk, 4)) {
            members.add(new StallingDevice(d));
        }
        try (Raid5Array array = create(members, chunk, Raid5Layout.LEFT_SYMMETRIC, 8)) {
            int rowBytes = (n - 1) * chunk;
            byte[] data = new byte[rowBytes];
            new Random(11).nextBytes(data);
            int first = 8192;
            ExecutorService pool = Executors.newFixedThreadPool(5);
            Future<?> a = pool.submit(() -> {
                array.write(0, ByteBuffer.wrap(data, 0, first));
                return null;
            });
            assertTrue(members.stream().anyMatch(m -> {
                try {
                    return m.firstWriteStarted.await(10, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }));
            long prereadsOfFirst = array.stats().layerCounter("member_prereads");
            List<Future<?>> rest = new ArrayList<>();
            int piece = (rowBytes - first) / 4;
            for (int k = 0; k < 4; k++) {
                int off = first + k * piece;
                rest.add(pool.submit(() -> {
                    array.write(off, ByteBuffer.wrap(data, off, piece));
                    return null;
                }));
            }
            a.get();
            for (Future<?> f : rest) {
                f.get();
            }
            pool.shutdown();
            assertEquals(prereadsOfFirst, array.stats().layerCounter("member_prereads"),
                    "the four queued writes fill the rest of the row together: no pre-reads");
            byte[] got = new byte[rowBytes];
            array.read(0, ByteBuffer.wrap(got));
            assertArrayEquals(data, got);
            assertParityConsistent(members, chunk, 4);
        }
    }

    @Test
    void healthyReadsTouchOnlyTheDataMembers() throws Exception {
        int chunk = 8192;
        List<BlockDevice> members = memoryMembers(4, chunk, 8);
        try (Raid5Array array = create(members, chunk, Raid5Layout.LEFT_SYMMETRIC, 8)) {
            long[] before = new long[4];
            for (int m = 0; m < 4; m++) {
                before[m] = members.get(m).stats().readOps();
            }
            // Row 1 of left-symmetric on 4 disks: parity on member 2, chunks 3,4,5 on members 3,0,1.
            array.read(3L * chunk, ByteBuffer.allocateDirect(3 * chunk));
            assertEquals(1, members.get(3).stats().readOps() - before[3]);
            assertEquals(1, members.get(0).stats().readOps() - before[0]);
            assertEquals(1, members.get(1).stats().readOps() - before[1]);
            assertEquals(0, members.get(2).stats().readOps() - before[2], "parity member was read");
        }
    }

    @Test
    void degradedReadsRebuildEveryMembersChunks() throws Exception {
        int chunk = 8192;
        int n = 4;
        int rows = 12;
        for (int failed = 0; failed < n; failed++) {
            List<FaultInjectingBlockDevice> members = new ArrayList<>();
            for (BlockDevice d : memoryMembers(n, chunk, rows)) {
                members.add(new FaultInjectingBlockDevice(d));
            }
            try (Raid5Array array = create(members, chunk, Raid5Layout.LEFT_SYMMETRIC, 4)) {
                byte[] data = new byte[(int) array.size()];
                new Random(failed).nextBytes(data);
                array.write(0, ByteBuffer.wrap(data, 0, data.length / 2));
                for (int off = data.length / 2; off < data.length; off += 3 * SECTOR) {
                    array.write(off, ByteBuffer.wrap(data, off, Math.min(3 * SECTOR, data.length - off)));
                }
                members.get(failed).failNow();
                byte[] got = new byte[data.length];
                array.read(0, ByteBuffer.wrap(got));
                assertArrayEquals(data, got, "degraded read with member " + failed + " failed");
                assertEquals(Raid5Status.Health.DEGRADED, array.status().health());
                assertEquals(Raid5Status.MemberState.FAULTY, array.status().members().get(failed).state());
                assertTrue(array.stats().layerCounter("degraded_reads") > 0);

                // Writes while degraded keep the data readable (rebuilt through parity).
                Random r = new Random(100 + failed);
                for (int k = 0; k < 40; k++) {
                    int len = (1 + r.nextInt(3 * n)) * SECTOR * 4;
                    int off = r.nextInt((data.length - len) / SECTOR) * SECTOR;
                    byte[] chunkData = new byte[len];
                    r.nextBytes(chunkData);
                    System.arraycopy(chunkData, 0, data, off, len);
                    array.write(off, ByteBuffer.wrap(chunkData));
                }
                array.read(0, ByteBuffer.wrap(got));
                assertArrayEquals(data, got, "after degraded writes, member " + failed + " failed");

                int second = (failed + 1) % n;
                members.get(second).failNow();
                MediumErrorException e = assertThrows(MediumErrorException.class,
                        () -> array.read(0, ByteBuffer.allocate((int) array.size())));
                assertTrue(e.getMessage().contains("failed"), e.getMessage());
                assertThrows(MediumErrorException.class, () -> array.write(0, ByteBuffer.allocate(SECTOR)));
                assertEquals(Raid5Status.Health.FAILED, array.status().health());
            }
        }
    }

    /**
     * A member that starts failing in the middle of partial writes (on its writes, or on the pre-reads
     * of a write) is marked faulty; the write that hit the error still completes and every byte stays
     * readable through parity.
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aMemberFailingDuringWritesLeavesTheDataReadable(boolean failWrites) throws Exception {
        int chunk = 8192;
        int n = 4;
        for (int victim = 0; victim < n; victim++) {
            List<FaultInjectingBlockDevice> members = new ArrayList<>();
            for (BlockDevice d : memoryMembers(n, chunk, 10)) {
                members.add(new FaultInjectingBlockDevice(d));
            }
            try (Raid5Array array = create(members, chunk, Raid5Layout.LEFT_ASYMMETRIC, 4)) {
                byte[] model = new byte[(int) array.size()];
                Random r = new Random(victim * 7L + (failWrites ? 1 : 0));
                r.nextBytes(model);
                array.write(0, ByteBuffer.wrap(model));
                FaultInjectingBlockDevice bad = members.get(victim);
                bad.failDirections(!failWrites, failWrites);
                bad.failFromIo(bad.ioCount() + 5);
                for (int k = 0; k < 60; k++) {
                    int len = (1 + r.nextInt(24)) * SECTOR;
                    int off = r.nextInt((model.length - len) / SECTOR) * SECTOR;
                    byte[] data = new byte[len];
                    r.nextBytes(data);
                    array.write(off, ByteBuffer.wrap(data));
                    System.arraycopy(data, 0, model, off, len);
                }
                assertEquals(Raid5Status.MemberState.FAULTY, array.status().members().get(victim).state(),
                        "member " + victim + " should have been marked faulty");
                byte[] got = new byte[model.length];
                array.read(0, ByteBuffer.wrap(got));
                assertArrayEquals(model, got, "member " + victim + " failing on " + (failWrites ? "writes" : "reads"));
            }
        }
    }

    @Test
    void operatorFailedMemberIsRebuiltOnReadAndWritesStayConsistent() throws Exception {
        int chunk = 4096;
        List<BlockDevice> members = memoryMembers(3, chunk, 20);
        try (Raid5Array array = create(members, chunk, Raid5Layout.RIGHT_SYMMETRIC, 2)) {
            byte[] data = new byte[(int) array.size()];
            new Random(9).nextBytes(data);
            array.write(0, ByteBuffer.wrap(data));
            array.failMember(2);
            assertThrows(IllegalArgumentException.class, () -> array.failMember(3));
            byte[] part = new byte[5 * SECTOR];
            new Random(10).nextBytes(part);
            System.arraycopy(part, 0, data, 7 * SECTOR, part.length);
            array.write(7 * SECTOR, ByteBuffer.wrap(part));
            byte[] got = new byte[data.length];
            array.read(0, ByteBuffer.wrap(got));
            assertArrayEquals(data, got);
            assertTrue(array.status().mdstat().contains("[3/2] [UU_]"), array.status().mdstat());
        }
    }

    @Test
    void checkParityOnReadsCountsMismatches() throws Exception {
        int chunk = 4096;
        List<BlockDevice> members = memoryMembers(3, chunk, 4);
        try (Raid5Array array = create(members, chunk, Raid5Layout.LEFT_SYMMETRIC, 4)) {
            array.write(0, ByteBuffer.wrap(new byte[(int) array.size()]).put(0, (byte) 1));
            // Corrupt the parity of row 0 (left-symmetric: member 2) behind the array's back.
            members.get(2).write(DATA_OFFSET_SECTORS * SECTOR, ByteBuffer.wrap(new byte[SECTOR]).put(5, (byte) 7));
            array.read(0, ByteBuffer.allocate(SECTOR));
            assertEquals(0, array.stats().layerCounter("parity_mismatches"), "checking is off by default");
            array.setCheckParityOnReads(true);
            assertTrue(array.checkParityOnReads());
            array.read(0, ByteBuffer.allocate(SECTOR));
            assertEquals(1, array.stats().layerCounter("parity_mismatches"));
            array.read(chunk * 2L, ByteBuffer.allocate(SECTOR));   // row 1 is consistent
            assertEquals(1, array.stats().layerCounter("parity_mismatches"));
            array.setCheckParityOnReads(false);
            array.read(0, ByteBuffer.allocate(SECTOR));
            assertEquals(1, array.stats().layerCounter("parity_mismatches"));
        }
    }

    @Test
    void runtimeControlsAndGeometry() throws Exception {
        int chunk = 65536;
        List<BlockDevice> members = memoryMembers(5, chunk, 4);
        try (Raid5Array array = create(members, chunk, Raid5Layout.LEFT_SYMMETRIC, 16)) {
            assertEquals(chunk, array.geometry().minimumIo());
            assertEquals(4 * chunk, array.geometry().optimalIo());
            assertEquals(0, array.geometry().alignmentOffset());
            assertEquals(0, array.geometry().maxTransfer() % array.geometry().optimalIo());
            assertEquals(16, array.stripeCacheSize());
            for (int row = 0; row < 4; row++) {
                array.write((long) row * 4 * chunk, ByteBuffer.allocate(SECTOR));
            }
            assertEquals(4, array.stripeCacheActive(), "one cached row per partially written row");
            array.setStripeCacheSize(1);
            assertEquals(1, array.stripeCacheSize());
            assertEquals(1, array.stripeCacheActive(), "shrinking frees the rows above the new size");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> array.setStripeCacheSize(0));
            assertTrue(e.getMessage().contains("1..32768"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> array.setStripeCacheSize(40000));
            byte[] data = new byte[3 * SECTOR];
            new Random(1).nextBytes(data);
            array.write(SECTOR, ByteBuffer.wrap(data));
            byte[] got = new byte[data.length];
            array.read(SECTOR, ByteBuffer.wrap(got));
            assertArrayEquals(data, got);
            assertEquals(Raid5Status.Health.CLEAN, array.status().health());
            assertThrows(IllegalArgumentException.class, () -> array.read(100, ByteBuffer.allocate(SECTOR)));
        }
    }

    @Test
    void ioAfterCloseIsRefusedWithoutFailingMembers() throws Exception {
        List<BlockDevice> members = memoryMembers(3, 4096, 4);
        Raid5Array array = create(members, 4096, Raid5Layout.LEFT_SYMMETRIC, 4);
        array.close();
        assertThrows(java.nio.channels.ClosedChannelException.class, () -> array.write(0, ByteBuffer.allocate(SECTOR)));
        assertThrows(java.nio.channels.ClosedChannelException.class, () -> array.read(0, ByteBuffer.allocate(SECTOR)));
        assertEquals(Raid5Status.Health.CLEAN, array.status().health());
    }

    @Test
    void resyncRepairsParityOfNonZeroMembers() throws Exception {
        int chunk = 4096;
        List<BlockDevice> members = memoryMembers(4, chunk, 6);
        Random r = new Random(5);
        for (BlockDevice m : members) {
            byte[] junk = new byte[(int) m.size() - (int) (DATA_OFFSET_SECTORS * SECTOR)];
            r.nextBytes(junk);
            m.write(DATA_OFFSET_SECTORS * SECTOR, ByteBuffer.wrap(junk));
        }
        try (Raid5Array array = Raid5Array.create(members, new Raid5Config("t", chunk, Raid5Layout.LEFT_SYMMETRIC,
                DATA_OFFSET_SECTORS), Raid5Options.defaults(), false)) {
            assertParityConsistent(members, chunk, 6);
        }
    }

    /** Moved here from Raid0ArrayTest, which left for the bench module with Raid0Array. */
    @Test
    void automaticStripeCacheSizeFitsThirtyTwoMebibytes() {
        assertEquals(16, Raid5Array.defaultStripeCacheRows(4, 512 * 1024));
        assertEquals(256, Raid5Array.defaultStripeCacheRows(3, 4096));
        assertEquals(4, Raid5Array.defaultStripeCacheRows(16, 4 << 20));
    }
}
