package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.MemoryBlockDevice;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** MODE SENSE / MODE SELECT (SPC-4 6.11-6.14, 7.5) with the caching, control and IE control pages. */
class ScsiModePagesTest {
    private static final int MIB = 1 << 20;

    private static byte[] modeSense6(int dbd, int pc, int page, int subpage, int allocation) {
        return cdb(0x1A, dbd << 3, pc << 6 | page, subpage, allocation, 0);
    }

    private static byte[] modeSense10(boolean llbaa, int pc, int page, int allocation) {
        return cdb(0x5A, llbaa ? 0x10 : 0, pc << 6 | page, 0, 0, 0, 0, allocation >>> 8, allocation & 0xff, 0);
    }

    /** A MODE SELECT(6) parameter list: 4-byte header, no block descriptor, one caching page. */
    private static byte[] cachingPageList(boolean wce, int extraByte2Bits) {
        byte[] p = new byte[4 + 20];
        p[4] = 0x08;
        p[5] = 0x12;
        p[6] = (byte) ((wce ? 0x04 : 0) | extraByte2Bits);
        return p;
    }

    @Test
    void modeSense6CachingPageWithBlockDescriptor() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            byte[] d = h.run(modeSense6(0, 0, 0x08, 0, 255)).assertGood().data();
            assertEquals(4 + 8 + 20, d.length);
            assertEquals(d.length - 1, d[0] & 0xff, "MODE DATA LENGTH excludes itself");
            assertEquals(0, d[2] & 0x80, "not write protected");
            assertEquals(0x10, d[2] & 0x10, "DPOFUA");
            assertEquals(8, d[3], "BLOCK DESCRIPTOR LENGTH");
            assertEquals(MIB / 512, Cdb.u32(d, 4), "NUMBER OF LOGICAL BLOCKS");
            assertEquals(512, Cdb.u24(d, 9), "LOGICAL BLOCK LENGTH");
            assertEquals(0x08, d[12] & 0x3f, "caching page");
            assertEquals(0x12, d[13], "caching page length");
            assertEquals(0x04, d[14] & 0x04, "WCE=1 by default");
            assertEquals(0, d[14] & 0x01, "RCD=0: read cache enabled");
        }
    }

    @Test
    void modeSense6WithoutBlockDescriptorAndTruncated() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            byte[] d = h.run(modeSense6(1, 0, 0x08, 0, 255)).assertGood().data();
            assertEquals(4 + 20, d.length);
            assertEquals(0, d[3]);
            assertEquals(0x08, d[4]);
            ScsiHarness.Result r = h.run(modeSense6(0, 0, 0x3F, 0, 4)).assertGood();
            assertEquals(4, r.data().length, "allocation length 4: only the header");
            assertEquals(4, r.commandTransferLength());
        }
    }

    @Test
    void modeSense10WithLongLbaDescriptor() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 4096), false)) {
            byte[] d = h.run(modeSense10(true, 0, 0x0A, 512)).assertGood().data();
            assertEquals(8 + 16 + 12, d.length);
            assertEquals(d.length - 2, Cdb.u16(d, 0));
            assertEquals(1, d[4] & 0x01, "LONGLBA");
            assertEquals(16, Cdb.u16(d, 6));
            assertEquals(MIB / 4096, Cdb.u64(d, 8));
            assertEquals(4096, Cdb.u32(d, 20));
            assertEquals(0x0A, d[24] & 0x3f, "control page");
            assertEquals(0x0A, d[25], "control page length");
            assertEquals(0, d[26] & 0x04, "D_SENSE=0: fixed-format sense");
        }
    }

    @Test
    void allPagesComeInAscendingOrder() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            for (int subpage : new int[] {0x00, 0xFF}) {
                byte[] d = h.run(modeSense6(1, 0, 0x3F, subpage, 255)).assertGood().data();
                int[] codes = new int[3];
                int n = 0;
                for (int p = 4; p < d.length; p += 2 + (d[p + 1] & 0xff)) {
                    codes[n++] = d[p] & 0x3f;
                }
                assertArrayEquals(new int[] {0x08, 0x0A, 0x1C}, Arrays.copyOf(codes, n));
                assertEquals(d.length, 4 + 20 + 12 + 12);
            }
        }
    }

    @Test
    void changeableDefaultAndSavedPageControls() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            byte[] changeable = h.run(modeSense6(1, 1, 0x08, 0, 255)).assertGood().data();
            assertEquals(0x04, changeable[6], "only WCE is changeable");
            for (int i = 7; i < changeable.length; i++) {
                assertEquals(0, changeable[i], "byte " + i);
            }
            byte[] control = h.run(modeSense6(1, 1, 0x0A, 0, 255)).assertGood().data();
            for (int i = 6; i < control.length; i++) {
                assertEquals(i == 8 ? 0x08 : 0, control[i], "control page changeable only in SWP (page byte 4), byte " + i);
            }
            h.run(cdb(0x15, 0x10, 0, 0, 24, 0), cachingPageList(false, 0)).assertGood();
            assertEquals(0x04, h.run(modeSense6(1, 2, 0x08, 0, 255)).data()[6] & 0x04, "default still WCE=1");
            assertEquals(0, h.run(modeSense6(1, 0, 0x08, 0, 255)).data()[6] & 0x04, "current WCE=0");
            h.run(modeSense6(1, 3, 0x08, 0, 255)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x39, 0x00);
        }
    }

    @Test
    void unsupportedPagesAndSubpagesAreInvalid() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            h.run(modeSense6(0, 0, 0x19, 0, 255)).assertInvalidFieldInCdb(2);
            h.run(modeSense6(0, 0, 0x08, 0x01, 255)).assertInvalidFieldInCdb(3);
        }
    }

    @Test
    void clearingWceMakesEveryWriteFlushAndTellsOtherNexuses() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            h.run(write10(0, 1, false), new byte[512]).assertGood();
            assertEquals(0, device.stats().flushOps());
            h.run(NEXUS_B, cdb(0, 0, 0, 0, 0, 0), null).assertGood(); // B is known to the unit

            h.run(cdb(0x15, 0x10, 0, 0, 24, 0), cachingPageList(false, 0)).assertGood();
            assertFalse(h.unit.writeCacheEnabled());
            h.run(write10(1, 1, false), new byte[512]).assertGood();
            assertEquals(1, device.stats().flushOps(), "write-through: flushed before GOOD");
            h.run(rw16(0x8A, 2, 1), new byte[512]).assertGood();
            assertEquals(2, device.stats().flushOps());

            h.run(NEXUS_B, cdb(0, 0, 0, 0, 0, 0), null).assertCheck(SenseException.UNIT_ATTENTION, 0x2A, 0x01);
            h.run(NEXUS_B, cdb(0, 0, 0, 0, 0, 0), null).assertGood();
            h.run(cdb(0, 0, 0, 0, 0, 0)).assertGood(); // the nexus that changed them is not told

            byte[] list10 = new byte[8 + 20];
            list10[8] = 0x08;
            list10[9] = 0x12;
            list10[10] = 0x04;
            h.run(cdb(0x55, 0x10, 0, 0, 0, 0, 0, 0, 28, 0), list10).assertGood();
            assertTrue(h.unit.writeCacheEnabled(), "MODE SELECT(10) set WCE again");
            h.run(write10(3, 1, false), new byte[512]).assertGood();
            assertEquals(2, device.stats().flushOps(), "write-back again");
        }
    }

    @Test
    void modeSelectRejectsChangesToUnchangeableFieldsAndAppliesNothing() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            ScsiHarness.Result r = h.run(cdb(0x15, 0x10, 0, 0, 24, 0), cachingPageList(false, 0x01)); // RCD
            r.assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x00);
            assertEquals(0x80, r.sense()[15] & 0xC0, "SKSV set, C/D=0: pointer into the parameter list");
            assertEquals(6, Cdb.u16(r.sense(), 16), "byte 2 of the page at offset 4");
            assertTrue(h.unit.writeCacheEnabled(), "WCE untouched by the rejected list");

            byte[] wrongLength = cachingPageList(false, 0);
            wrongLength[5] = 0x10;
            h.run(cdb(0x15, 0x10, 0, 0, 24, 0), wrongLength).assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x00);
            byte[] unknownPage = cachingPageList(false, 0);
            unknownPage[4] = 0x19;
            h.run(cdb(0x15, 0x10, 0, 0, 24, 0), unknownPage).assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x00);
            h.run(cdb(0x15, 0x11, 0, 0, 24, 0), cachingPageList(false, 0)).assertInvalidFieldInCdb(1); // SP
            h.run(cdb(0x15, 0x10, 0, 0, 3, 0), new byte[3]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x1A, 0x00);
            h.run(cdb(0x15, 0x10, 0, 0, 24, 0), new byte[10]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x0E, 0x03);
        }
    }

    @Test
    void modeSelectChecksTheBlockDescriptor() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            byte[] list = new byte[4 + 8 + 20];
            list[3] = 8;
            Cdb.put32(list, 4, MIB / 512);
            list[10] = 0x02; // LOGICAL BLOCK LENGTH (bytes 5-7 of the descriptor) 512: 00 02 00
            list[12] = 0x08;
            list[13] = 0x12;
            h.run(cdb(0x15, 0x10, 0, 0, list.length, 0), list).assertGood();
            assertFalse(h.unit.writeCacheEnabled());
            list[11] = 0x01; // 513
            h.run(cdb(0x15, 0x10, 0, 0, list.length, 0), list).assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x00);
        }
    }
}
