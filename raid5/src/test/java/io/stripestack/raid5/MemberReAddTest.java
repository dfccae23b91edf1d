package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.testkit.FaultInjectingBlockDevice;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A faulty member whose device works again is re-added: with the write-intent bitmap only the regions written
 * while it was away are rebuilt (counted in bytes written to it), and its skipped rows are right (read back
 * through it with another member failed); without a bitmap it is rebuilt whole.
 */
class MemberReAddTest {
    private static final int CHUNK = 8192;
    private static final int ROWS = 256;
    private static final int MEMBERS = 4;
    private static final int AWAY = 2;

    private record Setup(Raid5Array array, List<MemoryBlockDevice> disks, List<FaultInjectingBlockDevice> members) {
    }

    private static Setup create(ConsistencyPolicy policy) throws Exception {
        List<MemoryBlockDevice> disks = new ArrayList<>();
        List<FaultInjectingBlockDevice> members = new ArrayList<>();
        for (int i = 0; i < MEMBERS; i++) {
            MemoryBlockDevice d = new MemoryBlockDevice("m" + i,
                    (int) (Raid5Config.DEFAULT_DATA_OFFSET_SECTORS * 512) + ROWS * CHUNK, 512);
            disks.add(d);
            members.add(new FaultInjectingBlockDevice(d));
        }
        Raid5Array array = Raid5Array.create(members, new Raid5Config("readd", CHUNK, Raid5Layout.LEFT_SYMMETRIC,
                Raid5Config.DEFAULT_DATA_OFFSET_SECTORS), Raid5Options.defaults().withBitmapChunkBytes(CHUNK)
                .withConsistencyPolicy(policy), true);
        return new Setup(array, disks, members);
    }

    /** Writes rows [from, to) of the model with fresh bytes through the array. */
    private static void writeRows(Raid5Array array, byte[] model, int from, int to, long seed) throws Exception {
        int rowBytes = (MEMBERS - 1) * CHUNK;
        byte[] fresh = new byte[(to - from) * rowBytes];
        new Random(seed).nextBytes(fresh);
        System.arraycopy(fresh, 0, model, from * rowBytes, fresh.length);
        array.write((long) from * rowBytes, ByteBuffer.wrap(fresh));
    }

    /** Fails the member, writes while it is away, heals it; returns the bytes its re-add then wrote to it. */
    private static long awayAndBack(Setup s, byte[] model, boolean expectBitmap) throws Exception {
        Raid5Array array = s.array();
        writeRows(array, model, 0, 8, 1);
        s.members().get(AWAY).failNow();
        array.failMember(AWAY);
        writeRows(array, model, 100, 120, 2);   // the array is degraded: these rows miss the member
        writeRows(array, model, 200, 201, 3);
        s.members().get(AWAY).heal();
        long before = s.disks().get(AWAY).stats().writeBytes();
        assertEquals(expectBitmap, array.reAddMember(AWAY));
        assertTrue(array.awaitSyncIdle(30, TimeUnit.SECONDS), array.syncProgress().toString());
        assertEquals(Raid5Status.Health.CLEAN, array.status().health(), array.status().mdstat());
        return s.disks().get(AWAY).stats().writeBytes() - before;
    }

    /** Reads everything with another member failed, so every row of the re-added member takes part. */
    private static void assertContentThroughTheReAddedMember(Setup s, byte[] model) throws Exception {
        s.array().failMember(0);
        byte[] got = new byte[model.length];
        s.array().read(0, ByteBuffer.wrap(got));
        assertArrayEquals(model, got);
    }

    @Test
    void withTheBitmapOnlyTheRegionsWrittenMeanwhileAreRebuilt() throws Exception {
        Setup s = create(ConsistencyPolicy.BITMAP);
        try (Raid5Array array = s.array()) {
            byte[] model = new byte[(int) array.size()];
            long rebuilt = awayAndBack(s, model, true);
            // 21 rows written while away, up to 8 more still dirty from before, and its superblock and bitmap
            long metadata = 64 << 10;
            assertTrue(rebuilt >= 21L * CHUNK && rebuilt <= 29L * CHUNK + metadata,
                    rebuilt + " bytes written to the re-added member; a full rebuild writes " + (long) ROWS * CHUNK);
            assertContentThroughTheReAddedMember(s, model);
        }
    }

    @Test
    void withoutABitmapTheReAddedMemberIsRebuiltWhole() throws Exception {
        Setup s = create(ConsistencyPolicy.RESYNC);
        try (Raid5Array array = s.array()) {
            byte[] model = new byte[(int) array.size()];
            long rebuilt = awayAndBack(s, model, false);
            assertTrue(rebuilt >= (long) ROWS * CHUNK, rebuilt + " bytes");
            assertContentThroughTheReAddedMember(s, model);
        }
    }

    @Test
    void onlyAFaultyMemberWithItsDeviceCanBeReAdded() throws Exception {
        Setup s = create(ConsistencyPolicy.BITMAP);
        try (Raid5Array array = s.array()) {
            IllegalStateException active = assertThrows(IllegalStateException.class, () -> array.reAddMember(1));
            assertTrue(active.getMessage().contains("member 1 is active"), active.getMessage());
            array.failMember(1);
            array.removeMember(1);
            IllegalStateException removed = assertThrows(IllegalStateException.class, () -> array.reAddMember(1));
            assertTrue(removed.getMessage().contains("without a device"), removed.getMessage());
            assertFalse(array.status().health() == Raid5Status.Health.CLEAN);
        }
    }
}
