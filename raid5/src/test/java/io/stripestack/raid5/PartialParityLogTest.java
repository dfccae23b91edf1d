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
        assertEquals("0xc00", field(sb, "Feature Map"), sb);   // the log, units one after another
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

    /** Many threads of partial-row writes share each member's log: afterwards data and parity agree everywhere. */
    @Test
    void concurrentPartialWritesKeepDataAndParity() throws Exception {
        List<Path> paths = paths("c");
        byte[] model;
        try (Raid5Array array = Raid5Files.create(paths, MEMBER, CONFIG, PPL)) {
            model = new byte[(int) array.size()];
            int threads = 8;
            int blocks = model.length / 4096;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    Random random = new Random(thread);
                    byte[] b = new byte[4096];
                    for (int i = 0; i < 300; i++) {
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
            for (Future<?> f : done) {
                f.get(2, TimeUnit.MINUTES);
            }
            pool.shutdown();
            assertTrue(array.stats().counter("ppl_writes").sum() > 0);
            assertTrue(array.stats().counter("ppl_rows").sum() >= array.stats().counter("ppl_writes").sum());
            assertTrue(array.stats().counter("ppl_area_restarts").sum() > 0, "the logs went round their areas");
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
}
