package io.stripestack.raid5;

import static io.stripestack.raid5.Raid5ArrayTest.DATA_OFFSET_SECTORS;
import static io.stripestack.raid5.Raid5ArrayTest.SECTOR;
import static io.stripestack.raid5.Raid5ArrayTest.assertParityConsistent;
import static io.stripestack.raid5.Raid5ArrayTest.memoryMembers;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.testkit.FaultInjectingBlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** Spares and rebuild, scrub (check/repair), dirty start, read-error repair and discard. */
class Raid5LifecycleTest {
    static final int CHUNK = 8192;

    static Raid5Array create(List<? extends BlockDevice> members) throws Exception {
        return Raid5Array.create(members, new Raid5Config("life", CHUNK, Raid5Layout.LEFT_SYMMETRIC,
                DATA_OFFSET_SECTORS), Raid5Options.defaults().withStripeCacheRows(4), true);
    }

    static List<FaultInjectingBlockDevice> faulty(List<BlockDevice> devices) {
        List<FaultInjectingBlockDevice> out = new ArrayList<>();
        for (BlockDevice d : devices) {
            out.add(new FaultInjectingBlockDevice(d));
        }
        return out;
    }

    static MemoryBlockDevice spare(String name, int rows) {
        return new MemoryBlockDevice(name, (int) (DATA_OFFSET_SECTORS * SECTOR) + rows * CHUNK, SECTOR);
    }

    static byte[] readAll(Raid5Array array) throws Exception {
        byte[] got = new byte[(int) array.size()];
        array.read(0, ByteBuffer.wrap(got));
        return got;
    }

    static void await(Raid5Array array) throws Exception {
        assertTrue(array.awaitSyncIdle(30, TimeUnit.SECONDS), "sync did not finish: " + array.syncProgress());
    }

    /** The members that hold the array's roles now (a rebuilt spare in place of the failed member). */
    static List<BlockDevice> currentMembers(List<? extends BlockDevice> original, int replacedRole, BlockDevice spare) {
        List<BlockDevice> now = new ArrayList<>(original);
        now.set(replacedRole, spare);
        return now;
    }

