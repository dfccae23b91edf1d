package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.ForwardingBlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.testkit.FaultInjectingBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * mdadm's {@code --assemble --force} for an array that lost two members: those that left as the array failed come
 * back with every acknowledged write, one that the array wrote without is refused by name; and the same for a
 * running array ({@link Raid5Array#forceAssemble}).
 */
class ForceAssembleTest {
    private static final int CHUNK = 16 * 1024;
    private static final int MEMBERS = 4;
    private static final int BLOCK = 4096;

    /** A member whose contents outlive the array that closes it, as a file does. */
    private static final class Kept extends ForwardingBlockDevice {
        Kept(BlockDevice below) {
            super(below);
        }

        @Override
        public void close() {
        }
    }

    private final List<MemoryBlockDevice> disks = new ArrayList<>();
    /** Acknowledged writes: block number to the seed of its contents (the newest acknowledged one). */
    private final Map<Long, Integer> acknowledged = new LinkedHashMap<>();
    private final Random random = new Random(29);

    private List<FaultInjectingBlockDevice> members(String prefix) {
        List<FaultInjectingBlockDevice> m = new ArrayList<>();
        for (int i = 0; i < MEMBERS; i++) {
            MemoryBlockDevice disk = new MemoryBlockDevice(prefix + i + ".img", 2048 * 512 + 64 * CHUNK, 512);
            disks.add(disk);
            m.add(new FaultInjectingBlockDevice(new Kept(disk)));
        }
        return m;
    }

    private static Raid5Array create(List<? extends BlockDevice> members) throws IOException {
        return Raid5Array.create(members, new Raid5Config("force", CHUNK, Raid5Layout.LEFT_SYMMETRIC, 2048),
                Raid5Options.defaults(), true);
    }

    private List<BlockDevice> reopened(int... roles) {
        List<BlockDevice> list = new ArrayList<>();
        for (int r : roles) {
            list.add(new Kept(disks.get(r)));
        }
        return list;
    }

    private static ByteBuffer pattern(int seed) {
        ByteBuffer b = ByteBuffer.allocate(BLOCK);
        new Random(seed).nextBytes(b.array());
        return b;
    }

    /** Writes random blocks until one fails (or {@code count} succeed); returns how many were acknowledged. */
    private int writeUntilFailure(Raid5Array array, int count) {
        int done = 0;
        long blocks = array.size() / BLOCK;
        for (int i = 0; i < count; i++) {
            long block = random.nextInt((int) blocks);
            int seed = random.nextInt();
            try {
                array.write(block * BLOCK, pattern(seed));
            } catch (IOException e) {
                return done;
            }
            acknowledged.put(block, seed);
            done++;
        }
        return done;
    }

    private void assertEveryAcknowledgedWrite(Raid5Array array) throws IOException {
        for (Map.Entry<Long, Integer> e : acknowledged.entrySet()) {
            ByteBuffer back = ByteBuffer.allocate(BLOCK);
            array.read(e.getKey() * BLOCK, back);
            assertEquals(pattern(e.getValue()), back.flip(), "block " + e.getKey());
        }
    }

    private long events(int role) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
        disks.get(role).read(Md1Superblock.OFFSET_BYTES, b);
        return Md1Superblock.decode(b.flip(), "m" + role).events;
    }

    /**
     * Member 1's file system fills (its writes fail, as with ENOSPC; reads still work), the array writes on degraded,
     * then member 2's fills too and the array fails. Returns with the array stopped.
     */
    private void twoMembersRunOutOfSpace() throws IOException {
        List<FaultInjectingBlockDevice> m = members("m");
        Raid5Array array = create(m);
        assertEquals(200, writeUntilFailure(array, 200));
        m.get(1).failDirections(false, true);
        m.get(1).failNow();
        assertEquals(100, writeUntilFailure(array, 100), "member 1 failing does not fail a write");
        assertEquals(Raid5Status.Health.DEGRADED, array.status().health());
        m.get(2).failDirections(false, true);
        m.get(2).failNow();
        writeUntilFailure(array, 100);
        assertEquals(Raid5Status.Health.FAILED, array.status().health());
        array.close();
    }

    @Test
    void twoMembersFailedByAFullFileSystemAreForcedBackWithEveryAcknowledgedWrite() throws Exception {
        twoMembersRunOutOfSpace();
        // space freed: a plain start refuses, naming force
        Raid5AssembleException refused = assertThrows(Raid5AssembleException.class,
                () -> Raid5Assembler.assemble(reopened(0, 1, 2, 3), List.of(), Raid5Options.defaults()));
        assertTrue(refused.getMessage().contains("force"), refused.getMessage());
        try (Raid5Array array = Raid5Assembler.assemble(reopened(0, 1, 2, 3), List.of(),
                Raid5Options.defaults().withForce(true))) {
            String problems = String.join("\n", array.assemblyProblems());
            assertTrue(problems.contains("m2.img: FORCED back into member 2"), problems);
            assertTrue(problems.contains("m1.img: left the array before it failed"), problems);
            assertEveryAcknowledgedWrite(array);
            assertTrue(array.awaitSyncIdle(5, TimeUnit.MINUTES));
            assertEquals(Raid5Status.Health.CLEAN, array.status().health(), array.status().mdstat());
            assertEveryAcknowledgedWrite(array);
        }
        try (Raid5Array array = Raid5Assembler.assemble(reopened(0, 1, 2, 3), List.of(), Raid5Options.defaults())) {
            assertEquals(Raid5Status.Health.CLEAN, array.status().health(), "the forced members are in sync for good");
            assertEveryAcknowledgedWrite(array);
        }
    }

    @Test
    void aForcedStartIsRefusedWhenTheMemberItWouldTakeIsReallyStale() throws Exception {
        twoMembersRunOutOfSpace();
        long[] before = {events(0), events(1), events(3)};
        // member 2 (the one that left last) is not given: member 1 missed the writes made while degraded
        Raid5AssembleException refused = assertThrows(Raid5AssembleException.class,
                () -> Raid5Assembler.assemble(reopened(0, 1, 3), List.of(), Raid5Options.defaults().withForce(true)));
        String all = refused.getMessage() + "\n" + String.join("\n", refused.problems());
        assertTrue(refused.getMessage().contains("m1.img, is really stale"), all);
        assertTrue(all.contains("no member given records the update that took it out"), all);
        assertEquals(before[0], events(0), "nothing written");
        assertEquals(before[1], events(1), "nothing written");
        assertEquals(before[2], events(3), "nothing written");
    }

    @Test
    void aRunningArrayWhoseTwoMembersDiedAtOnceIsForcedBackOnceTheyAnswer() throws Exception {
        List<FaultInjectingBlockDevice> m = members("r");
        try (Raid5Array array = create(m)) {
            assertEquals(200, writeUntilFailure(array, 200));
            IllegalStateException notFailed = assertThrows(IllegalStateException.class, array::forceAssemble);
            assertTrue(notFailed.getMessage().contains("has not failed"), notFailed.getMessage());
            m.get(1).failNow();   // two targets die at once: every I/O fails
            m.get(3).failNow();
            writeUntilFailure(array, 10);
            assertEquals(Raid5Status.Health.FAILED, array.status().health());
            IllegalStateException notYet = assertThrows(IllegalStateException.class, array::forceAssemble);
            assertTrue(notYet.getMessage().contains("does not answer yet"), notYet.getMessage());
            assertEquals(Raid5Status.Health.FAILED, array.status().health(), "nothing changed");
            m.get(1).heal();   // they come back
            m.get(3).heal();
            List<String> done = array.forceAssemble();
            String all = String.join("\n", done);
            assertTrue(all.contains("FORCED back in sync"), all);
            assertTrue(all.contains("re-added"), all);
            assertEveryAcknowledgedWrite(array);
            assertEquals(100, writeUntilFailure(array, 100), "it serves writes again");
            assertTrue(array.awaitSyncIdle(5, TimeUnit.MINUTES));
            assertEquals(Raid5Status.Health.CLEAN, array.status().health(), array.status().mdstat());
            assertEveryAcknowledgedWrite(array);
        }
        try (Raid5Array array = Raid5Assembler.assemble(reopened(0, 1, 2, 3), List.of(), Raid5Options.defaults())) {
            assertEquals(Raid5Status.Health.CLEAN, array.status().health());
            assertEveryAcknowledgedWrite(array);
        }
    }
}
