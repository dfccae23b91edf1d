package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.MemoryBlockDevice;
import org.junit.jupiter.api.Test;

/**
 * SWP, software write protect, in the Control mode page (SPC-4 7.5.8): MODE SELECT sets and clears it; while
 * it is set every command that modifies the medium answers DATA PROTECT / WRITE PROTECTED, reads go on, and
 * MODE SENSE reports WP in the device-specific parameter.
 */
class ScsiSoftwareWriteProtectTest {
    private static final int MIB = 1 << 20;

    /** MODE SENSE(10) of the Control page without block descriptors, as libiscsi's iscsi-swp asks for it. */
    private static byte[] senseControl10(int pc) {
        return cdb(0x5A, 0x08, pc << 6 | 0x0A, 0, 0, 0, 0, 0, 255, 0);
    }

    /** Sets or clears SWP the way iscsi-swp does: the current Control page, PS cleared, through MODE SELECT(10). */
    private static void setSwp(ScsiHarness h, String nexus, boolean on) {
        byte[] current = h.run(nexus, senseControl10(0), null).assertGood().data();
        byte[] list = new byte[8 + 12];
        System.arraycopy(current, 8, list, 8, 12);
        list[8] &= 0x7f; // PS is reserved in MODE SELECT
        list[12] = (byte) (on ? list[12] | 0x08 : list[12] & ~0x08);
        h.run(nexus, 0, cdb(0x55, 0x10, 0, 0, 0, 0, 0, 0, list.length, 0), list, list.length).assertGood();
    }

    private static boolean writeProtectedBit(ScsiHarness h) {
        byte[] ten = h.run(senseControl10(0)).assertGood().data();
        byte[] six = h.run(cdb(0x1A, 0x08, 0x0A, 0, 255, 0)).assertGood().data();
        assertEquals(ten[3] & 0x80, six[2] & 0x80, "MODE SENSE(6) and (10) agree on WP");
        return (ten[3] & 0x80) != 0;
    }

    @Test
    void swpIsChangeableAndOffByDefault() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            assertEquals(0x08, h.run(senseControl10(1)).assertGood().data()[8 + 4], "changeable: SWP only");
            assertEquals(0, h.run(senseControl10(2)).assertGood().data()[8 + 4] & 0x08, "default: SWP=0");
            assertEquals(0, h.run(senseControl10(0)).assertGood().data()[8 + 4] & 0x08, "current: SWP=0");
            assertFalse(writeProtectedBit(h));
        }
    }

    @Test
    void whileSwpIsSetEveryMediumModifyingCommandIsWriteProtected() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            byte[] block = pattern(512, 3);
            h.run(write10(5, 1, false), block).assertGood();
            h.run(NEXUS_B, cdb(0, 0, 0, 0, 0, 0), null).assertGood(); // B is known to the unit

            setSwp(h, NEXUS_A, true);
            assertEquals(0x08, h.run(senseControl10(0)).data()[8 + 4] & 0x08, "current: SWP=1");
            assertTrue(writeProtectedBit(h), "WP reflects SWP");
            h.run(NEXUS_B, cdb(0, 0, 0, 0, 0, 0), null).assertCheck(SenseException.UNIT_ATTENTION, 0x2A, 0x01);

            byte[][] modifying = {
                cdb(0x0A, 0, 0, 5, 1, 0),                                 // WRITE(6)
                write10(5, 1, false),
                cdb(0xAA, 0, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0),               // WRITE(12)
                rw16(0x8A, 5, 1),                                         // WRITE(16)
                cdb(0x2E, 0, 0, 0, 0, 5, 0, 0, 1, 0),                     // WRITE AND VERIFY(10)
                cdb(0xAE, 0, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0),               // WRITE AND VERIFY(12)
                rw16(0x8E, 5, 1),                                         // WRITE AND VERIFY(16)
                cdb(0x41, 0, 0, 0, 0, 5, 0, 0, 1, 0),                     // WRITE SAME(10)
                rw16(0x93, 5, 1),                                         // WRITE SAME(16)
                rw16(0x8B, 5, 1),                                         // ORWRITE(16)
            };
            for (byte[] cdb : modifying) {
                h.run(cdb, block).assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
            }
            byte[] caw = cdb(0x89, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0);
            h.run(caw, new byte[1024]).assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
            byte[] unmapList = new byte[24];
            Cdb.put16(unmapList, 0, 22);
            Cdb.put16(unmapList, 2, 16);
            Cdb.put64(unmapList, 8, 5);
            Cdb.put32(unmapList, 16, 1);
            h.run(cdb(0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0), unmapList).assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);

            assertArrayEquals(block, h.run(read10(5, 1)).assertGood().data(), "nothing was written, reads go on");
            h.run(cdb(0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0)).assertGood(); // SYNCHRONIZE CACHE writes cached data only

            setSwp(h, NEXUS_B, false);
            h.run(cdb(0, 0, 0, 0, 0, 0)).assertCheck(SenseException.UNIT_ATTENTION, 0x2A, 0x01);
            assertFalse(writeProtectedBit(h));
            h.run(write10(5, 1, false), new byte[512]).assertGood();
            assertArrayEquals(new byte[512], h.run(read10(5, 1)).assertGood().data());
        }
    }

    @Test
    void aReadOnlyUnitStaysWriteProtectedWhenSwpIsCleared() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), true)) {
            setSwp(h, NEXUS_A, true);
            setSwp(h, NEXUS_A, false);
            assertTrue(writeProtectedBit(h));
            h.run(write10(0, 1, false), new byte[512]).assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
        }
    }
}