    @Test
    void aFailedMemberIsRebuiltOntoASpareWhileWritesAndReadsContinue() throws Exception {
        int n = 4;
        int rows = 96;
        List<FaultInjectingBlockDevice> members = faulty(memoryMembers(n, CHUNK, rows));
        MemoryBlockDevice spare = spare("spare", rows);
        try (Raid5Array array = create(members)) {
            byte[] model = new byte[(int) array.size()];
            new Random(1).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            array.addSpare(spare);
            assertEquals(List.of("spare"), array.status().spares());
            array.setSyncSpeedMin(1);
            array.setSyncSpeedMax(1500);         // ~2 s for 96 x 8 KiB: the workload overlaps the rebuild
            members.get(1).failNow();
            array.failMember(1);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!array.syncAction().equals("recover") && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertEquals(Raid5Status.MemberState.REBUILDING, array.status().members().get(1).state());
            assertTrue(array.status().mdstat().contains("recovery ="), array.status().mdstat());
            AtomicBoolean rebuildSeen = new AtomicBoolean();
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                // Each writer owns half of the array, so the model needs no lock.
                List<Future<?>> writers = new ArrayList<>();
                for (int t = 0; t < 2; t++) {
                    int half = t;
                    writers.add(pool.submit(() -> {
                        Random r = new Random(10 + half);
                        int span = model.length / 2;
                        for (int k = 0; k < 300; k++) {
                            int len = (1 + r.nextInt(40)) * SECTOR;
                            int off = half * span + r.nextInt((span - len) / SECTOR) * SECTOR;
                            byte[] data = new byte[len];
                            r.nextBytes(data);
                            array.write(off, ByteBuffer.wrap(data));
                            System.arraycopy(data, 0, model, off, len);
                            byte[] back = new byte[len];
                            array.read(off, ByteBuffer.wrap(back));
                            assertArrayEquals(data, back, "read-back during rebuild at " + off);
                            if (array.syncAction().equals("recover")) {
                                rebuildSeen.set(true);
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : writers) {
                    f.get(60, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertTrue(rebuildSeen.get(), "the workload never overlapped the rebuild");
            array.setSyncSpeedMax(Raid5Array.DEFAULT_SYNC_SPEED_MAX);
            await(array);
            Raid5Status status = array.status();
            assertEquals(Raid5Status.Health.CLEAN, status.health(), status.mdstat());
            assertEquals(Raid5Status.MemberState.ACTIVE, status.members().get(1).state());
            assertEquals("spare", status.members().get(1).device());
            assertEquals(List.of(), status.spares());
            assertArrayEquals(model, readAll(array));
            assertParityConsistent(currentMembers(members, 1, spare), CHUNK, rows);
            array.setSyncAction("check");
            await(array);
            assertEquals(0, array.mismatchCount());
        }
    }

    @Test
    void addingASpareToADegradedArrayRebuildsAndRemoveDetachesTheFailedMember() throws Exception {
        int rows = 20;
        List<FaultInjectingBlockDevice> members = faulty(memoryMembers(3, CHUNK, rows));
        try (Raid5Array array = create(members)) {
            byte[] model = new byte[(int) array.size()];
            new Random(2).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            assertThrows(IllegalStateException.class, () -> array.removeMember(0), "an active member");
            array.failMember(0);
            assertThrows(IllegalStateException.class, () -> array.setSyncAction("recover"));
            array.removeMember(0);
            assertEquals(Raid5Status.MemberState.MISSING, array.status().members().get(0).state());
            assertThrows(IllegalArgumentException.class, () -> array.addSpare(spare("tiny", rows - 1)));
            MemoryBlockDevice replacement = spare("new0", rows);
            array.addSpare(replacement);
            await(array);
            assertEquals(Raid5Status.Health.CLEAN, array.status().health(), array.status().mdstat());
            assertArrayEquals(model, readAll(array));
            assertParityConsistent(currentMembers(members, 0, replacement), CHUNK, rows);
        }
    }

    @Test
    void aReplacementFailingDuringItsRebuildIsReplacedByTheNextSpare() throws Exception {
        int rows = 40;
        List<FaultInjectingBlockDevice> members = faulty(memoryMembers(4, CHUNK, rows));
        try (Raid5Array array = create(members)) {
            byte[] model = new byte[(int) array.size()];
            new Random(8).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            FaultInjectingBlockDevice flaky = new FaultInjectingBlockDevice(spare("flaky", rows));
            MemoryBlockDevice good = spare("good", rows);
            array.setSyncAction("frozen");      // both spares are in place before the rebuild starts
            array.failMember(3);
            array.addSpare(flaky);
            array.addSpare(good);
            flaky.failFromIo(flaky.ioCount() + 12);
            array.setSyncAction("idle");
            await(array);
            Raid5Status status = array.status();
            assertEquals(Raid5Status.Health.CLEAN, status.health(), status.mdstat());
            assertEquals("good", status.members().get(3).device());
            assertArrayEquals(model, readAll(array));
            assertParityConsistent(currentMembers(members, 3, good), CHUNK, rows);
        }
    }

    @Test
    void aSecondMemberFailingDuringARebuildFailsTheArrayWithoutWrongData() throws Exception {
        int rows = 40;
        List<FaultInjectingBlockDevice> members = faulty(memoryMembers(3, CHUNK, rows));
        try (Raid5Array array = create(members)) {
            array.write(0, ByteBuffer.wrap(new byte[(int) array.size()]));
            array.setSyncAction("frozen");
            array.failMember(0);
            array.addSpare(spare("spare", rows));
            members.get(1).failDirections(true, false);
            members.get(1).failFromIo(members.get(1).ioCount() + 10);
            array.setSyncAction("idle");
            await(array);
            assertEquals(Raid5Status.Health.FAILED, array.status().health());
            assertThrows(io.stripestack.blockdev.MediumErrorException.class,
                    () -> array.read(0, ByteBuffer.allocate((int) array.size())));
        }
    }

    @Test
    void checkCountsInjectedMismatchesRepairFixesThem() throws Exception {
        int n = 4;
        int rows = 12;
        List<BlockDevice> members = memoryMembers(n, CHUNK, rows);
        try (Raid5Array array = create(members)) {
            byte[] model = new byte[(int) array.size()];
            new Random(3).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            array.setSyncAction("check");
            await(array);
            assertEquals(0, array.mismatchCount());
            // Corrupt two 4 KiB pages of row 5's parity chunk and one byte of row 9's.
            int p5 = Raid5Layout.LEFT_SYMMETRIC.parityMember(5, n);
            byte[] junk = new byte[CHUNK];
            new Random(4).nextBytes(junk);
            members.get(p5).write(DATA_OFFSET_SECTORS * SECTOR + 5L * CHUNK, ByteBuffer.wrap(junk));
            int p9 = Raid5Layout.LEFT_SYMMETRIC.parityMember(9, n);
            long at = DATA_OFFSET_SECTORS * SECTOR + 9L * CHUNK;
            byte[] sector = new byte[SECTOR];
            members.get(p9).read(at, ByteBuffer.wrap(sector));
            sector[17] ^= 1;
            members.get(p9).write(at, ByteBuffer.wrap(sector));

            array.setSyncAction("check");
            await(array);
            assertEquals(3 * 8, array.mismatchCount(), "3 pages of 8 sectors");
            assertThrows(AssertionError.class, () -> assertParityConsistent(members, CHUNK, rows), "check changed nothing");
            array.setSyncAction("repair");
            await(array);
            assertEquals(3 * 8, array.mismatchCount());
            assertParityConsistent(members, CHUNK, rows);
            array.setSyncAction("check");
            await(array);
            assertEquals(0, array.mismatchCount());
            assertArrayEquals(model, readAll(array));
            assertThrows(IllegalArgumentException.class, () -> array.setSyncAction("scrub"));
        }
    }

    @Test
    void checkProgressIsVisibleAndIdleStopsIt() throws Exception {
        int rows = 200;
        List<BlockDevice> members = memoryMembers(3, CHUNK, rows);
        try (Raid5Array array = create(members)) {
            array.setSyncSpeedMin(1);
            array.setSyncSpeedMax(200);          // 1.6 MB per member at 200 KiB/s: ~8 s, stopped long before
            array.setSyncAction("check");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            SyncProgress p = array.syncProgress();
            while (p.doneSectors() < 64 && System.nanoTime() < deadline) {
                Thread.sleep(20);
                p = array.syncProgress();
            }
            assertEquals("check", p.action());
            assertTrue(p.doneSectors() > 0 && p.doneSectors() < p.totalSectors(), p.toString());
            assertEquals((long) rows * CHUNK / SECTOR, p.totalSectors());
            String mdstat = array.status().mdstat();
            assertTrue(mdstat.matches("(?s).*\\[=*>\\.*\\]  check = +\\d+\\.\\d% \\(\\d+/1600\\) finish=.*min speed=\\d+K/sec.*"),
                    mdstat);
            array.setSyncAction("idle");
            await(array);
            assertEquals("idle", array.syncAction());
            assertFalse(array.syncProgress().running());
        }
    }

    /** md prints the percentage with "=%3u.%u%%": one space for 10-99%, two below, none at 100%. */
    @Test
    void theProgressLineHasMdstatsShape() {
        assertEquals("[=>...................]  recovery =  8.5% (3400/40000) finish=1.2min speed=12345K/sec",
                new SyncProgress("recover", 6800, 80000, 12345, 68).mdstatLine());
        assertEquals("[====================>]  check =100.0% (40000/40000) finish=0.0min speed=1K/sec",
                new SyncProgress("check", 80000, 80000, 1, 0).mdstatLine());
        assertEquals("", new SyncProgress("idle", 0, 80000, 0, -1).mdstatLine());
    }

    @Test
    void aDirtyArrayResyncsAtStartAndADirtyDegradedOneIsRefusedUnlessForced() throws Exception {
        int n = 4;
        int rows = 16;
        List<BlockDevice> members = memoryMembers(n, CHUNK, rows);
        Raid5Array crashed = create(members);
        byte[] model = new byte[(int) crashed.size()];
        new Random(5).nextBytes(model);
        crashed.write(0, ByteBuffer.wrap(model));
        // The "crash": never closed, and row 3's parity is stale as if the power failed mid-write.
        int p3 = Raid5Layout.LEFT_SYMMETRIC.parityMember(3, n);
        members.get(p3).write(DATA_OFFSET_SECTORS * SECTOR + 3L * CHUNK, ByteBuffer.allocate(CHUNK));

        Raid5AssembleException refused = assertThrows(Raid5AssembleException.class,
                () -> Raid5Assembler.assemble(members.subList(1, n), List.of("m0"), Raid5Options.defaults()));
        assertTrue(refused.getMessage().contains("write hole") && refused.getMessage().contains("start_dirty_degraded"),
                refused.getMessage());

        try (Raid5Array array = Raid5Assembler.assemble(members, List.of(), Raid5Options.defaults())) {
            assertFalse(array.wasCleanAtOpen());
            await(array);
            assertParityConsistent(members, CHUNK, rows);
            assertArrayEquals(model, readAll(array));
            // Crash again, then force the degraded start.
        }
        Raid5Array again = Raid5Assembler.assemble(members, List.of(), Raid5Options.defaults());
        await(again);
        try (Raid5Array forced = Raid5Assembler.assemble(members.subList(1, n), List.of("m0"),
                Raid5Options.defaults().withStartDirtyDegraded(true))) {
            assertEquals(Raid5Status.Health.DEGRADED, forced.status().health());
            assertArrayEquals(model, readAll(forced));
        }
    }

    @Test
    void aReadErrorOnAHealthyArrayIsRepairedFromParity() throws Exception {
        int rows = 8;
        List<FaultInjectingBlockDevice> members = faulty(memoryMembers(4, CHUNK, rows));
        try (Raid5Array array = create(members)) {
            byte[] model = new byte[(int) array.size()];
            new Random(6).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            FaultInjectingBlockDevice bad = members.get(2);
            bad.failDirections(true, false);
            bad.failNow();
            byte[] got = readAll(array);
            bad.heal();
            assertArrayEquals(model, got);
            assertEquals(Raid5Status.Health.CLEAN, array.status().health());
            assertTrue(array.stats().layerCounter("read_errors_corrected") > 0);
            assertParityConsistent(members, CHUNK, rows);

            // When the rewrite fails too, the member is failed and the data still comes back right.
            bad.failDirections(true, true);
            bad.failNow();
            assertArrayEquals(model, readAll(array));
            assertEquals(Raid5Status.MemberState.FAULTY, array.status().members().get(2).state());
        }
    }

    @Test
    void discardReadsAsZerosWithConsistentParity() throws Exception {
        int n = 4;
        int rows = 10;
        int rowBytes = CHUNK * (n - 1);
        List<FaultInjectingBlockDevice> members = faulty(memoryMembers(n, CHUNK, rows));
        try (Raid5Array array = create(members)) {
            assertTrue(array.supportsDiscard() && array.discardZeroes());
            byte[] model = new byte[(int) array.size()];
            new Random(7).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            long[][] ranges = {{rowBytes + 3 * SECTOR, 2L * rowBytes + 5 * SECTOR}, {7L * rowBytes, rowBytes}, {SECTOR, SECTOR}};
            for (long[] r : ranges) {
                array.discard(r[0], r[1]);
                java.util.Arrays.fill(model, (int) r[0], (int) (r[0] + r[1]), (byte) 0);
            }
            assertArrayEquals(model, readAll(array));
            assertParityConsistent(members, CHUNK, rows);
            members.get(0).failNow();
            array.discard(5L * rowBytes + CHUNK, rowBytes);
            java.util.Arrays.fill(model, 5 * rowBytes + CHUNK, 6 * rowBytes + CHUNK, (byte) 0);
            assertArrayEquals(model, readAll(array), "degraded discard");
        }
    }

    /**
     * Random workloads with one member failing at a random I/O (reads, writes or both): every
     * acknowledged write reads back, then a spare is rebuilt, parity is consistent and check finds 0.
     */
    @Test
    void randomFailuresAtRandomPointsLoseNoAcknowledgedWrite() throws Exception {
        int n = 4;
        int rows = 12;
        for (int seed = 0; seed < 40; seed++) {
            Random r = new Random(seed);
            List<FaultInjectingBlockDevice> members = faulty(memoryMembers(n, CHUNK, rows));
            try (Raid5Array array = create(members)) {
                byte[] model = new byte[(int) array.size()];
                r.nextBytes(model);
                array.write(0, ByteBuffer.wrap(model));
                int victim = r.nextInt(n);
                FaultInjectingBlockDevice bad = members.get(victim);
                int mode = r.nextInt(3);
                bad.failDirections(mode != 1, mode != 0);
                bad.failFromIo(bad.ioCount() + 1 + r.nextInt(60));
                for (int k = 0; k < 50; k++) {
                    int len = (1 + r.nextInt(3 * 2 * CHUNK / SECTOR)) * SECTOR;
                    int off = r.nextInt((model.length - len) / SECTOR) * SECTOR;
                    if (r.nextInt(4) == 0) {
                        byte[] back = new byte[len];
                        array.read(off, ByteBuffer.wrap(back));
                        assertArrayEquals(java.util.Arrays.copyOfRange(model, off, off + len), back, "seed " + seed);
                        continue;
                    }
                    byte[] data = new byte[len];
                    r.nextBytes(data);
                    array.write(off, ByteBuffer.wrap(data));
                    System.arraycopy(data, 0, model, off, len);
                    if (r.nextInt(8) == 0) {
                        array.flush();
                    }
                }
                String what = "seed " + seed + " victim " + victim + " mode " + mode;
                assertArrayEquals(model, readAll(array), what);
                if (array.status().health() == Raid5Status.Health.CLEAN) {
                    array.failMember(victim);    // read errors were all repaired: replace it anyway
                }
                MemoryBlockDevice spare = spare("spare", rows);
                array.addSpare(spare);
                await(array);
                assertEquals(Raid5Status.Health.CLEAN, array.status().health(), what);
                assertArrayEquals(model, readAll(array), what);
                assertParityConsistent(currentMembers(members, victim, spare), CHUNK, rows);
                array.setSyncAction("check");
                await(array);
                assertEquals(0, array.mismatchCount(), what);
            }
        }
    }
}
