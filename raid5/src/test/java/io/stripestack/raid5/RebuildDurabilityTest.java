package io.stripestack.raid5;

import static io.stripestack.raid5.Raid5ArrayTest.SECTOR;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The rebuild's superblocks never claim more than is durable on the new member: every superblock
 * written to it covers (by its recovery_offset, or entirely once it is active) only rows whose data
 * was flushed before that superblock was written.
 */
class RebuildDurabilityTest {
    private static final int CHUNK = 8192;
    private static final int ROWS = 96;
    /**
     * Right after the superblock: no room for a write-intent bitmap, whose writes flush every member and
     * would hide a missing flush of the rebuild's own.
     */
    private static final long DATA_OFFSET_SECTORS = 16;
    private static final int DATA_OFFSET_BYTES = (int) (DATA_OFFSET_SECTORS * SECTOR);

    /**
     * A member that remembers which of its rows were written since the last flush and checks every
     * superblock written to it against them (a crash would keep the superblock but may lose the rows).
     */
    private static final class DurabilityCheckingDevice implements BlockDevice {
        private final MemoryBlockDevice disk;
        private final boolean[] unflushed = new boolean[ROWS];
        private final List<String> violations = new ArrayList<>();
        private int superblocks;
        private int flushes;

        DurabilityCheckingDevice(String name) {
            disk = new MemoryBlockDevice(name, DATA_OFFSET_BYTES + ROWS * CHUNK, SECTOR);
        }

        @Override
        public String name() {
            return disk.name();
        }

        @Override
        public long size() {
            return disk.size();
        }

        @Override
        public int logicalBlockSize() {
            return disk.logicalBlockSize();
        }

        @Override
        public io.stripestack.blockdev.Geometry geometry() {
            return disk.geometry();
        }

        @Override
        public io.stripestack.blockdev.IoStats stats() {
            return disk.stats();
        }

        @Override
        public void read(long offset, ByteBuffer dst) throws IOException {
            disk.read(offset, dst);
        }

        @Override
        public synchronized void write(long offset, ByteBuffer src) throws IOException {
            int length = src.remaining();
            if (offset == Md1Superblock.OFFSET_BYTES) {
                checkSuperblock(Md1Superblock.decode(src, name()));
            } else if (offset >= DATA_OFFSET_BYTES) {
                for (long row = (offset - DATA_OFFSET_BYTES) / CHUNK;
                     row <= (offset + length - 1 - DATA_OFFSET_BYTES) / CHUNK; row++) {
                    unflushed[(int) row] = true;
                }
            }
            disk.write(offset, src);
        }

        private void checkSuperblock(Md1Superblock sb) {
            superblocks++;
            int role = sb.devRoles[sb.devNumber];
            long covered;
            if ((sb.featureMap & Md1Superblock.FEATURE_RECOVERY_OFFSET) != 0) {
                covered = sb.recoveryOffset / sb.chunkSectors;
            } else {
                covered = role < sb.raidDisks ? ROWS : 0;
            }
            for (int row = 0; row < covered; row++) {
                if (unflushed[row]) {
                    violations.add("superblock " + superblocks + " (role " + role + ", recovery_offset "
                            + sb.recoveryOffset + ", feature_map " + sb.featureMap + ") covers row " + row
                            + " before it was flushed");
                    return;
                }
            }
        }

        @Override
        public synchronized void flush() throws IOException {
            flushes++;
            java.util.Arrays.fill(unflushed, false);
            disk.flush();
        }

        @Override
        public void close() throws IOException {
            disk.close();
        }

        synchronized List<String> violations() {
            return List.copyOf(violations);
        }

        synchronized int superblocks() {
            return superblocks;
        }
    }

    @Test
    void everySuperblockOnTheNewMemberCoversOnlyFlushedRows() throws Exception {
        int n = 4;
        List<BlockDevice> members = new ArrayList<>();
        for (int m = 0; m < n; m++) {
            members.add(new MemoryBlockDevice("m" + m, DATA_OFFSET_BYTES + ROWS * CHUNK, SECTOR));
        }
        DurabilityCheckingDevice spare = new DurabilityCheckingDevice("spare");
        try (Raid5Array array = Raid5Array.create(members, new Raid5Config("dur", CHUNK, Raid5Layout.LEFT_SYMMETRIC,
                DATA_OFFSET_SECTORS), Raid5Options.defaults().withStripeCacheRows(4), true)) {
            byte[] model = new byte[(int) array.size()];
            new Random(7).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            array.setSyncSpeedMin(1);
            array.setSyncSpeedMax(300);          // ~2.6 s for 96 x 8 KiB: several checkpoints mid-rebuild
            array.failMember(2);
            array.addSpare(spare);
            assertTrue(array.awaitSyncIdle(30, TimeUnit.SECONDS), "rebuild did not finish: " + array.syncProgress());
            assertEquals(Raid5Status.MemberState.ACTIVE, array.status().members().get(2).state());

            assertEquals(List.of(), spare.violations());
            assertTrue(spare.superblocks() >= 4, "expected the spare, start, mid-rebuild and completion superblocks, "
                    + "saw " + spare.superblocks());
            byte[] got = new byte[model.length];
            array.read(0, ByteBuffer.wrap(got));
            assertArrayEquals(model, got);
            array.failMember(0);                 // member 0's chunks now come from the others, the rebuilt one too
            java.util.Arrays.fill(got, (byte) 0);
            array.read(0, ByteBuffer.wrap(got));
            assertArrayEquals(model, got);
        }
    }
}
