package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.ForwardingBlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Growing an array by members online (md's reshape), and resuming it after a crash. */
class ReshapeTest {
    static final int CHUNK = 64 * 1024;
    static final int ROWS = 24;
    static final long DATA_OFFSET_SECTORS = 2048;
    static final int BLOCK = 4096;

    static MemoryBlockDevice device(String name) {
        return new MemoryBlockDevice(name, (int) (DATA_OFFSET_SECTORS * 512) + ROWS * CHUNK, 512);
    }

    static Raid5Array create(List<? extends BlockDevice> members) throws IOException {
        return Raid5Array.create(members, new Raid5Config("grow", CHUNK, Raid5Layout.LEFT_SYMMETRIC,
                DATA_OFFSET_SECTORS), Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.RESYNC), true);
    }

    /** The pattern of block {@code b} at generation {@code g}: every byte depends on both. */
    static void fill(ByteBuffer buf, long b, int g) {
        for (int i = 0; i < BLOCK; i += 8) {
            buf.putLong(i, b * 0x9E3779B97F4A7C15L + g * 0xBF58476D1CE4E5B9L + i);
        }
    }

    static void writeBlock(Raid5Array a, long b, int g, ByteBuffer buf) throws IOException {
        buf.clear();
        fill(buf, b, g);
        a.write(b * BLOCK, buf.clear());
    }

    static void assertBlock(Raid5Array a, long b, int g, ByteBuffer buf, ByteBuffer expected) throws IOException {
        buf.clear();
        a.read(b * BLOCK, buf);
        expected.clear();
        fill(expected, b, g);
        assertEquals(expected.clear(), buf.clear(), "block " + b + " (generation " + g + ")");
    }

    /** Every row of every member's data area XORs to zero: parity is consistent, whatever the layout. */
    static void assertParityConsistent(List<? extends BlockDevice> members) throws IOException {
        ByteBuffer sbBlock = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
        members.get(0).read(Md1Superblock.OFFSET_BYTES, sbBlock);
        Md1Superblock sb = Md1Superblock.decode(sbBlock.flip(), "m0");
        assertEquals(0, sb.featureMap & Md1Superblock.FEATURE_RESHAPE_ACTIVE, "still reshaping");
        assertEquals(members.size(), sb.raidDisks);
        int chunk = sb.chunkSectors * 512;
        ByteBuffer acc = ByteBuffer.allocate(chunk);
        ByteBuffer one = ByteBuffer.allocate(chunk);
        for (long row = 0; row < sb.sizeSectors * 512 / chunk; row++) {
            acc.clear();
            for (int i = 0; i < chunk; i++) {
                acc.put(i, (byte) 0);
            }
            for (BlockDevice m : members) {
                one.clear();
                m.read(sb.dataOffsetSectors * 512 + row * chunk, one);
                for (int i = 0; i < chunk; i++) {
                    acc.put(i, (byte) (acc.get(i) ^ one.get(i)));
                }
            }
            for (int i = 0; i < chunk; i++) {
                if (acc.get(i) != 0) {
                    throw new AssertionError("row " + row + " parity inconsistent at byte " + i);
                }
            }
        }
    }

    /** Starts one reshape of the array. */
    interface ReshapeStart {
        void start(Raid5Array a) throws IOException;
    }

    /**
     * Runs the reshape {@code start} begins while three threads write and verify blocks of the array, then checks
     * the new shape, every block (the new space reads zeros and is then written), a check pass and the parity of
     * every row on the members.
     */
    static void reshapeUnderVerifyingLoad(Raid5Array a, List<MemoryBlockDevice> members, int[] generation,
                                          int expectedMembers, int expectedChunk, ReshapeStart start) throws Exception {
        ByteBuffer buf = ByteBuffer.allocateDirect(BLOCK);
        ByteBuffer expected = ByteBuffer.allocateDirect(BLOCK);
        AtomicLong told = new AtomicLong();
        a.addCapacityListener(told::set);
        long sizeBefore = a.size();
        // slow enough that the load overlaps every part of the reshape (about 2 s)
        a.setSyncSpeedMin(700);
        a.setSyncSpeedMax(1000);
        start.start(a);
        assertEquals(expectedMembers, a.raidDevices());
        assertEquals(expectedChunk, a.chunkBytes(), "the new chunk while it runs, as md's chunk_size");
        assertThrows(IllegalStateException.class, () -> a.setChunkSize(expectedChunk), "a second reshape");
        assertThrows(IllegalStateException.class, () -> a.setSyncAction("check"));
        assertTrue(a.status().mdstat().contains("reshape") || !a.syncProgress().running());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> load = new ArrayList<>();
        long blocks = sizeBefore / BLOCK;
        for (int t = 0; t < 3; t++) {
            int seed = t;
            Thread th = new Thread(() -> {
                Random rnd = new Random(seed);
                ByteBuffer mine = ByteBuffer.allocateDirect(BLOCK);
                ByteBuffer exp = ByteBuffer.allocateDirect(BLOCK);
                try {
                    while (!stop.get()) {
                        // each thread owns the blocks b with b % 3 == seed, so it knows their generation
                        long b = rnd.nextInt((int) (blocks / 3)) * 3L + seed;
                        if (rnd.nextBoolean()) {
                            int g;
                            synchronized (generation) {
                                g = ++generation[(int) b];
                            }
                            writeBlock(a, b, g, mine);
                        } else {
                            int g;
                            synchronized (generation) {
                                g = generation[(int) b];
                            }
                            assertBlock(a, b, g, mine, exp);
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            th.start();
            load.add(th);
        }
        assertTrue(a.awaitReshape(120, TimeUnit.SECONDS), "reshape did not finish");
        stop.set(true);
        for (Thread th : load) {
            th.join();
        }
        assertNull(failure.get(), () -> "load failed: " + failure.get());
        assertEquals(expectedMembers, a.memberCount());
        assertEquals(expectedChunk, a.chunkBytes());
        assertEquals((long) (expectedMembers - 1) * ROWS * CHUNK, a.size());
        assertEquals(a.size(), told.get());
        assertEquals(Raid5Status.Health.CLEAN, a.status().health());
        for (long b = 0; b < a.size() / BLOCK; b++) {
            if (b < blocks) {
                assertBlock(a, b, generation[(int) b], buf, expected);
            } else {
                buf.clear();
                a.read(b * BLOCK, buf);
                for (int i = 0; i < BLOCK; i++) {
                    assertEquals(0, buf.get(i), "new space reads zeros at block " + b);
                }
            }
        }
        a.setSyncAction("check");
        assertTrue(a.awaitSyncIdle(60, TimeUnit.SECONDS));
        assertEquals(0, a.mismatchCount());
        a.flush();
        assertParityConsistent(members);
        for (long b = blocks; b < a.size() / BLOCK; b++) {
            writeBlock(a, b, 1, buf);
            generation[(int) b] = 1;
        }
    }

    /** An array of {@code count} members holding generation 1 in every block; {@code generation} sized for 5. */
    static Raid5Array filled(List<MemoryBlockDevice> members, int count, int[] generation) throws IOException {
        for (int i = 0; i < count; i++) {
            members.add(device("m" + i));
        }
        Raid5Array a = create(members);
        ByteBuffer buf = ByteBuffer.allocateDirect(BLOCK);
        for (long b = 0; b < a.size() / BLOCK; b++) {
            writeBlock(a, b, 1, buf);
            generation[(int) b] = 1;
        }
        return a;
    }

    static MemoryBlockDevice addSpare(Raid5Array a, List<MemoryBlockDevice> members) throws IOException {
        MemoryBlockDevice spare = device("m" + members.size());
        members.add(spare);
        a.addSpare(spare);
        return spare;
    }

    @Test
    void growsThreeToFourToFiveUnderAVerifyingLoad() throws Exception {
        List<MemoryBlockDevice> members = new ArrayList<>();
        int[] generation = new int[(int) (ROWS * 4L * CHUNK / BLOCK)];
        try (Raid5Array a = filled(members, 3, generation)) {
            for (int target = 4; target <= 5; target++) {
                addSpare(a, members);
                int count = target;
                reshapeUnderVerifyingLoad(a, members, generation, target, CHUNK, x -> x.setRaidDevices(count));
            }
        }
        try (Raid5Array again = Raid5Assembler.assemble(members, List.of(), Raid5Options.defaults())) {
            assertEquals(5, again.memberCount());
            assertTrue(again.wasCleanAtOpen());
        }
    }

    @Test
    void changesTheChunkUpAndDownUnderAVerifyingLoad() throws Exception {
        List<MemoryBlockDevice> members = new ArrayList<>();
        int[] generation = new int[(int) (ROWS * 4L * CHUNK / BLOCK)];
        try (Raid5Array a = filled(members, 4, generation)) {
            reshapeUnderVerifyingLoad(a, members, generation, 4, 2 * CHUNK, x -> x.setChunkSize(2 * CHUNK));
            reshapeUnderVerifyingLoad(a, members, generation, 4, CHUNK / 2, x -> x.setChunkSize(CHUNK / 2));
        }
        try (Raid5Array again = Raid5Assembler.assemble(members, List.of(), Raid5Options.defaults())) {
            assertEquals(CHUNK / 2, again.chunkBytes());
            assertTrue(again.wasCleanAtOpen());
        }
    }

    @Test
    void growsByAMemberAndChangesTheChunkAtOnce() throws Exception {
        List<MemoryBlockDevice> members = new ArrayList<>();
        int[] generation = new int[(int) (ROWS * 4L * CHUNK / BLOCK)];
        try (Raid5Array a = filled(members, 3, generation)) {
            addSpare(a, members);
            reshapeUnderVerifyingLoad(a, members, generation, 4, 2 * CHUNK, x -> x.reshape(4, 2 * CHUNK));
        }
        try (Raid5Array again = Raid5Assembler.assemble(members, List.of(), Raid5Options.defaults())) {
            assertEquals(4, again.memberCount());
            assertEquals(2 * CHUNK, again.chunkBytes());
        }
    }

    @Test
    void refusesWhatItCannotGrow() throws Exception {
        List<MemoryBlockDevice> members = new ArrayList<>(List.of(device("m0"), device("m1"), device("m2")));
        try (Raid5Array a = create(members)) {
            IllegalStateException noSpare = assertThrows(IllegalStateException.class, () -> a.setRaidDevices(4));
            assertTrue(noSpare.getMessage().contains("spare"), noSpare.getMessage());
            assertThrows(IllegalArgumentException.class, () -> a.setRaidDevices(2));
            a.addSpare(device("s"));
            a.failMember(1);
            assertTrue(a.awaitSyncIdle(30, TimeUnit.SECONDS));   // the spare took the failed role
            a.addSpare(device("t"));
            a.failMember(2);
            IllegalStateException degraded = assertThrows(IllegalStateException.class, () -> a.setRaidDevices(4));
            assertTrue(degraded.getMessage().contains("degraded"), degraded.getMessage());
        }
        List<MemoryBlockDevice> small = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            small.add(new MemoryBlockDevice("s" + i, 16 * 512 + ROWS * CHUNK, 512));
        }
        try (Raid5Array a = Raid5Array.create(small.subList(0, 3), new Raid5Config("tight", CHUNK,
                Raid5Layout.LEFT_SYMMETRIC, 16), Raid5Options.defaults(), true)) {
            a.addSpare(small.get(3));
            IllegalStateException room = assertThrows(IllegalStateException.class, () -> a.setRaidDevices(4));
            assertTrue(room.getMessage().contains("data offset"), room.getMessage());
        }
    }

    static Md1Superblock superblockOf(BlockDevice member) throws IOException {
        ByteBuffer block = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
        member.read(Md1Superblock.OFFSET_BYTES, block);
        return Md1Superblock.decode(block.flip(), member.name());
    }

    /** A ppl array of three members and a spare, {@code chunk} bytes, data at {@code dataOffset} sectors. */
    static Raid5Array pplArray(List<MemoryBlockDevice> members, int chunk, long dataOffset) throws IOException {
        for (int i = 0; i < 4; i++) {
            members.add(new MemoryBlockDevice("p" + i, (int) (dataOffset * 512) + ROWS * chunk, 512));
        }
        Raid5Array a = Raid5Array.create(members.subList(0, 3), new Raid5Config("keep", chunk,
                Raid5Layout.LEFT_SYMMETRIC, dataOffset), Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.PPL),
                true);
        a.addSpare(members.get(3));
        return a;
    }

    /**
     * A ppl array keeps its partial parity log through a reshape: the new data offset leaves the log its whole area
     * when it can (mdadm's arrays, which get 2 MiB before the data, always can), else the least it works with; a
     * reshape that cannot leave that is refused up front, saying why and what to do, instead of ending without the
     * log (the policy used to fall to resync for good).
     */
    @Test
    void aPplArrayKeepsItsLogThroughAReshapeOrTheReshapeIsRefused() throws Exception {
        List<MemoryBlockDevice> roomy = new ArrayList<>();
        try (Raid5Array a = pplArray(roomy, CHUNK, 3072)) {
            assertEquals(2048, superblockOf(roomy.get(0)).pplSize);
            a.setRaidDevices(4);
            assertTrue(a.awaitReshape(60, TimeUnit.SECONDS));
            assertEquals(ConsistencyPolicy.PPL, a.consistencyPolicy());
        }
        Md1Superblock grown = superblockOf(roomy.get(0));
        assertTrue(grown.hasPpl() && grown.pplSize == 2048 && grown.dataOffsetSectors >= 16 + 2048,
                "the log kept its whole area: " + grown.pplSize + " sectors, data at " + grown.dataOffsetSectors);

        List<MemoryBlockDevice> tight = new ArrayList<>();
        try (Raid5Array a = pplArray(tight, 512 * 1024, Raid5Config.DEFAULT_DATA_OFFSET_SECTORS)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> a.setRaidDevices(4));
            assertTrue(e.getMessage().contains("partial parity log") && e.getMessage().contains("smaller chunk")
                    && e.getMessage().contains("consistency_policy resync"), e.getMessage());
            assertEquals(ConsistencyPolicy.PPL, a.consistencyPolicy(), "nothing changed");
            assertEquals(3, a.memberCount());
            a.reshape(4, 256 * 1024);   // the way out the refusal names: a smaller chunk in the same step
            assertTrue(a.awaitReshape(60, TimeUnit.SECONDS));
            assertEquals(ConsistencyPolicy.PPL, a.consistencyPolicy());
        }
        assertTrue(superblockOf(tight.get(0)).hasPpl());
    }

    /**
     * While the chunk shrinks, every position the superblocks record is on a multiple of the old chunk times the new
     * data disks, which Linux requires to start the array; with a data offset large enough that room never limits a
     * batch, the batches' own size would not be.
     */
    @Test
    void aShrinkingChunkRecordsPositionsLinuxAccepts() throws Exception {
        long offsetSectors = 16384;   // 8 MiB: the mover is never held back by room
        List<MemoryBlockDevice> members = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            members.add(new MemoryBlockDevice("k" + i, (int) (offsetSectors * 512) + 2 * ROWS * CHUNK, 512));
        }
        int oldChunk = 2 * CHUNK;
        ByteBuffer buf = ByteBuffer.allocateDirect(BLOCK);
        ByteBuffer expected = ByteBuffer.allocateDirect(BLOCK);
        long blocks;
        try (Raid5Array a = Raid5Array.create(members, new Raid5Config("shrink", oldChunk, Raid5Layout.LEFT_SYMMETRIC,
                offsetSectors), Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.RESYNC), true)) {
            blocks = a.size() / BLOCK;
            for (long b = 0; b < blocks; b++) {
                writeBlock(a, b, 5, buf);
            }
            a.setSyncSpeedMin(1);
            a.setSyncSpeedMax(1);   // one batch, then it crawls until the close records the position
            a.setChunkSize(CHUNK / 2);
            while (a.syncProgress().doneSectors() == 0) {
                Thread.sleep(5);
            }
        }
        ByteBuffer sbBlock = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
        members.get(0).read(Md1Superblock.OFFSET_BYTES, sbBlock);
        Md1Superblock sb = Md1Superblock.decode(sbBlock.flip(), "k0");
        assertTrue(sb.isReshaping(), "the close came before the end");
        long unit = (long) (oldChunk / 512) * 3;   // the larger chunk x the new data disks
        assertTrue(sb.reshapePosition > 0 && sb.reshapePosition % unit == 0,
                "reshape_position " + sb.reshapePosition + " is not a multiple of " + unit);
        try (Raid5Array a = Raid5Assembler.assemble(members, List.of(), Raid5Options.defaults())) {
            a.setSyncSpeedMax(Raid5Array.DEFAULT_SYNC_SPEED_MAX);
            assertTrue(a.awaitReshape(60, TimeUnit.SECONDS));
            assertEquals(CHUNK / 2, a.chunkBytes());
            for (long b = 0; b < blocks; b++) {
                assertBlock(a, b, 5, buf, expected);
            }
        }
    }

    @Test
    void refusesAChunkItCannotTake() throws Exception {
        List<MemoryBlockDevice> members = new ArrayList<>(List.of(device("m0"), device("m1"), device("m2")));
        try (Raid5Array a = create(members)) {
            // 24 rows of 64 KiB: 1.5 MiB per member, which 1 MiB chunks do not divide
            IllegalArgumentException divide = assertThrows(IllegalArgumentException.class,
                    () -> a.setChunkSize(1 << 20));
            assertTrue(divide.getMessage().contains("does not divide the member size"), divide.getMessage());
            IllegalArgumentException power = assertThrows(IllegalArgumentException.class,
                    () -> a.setChunkSize(96 * 1024));
            assertTrue(power.getMessage().contains("power of two"), power.getMessage());
            assertThrows(IllegalArgumentException.class, () -> a.setChunkSize(2048));
            assertEquals(CHUNK, a.chunkBytes());
            assertEquals("idle", a.syncAction());
            a.setChunkSize(CHUNK);   // the chunk it has: nothing to do
            assertEquals("idle", a.syncAction());
        }
    }

    @Test
    void aMemberFailingStopsTheReshapeWithoutWrongData() throws Exception {
        List<MemoryBlockDevice> members = new ArrayList<>(List.of(device("m0"), device("m1"), device("m2"),
                device("m3")));
        ByteBuffer buf = ByteBuffer.allocateDirect(BLOCK);
        ByteBuffer expected = ByteBuffer.allocateDirect(BLOCK);
        long blocks;
        try (Raid5Array a = create(members.subList(0, 3))) {
            blocks = a.size() / BLOCK;
            for (long b = 0; b < blocks; b++) {
                writeBlock(a, b, 3, buf);
            }
            a.addSpare(members.get(3));
            a.setSyncSpeedMin(1);
            a.setSyncSpeedMax(1);   // one batch, then it crawls
            a.setRaidDevices(4);
            while (a.syncProgress().doneSectors() == 0) {
                Thread.sleep(5);
            }
            a.failMember(1);
            assertTrue(a.awaitReshape(30, TimeUnit.SECONDS), "the reshape stops");
            assertEquals("frozen", a.syncAction());
            assertThrows(io.stripestack.blockdev.MediumErrorException.class, () -> a.read(0, buf.clear()));
            assertBlock(a, blocks - 1, 3, buf, expected);   // the old geometry's part is served degraded
        }
        Raid5AssembleException refused = assertThrows(Raid5AssembleException.class,
                () -> Raid5Assembler.assemble(members, List.of(), Raid5Options.defaults()));
        assertTrue(refused.toString().contains("healthy") || String.valueOf(refused.problems()).contains("healthy"),
                refused.toString());
    }

    /** A member that stops taking writes at the crash: what it holds then is what a restart finds. */
    static final class CrashingDevice extends ForwardingBlockDevice {
        private final AtomicLong writesLeft;

        CrashingDevice(BlockDevice below, AtomicLong writesLeft) {
            super(below);
            this.writesLeft = writesLeft;
        }

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            if (writesLeft.decrementAndGet() < 0) {
                throw new IOException("crashed");
            }
            super.write(offset, src);
        }

        @Override
        public void writeDurable(long offset, ByteBuffer src) throws IOException {
            write(offset, src);
        }

        @Override
        public void close() {
            // the memory stays for the restart
        }
    }

    /**
     * Reshapes a 3-member array (with one spare) holding generation {@code seed} as {@code start} says and
     * "crashes" after {@code budget} member writes of the reshape: later writes fail, and the array is abandoned.
     * Returns the members' memory; with {@code writesMade} set to how many writes the reshape made before the
     * crash (or in all).
     */
    static List<MemoryBlockDevice> reshapeUntilCrash(long budget, int seed, AtomicLong writesMade, Writes writes,
                                                     ReshapeStart start) throws Exception {
        AtomicLong writesLeft = new AtomicLong(Long.MAX_VALUE);
        List<MemoryBlockDevice> memory = new ArrayList<>();
        List<BlockDevice> crashing = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            memory.add(device("m" + i));
            crashing.add(new CrashingDevice(memory.get(i), writesLeft));
        }
        Raid5Array a = create(crashing.subList(0, 3));
        ByteBuffer buf = ByteBuffer.allocateDirect(BLOCK);
        for (long b = 0; b < a.size() / BLOCK; b++) {
            writeBlock(a, b, seed, buf);
        }
        a.addSpare(crashing.get(3));
        writesLeft.set(budget);
        Thread writer = new Thread(() -> writes.run(a, seed));
        try {
            start.start(a);
            writer.start();
            a.awaitReshape(60, TimeUnit.SECONDS);
        } catch (IOException | RuntimeException crashedEarly) {
            // the crash hit the superblock write that starts the reshape
        }
        writes.stop = true;
        if (writer.getState() != Thread.State.NEW) {
            writer.join();
        }
        writesMade.set(budget - Math.max(0, writesLeft.get()));
        writesLeft.set(-1L << 40);
        try {
            a.close();   // every write fails now: nothing a clean close writes reaches the members
        } catch (IOException expected) {
            // crashed members
        }
        return memory;
    }

    /**
     * Foreground writes during the reshape, each block's generation known: the last acknowledged one, and the
     * one in flight when the crash made writes fail (which may or may not have reached the members).
     */
    static final class Writes {
        final int[] acked = new int[(int) (2L * ROWS * CHUNK / BLOCK)];
        long inFlightBlock = -1;
        int inFlightGeneration;
        volatile boolean stop;

        Writes(int seed) {
            java.util.Arrays.fill(acked, seed);
        }

        void run(Raid5Array a, int seed) {
            Random rnd = new Random(seed);
            ByteBuffer buf = ByteBuffer.allocateDirect(BLOCK);
            try {
                while (!stop) {
                    long b = rnd.nextInt(acked.length);
                    inFlightBlock = b;
                    inFlightGeneration = acked[(int) b] + 1000;
                    writeBlock(a, b, inFlightGeneration, buf);
                    acked[(int) b] = inFlightGeneration;
                    inFlightBlock = -1;
                }
            } catch (IOException | RuntimeException crashed) {
                // writes fail from the crash on
            }
        }

        void check(Raid5Array a, long b, ByteBuffer buf, ByteBuffer expected) throws IOException {
            buf.clear();
            a.read(b * BLOCK, buf);
            for (int g : new int[] {acked[(int) b], b == inFlightBlock ? inFlightGeneration : acked[(int) b]}) {
                expected.clear();
                fill(expected, b, g);
                if (expected.clear().equals(buf.clear())) {
                    return;
                }
            }
            throw new AssertionError("block " + b + " is neither its acknowledged generation " + acked[(int) b]
                    + (b == inFlightBlock ? " nor the one in flight " + inFlightGeneration : ""));
        }
    }

    @Test
    void aCrashAtAnyPointOfAGrowResumesAndLosesNothing() throws Exception {
        crashAtRandomPoints(40, 4, CHUNK, a -> a.setRaidDevices(4));
    }

    @Test
    void aCrashAtAnyPointOfAChunkChangeResumesAndLosesNothing() throws Exception {
        crashAtRandomPoints(20, 3, 2 * CHUNK, a -> a.setChunkSize(2 * CHUNK));
        crashAtRandomPoints(20, 3, CHUNK / 2, a -> a.setChunkSize(CHUNK / 2));
    }

    /**
     * Crashes the reshape {@code start} begins after a random number of member writes, {@code seeds} times (odd
     * seeds write while it runs), reassembles, lets it finish and checks every block and the parity of every row.
     */
    static void crashAtRandomPoints(int seeds, int members, int chunk, ReshapeStart start) throws Exception {
        AtomicLong made = new AtomicLong();
        Writes none = new Writes(7);
        none.stop = true;
        reshapeUntilCrash(Long.MAX_VALUE / 2, 7, made, none, start);
        long total = made.get();
        assertTrue(total > 20, "the reshape wrote " + total + " times");
        long oldBlocks = 2L * ROWS * CHUNK / BLOCK;
        Random rnd = new Random(42);
        for (int seed = 0; seed < seeds; seed++) {
            long budget = 1 + (long) (rnd.nextDouble() * total);
            Writes writes = new Writes(seed);
            writes.stop = seed % 2 == 0;   // odd seeds write while the reshape runs
            List<MemoryBlockDevice> memory = reshapeUntilCrash(budget, seed, made, writes, start);
            try (Raid5Array a = Raid5Assembler.assemble(memory, List.of(), Raid5Options.defaults())) {
                assertTrue(a.awaitReshape(60, TimeUnit.SECONDS), "seed " + seed);
                boolean reshaped = a.memberCount() == members && a.chunkBytes() == chunk;
                ByteBuffer buf = ByteBuffer.allocateDirect(BLOCK);
                ByteBuffer expected = ByteBuffer.allocateDirect(BLOCK);
                for (long b = 0; b < oldBlocks; b++) {
                    writes.check(a, b, buf, expected);
                }
                assertTrue(a.awaitSyncIdle(60, TimeUnit.SECONDS));
                a.flush();
                assertParityConsistent(memory.subList(0, reshaped ? members : 3));
            } catch (AssertionError | RuntimeException | IOException e) {
                throw new AssertionError("seed " + seed + ", crash after " + budget + " of " + total + " writes", e);
            }
        }
    }
}
