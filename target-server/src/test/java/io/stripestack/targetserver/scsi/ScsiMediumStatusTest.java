package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MemoryBlockDevice;
import org.junit.jupiter.api.Test;

/**
 * Commands that ask about the medium without moving its data: GET LBA STATUS (SBC-3 5.16), PRE-FETCH(10/16)
 * (5.11, 5.12) and READ DEFECT DATA(10/12) (5.19, 5.20).
 */
class ScsiMediumStatusTest {
    private static final int MIB = 1 << 20;
    private static final long BLOCKS = 4L * MIB / 512;
    private static final int MAPPED = 0;
    private static final int DEALLOCATED = 1;

    private static byte[] getLbaStatus(long lba, long allocation) {
        byte[] c = rw16(0x9E, lba, allocation);
        c[1] = 0x12;
        return c;
    }

    private static byte[] unmap(long lba, long blocks) {
        byte[] list = new byte[24];
        Cdb.put16(list, 0, 22);
        Cdb.put16(list, 2, 16);
        Cdb.put64(list, 8, lba);
        Cdb.put32(list, 16, blocks);
        return list;
    }

    private static byte[] unmapCdb() {
        return cdb(0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0);
    }

    /** Parses LBA status descriptors into {lba, blocks, status} triples, checking the header. */
    private static long[][] descriptors(byte[] d) {
        assertEquals(d.length - 4, Cdb.u32(d, 0), "PARAMETER DATA LENGTH: the bytes after it");
        assertEquals(0, (d.length - 8) % 16, "16-byte descriptors");
        long[][] out = new long[(d.length - 8) / 16][];
        for (int i = 0; i < out.length; i++) {
            int at = 8 + 16 * i;
            out[i] = new long[] {Cdb.u64(d, at), Cdb.u32(d, at + 8), d[at + 12] & 0x0f};
        }
        return out;
    }

    private static ScsiHarness fullyProvisioned() {
        return new ScsiHarness(new ShapedBlockDevice(new MemoryBlockDevice("m0", 4 * MIB, 512),
                Geometry.simple(512), false), false);
    }

    @Test
    void fullyProvisionedUnitReportsEveryBlockMappedToTheEnd() {
        try (ScsiHarness h = fullyProvisioned()) {
            long[][] all = descriptors(h.run(getLbaStatus(0, 24)).assertGood().data());
            assertEquals(1, all.length);
            assertArrayEquals(new long[] {0, BLOCKS, MAPPED}, all[0]);
            long[][] last = descriptors(h.run(getLbaStatus(BLOCKS - 1, 4096)).assertGood().data());
            assertArrayEquals(new long[] {BLOCKS - 1, 1, MAPPED}, last[0]);
        }
    }

    @Test
    void startingLbaBeyondTheMediumIsOutOfRange() {
        try (ScsiHarness h = fullyProvisioned()) {
            for (long lba : new long[] {BLOCKS, BLOCKS + 1, 1L << 63, -1L}) {
                h.run(getLbaStatus(lba, 24)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            }
        }
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", 4 * MIB, 512), false)) {
            h.run(getLbaStatus(BLOCKS, 24)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
        }
    }

    @Test
    void zeroFilledBlocksOfADiscardingUnitAreDeallocatedAndWrittenOnesMapped() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", 4 * MIB, 512), false)) {
            h.run(write10(0, 64, false), pattern(64 * 512, 3)).assertGood();
            h.run(unmapCdb(), unmap(8, 8)).assertGood();
            long[][] d = descriptors(h.run(getLbaStatus(0, 8 + 16 * 16)).assertGood().data());
            assertEquals(4, d.length, "mapped, unmapped, mapped, then the never-written rest");
            assertArrayEquals(new long[] {0, 8, MAPPED}, d[0]);
            assertArrayEquals(new long[] {8, 8, DEALLOCATED}, d[1]);
            assertArrayEquals(new long[] {16, 48, MAPPED}, d[2]);
            long scanned = LogicalUnit.LBA_STATUS_SCAN_BYTES / 512;
            assertArrayEquals(new long[] {64, scanned - 64, DEALLOCATED}, d[3],
                    "one command looks at LBA_STATUS_SCAN_BYTES of the medium");

            long[][] fromUnmapped = descriptors(h.run(getLbaStatus(12, 24)).assertGood().data());
            assertEquals(1, fromUnmapped.length, "as many descriptors as the allocation length holds");
            assertArrayEquals(new long[] {12, 4, DEALLOCATED}, fromUnmapped[0]);

            long[][] tail = descriptors(h.run(getLbaStatus(BLOCKS - 3, 1024)).assertGood().data());
            assertArrayEquals(new long[] {BLOCKS - 3, 3, DEALLOCATED}, tail[0], "ends at the end of the medium");
            assertEquals(1, tail.length);

            byte[] truncated = h.run(getLbaStatus(0, 16)).assertGood().data();
            assertEquals(16, truncated.length, "Data-In truncated to the allocation length");
            assertEquals(8 + 16 - 4, Cdb.u32(truncated, 0), "at least one descriptor, even when it does not fit");
            assertNull(h.run(getLbaStatus(0, 0)).assertGood().data());
        }
    }

    @Test
    void readOnlyUnitOffersNoUnmapSoEveryBlockIsMapped() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", 4 * MIB, 512), true)) {
            long[][] d = descriptors(h.run(getLbaStatus(0, 1024)).assertGood().data());
            assertEquals(1, d.length);
            assertArrayEquals(new long[] {0, BLOCKS, MAPPED}, d[0]);
        }
    }

    @Test
    void preFetchChecksTheRangeAndAnswersGood() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", 4 * MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            long readsBefore = device.stats().readOps();
            for (int immed : new int[] {0, 0x02}) {
                h.run(cdb(0x34, immed, 0, 0, 0, 0, 3, 1, 0, 0)).assertGood();                  // 256 blocks at 0
                h.run(rw16(0x90, BLOCKS - 256, 256)).assertGood();
                h.run(cdb(0x34, immed, 0, 0, 0, 0, 0, 0, 0, 0)).assertGood();                  // 0 blocks
            }
            assertEquals(readsBefore, device.stats().readOps(), "no cache to fill: nothing is read");
            h.run(cdb(0x34, 0, 0, 0x00, 0x20, 0x00, 0, 0, 1, 0)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0);
            h.run(rw16(0x90, BLOCKS - 1, 2)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0);
            h.run(rw16(0x90, BLOCKS + 1, 0)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0);
            h.run(rw16(0x90, -1, 1)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0);
        }
    }

    @Test
    void defectListsAreEmptyInTheFormatAskedFor() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            byte[] ten = h.run(cdb(0x37, 0, 0x18 | 0x05, 0, 0, 0, 0, 0, 32, 0)).assertGood().data();
            assertArrayEquals(new byte[] {0, 0x1D, 0, 0}, ten, "PLISTV, GLISTV, physical sector format, no defects");
            byte[] twelve = h.run(cdb(0xB7, 0x08 | 0x03, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0)).assertGood().data();
            assertArrayEquals(new byte[] {0, 0x0B, 0, 0, 0, 0, 0, 0}, twelve, "GLISTV, long block format, no defects");
            assertArrayEquals(new byte[] {0, 0}, h.run(cdb(0x37, 0, 0, 0, 0, 0, 0, 0, 2, 0)).assertGood().data());
        }
    }
}
