package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** INQUIRY standard data and VPD pages, checked byte by byte against SPC-4 6.6 / 7.8 and SBC-3 6.5. */
class ScsiInquiryTest {
    private static final int MIB = 1 << 20;

    private static ScsiHarness harness(Geometry geometry, boolean discard, int blockSize) {
        return new ScsiHarness(new ShapedBlockDevice(new MemoryBlockDevice("m0", 8 * MIB, blockSize), geometry, discard),
                false);
    }

    private static String ascii(byte[] d, int from, int length) {
        return new String(d, from, length, StandardCharsets.US_ASCII);
    }

    @Test
    void standardDataDescribesAnSpc4DirectAccessDevice() {
        try (ScsiHarness h = harness(Geometry.simple(512), true, 512)) {
            byte[] d = h.run(inquiry(false, 0, 255)).assertGood().data();
            assertEquals(96, d.length);
            assertEquals(0x00, d[0], "qualifier 000b, direct-access block device");
            assertEquals(0x00, d[1], "RMB=0");
            assertEquals(0x06, d[2], "VERSION: SPC-4");
            assertEquals(0x02, d[3] & 0x0f, "response data format 2");
            assertEquals(0x10, d[3] & 0x10, "HISUP");
            assertEquals(d.length - 5, d[4] & 0xff, "ADDITIONAL LENGTH");
            assertEquals(0x08, d[5] & 0x08, "3PC: EXTENDED COPY offered");
            assertEquals(0x02, d[7] & 0x02, "CMDQUE");
            assertEquals("STRIPSTK", ascii(d, 8, 8));
            assertEquals("stripestack LUN ", ascii(d, 16, 16));
            assertEquals("0001", ascii(d, 32, 4));
            assertEquals(0x0460, Cdb.u16(d, 62), "SPC-4 version descriptor");
            assertEquals(0x04C0, Cdb.u16(d, 64), "SBC-3 version descriptor");
            assertEquals(255, h.run(inquiry(false, 0, 255)).commandTransferLength());
        }
    }

    @Test
    void shortAllocationLengthTruncatesWithoutError() {
        try (ScsiHarness h = harness(Geometry.simple(512), true, 512)) {
            byte[] full = h.run(inquiry(false, 0, 255)).data();
            byte[] five = h.run(inquiry(false, 0, 5)).assertGood().data();
            assertArrayEquals(Arrays.copyOf(full, 5), five);
            assertNull(h.run(inquiry(false, 0, 0)).assertGood().data(), "allocation length 0 moves no data");
        }
    }

    @Test
    void invalidInquiryFieldsAreRejectedWithFieldPointers() {
        try (ScsiHarness h = harness(Geometry.simple(512), true, 512)) {
            h.run(inquiry(false, 0x80, 255)).assertInvalidFieldInCdb(2);
            h.run(inquiry(true, 0x99, 255)).assertInvalidFieldInCdb(2);
            h.run(cdb(0x12, 0x02, 0, 0, 255, 0)).assertInvalidFieldInCdb(1);
        }
    }

    @Test
    void supportedPagesAreAscendingAndIncludeProvisioningOnlyWithDiscard() {
        try (ScsiHarness h = harness(Geometry.simple(512), true, 512)) {
            byte[] d = h.run(inquiry(true, 0x00, 255)).assertGood().data();
            assertEquals(0x00, d[1]);
            assertArrayEquals(new byte[] {0x00, (byte) 0x80, (byte) 0x83, (byte) 0x8F, (byte) 0xB0, (byte) 0xB1,
                (byte) 0xB2},
                    Arrays.copyOfRange(d, 4, 4 + Cdb.u16(d, 2)));
        }
        try (ScsiHarness h = harness(Geometry.simple(512), false, 512)) {
            byte[] d = h.run(inquiry(true, 0x00, 255)).assertGood().data();
            assertArrayEquals(new byte[] {0x00, (byte) 0x80, (byte) 0x83, (byte) 0x8F, (byte) 0xB0, (byte) 0xB1},
                    Arrays.copyOfRange(d, 4, 4 + Cdb.u16(d, 2)));
            h.run(inquiry(true, 0xB2, 255)).assertInvalidFieldInCdb(2);
        }
    }

    @Test
    void unitSerialNumberPageCarriesTheConfiguredSerial() {
        LogicalUnitIdentity id = new LogicalUnitIdentity("ACME", "disk", "1.0", "SER-0042",
                LogicalUnitIdentity.naaFrom(LUN_ID));
        try (ScsiHarness h = new ScsiHarness(new LogicalUnit(new MemoryBlockDevice("m0", MIB, 512), id, false))) {
            byte[] d = h.run(inquiry(true, 0x80, 255)).assertGood().data();
            assertEquals((byte) 0x80, d[1]);
            assertEquals(8, Cdb.u16(d, 2));
            assertEquals("SER-0042", ascii(d, 4, 8));
            byte[] std = h.run(inquiry(false, 0, 36)).data();
            assertEquals("ACME    ", ascii(std, 8, 8), "vendor padded with spaces");
        }
    }

    @Test
    void deviceIdentificationHasNaaT10AndRelativePortDesignators() {
        try (ScsiHarness h = harness(Geometry.simple(512), true, 512)) {
            byte[] d = h.run(inquiry(true, 0x83, 255)).assertGood().data();
            assertEquals((byte) 0x83, d[1]);
            assertEquals(d.length - 4, Cdb.u16(d, 2));
            boolean naa = false;
            boolean t10 = false;
            boolean port = false;
            for (int p = 4; p < d.length; p += 4 + (d[p + 3] & 0xff)) {
                int codeSet = d[p] & 0x0f;
                int association = (d[p + 1] >> 4) & 0x03;
                int type = d[p + 1] & 0x0f;
                int length = d[p + 3] & 0xff;
                if (type == 3) {
                    naa = true;
                    assertEquals(1, codeSet, "NAA is binary");
                    assertEquals(0, association, "NAA names the logical unit");
                    assertEquals(16, length);
                    assertEquals(0x60, d[p + 4] & 0xf0, "NAA 6 (IEEE Registered Extended)");
                    assertArrayEquals(LogicalUnitIdentity.naaFrom(LUN_ID), Arrays.copyOfRange(d, p + 4, p + 20));
                } else if (type == 1) {
                    t10 = true;
                    assertEquals(2, codeSet, "T10 vendor id is ASCII");
                    assertEquals("STRIPSTK", ascii(d, p + 4, 8));
                    String serial = LogicalUnitIdentity.of(LUN_ID).serialNumber();
                    assertTrue(ascii(d, p + 4, length).endsWith(serial), "T10 designator ends with the serial");
                } else if (type == 4) {
                    port = true;
                    assertEquals(1, association, "relative target port is a target-port designator");
                    assertEquals(0x80, d[p + 1] & 0x80, "PIV");
                    assertEquals(5, (d[p] >> 4) & 0x0f, "protocol identifier iSCSI");
                    assertEquals(1, Cdb.u16(d, p + 6));
                }
            }
            assertTrue(naa && t10 && port, "NAA, T10 and relative port designators present");
        }
    }

    @Test
    void identityDerivedFromUuidIsStableAndValidated() {
        assertEquals(LogicalUnitIdentity.of(LUN_ID), LogicalUnitIdentity.of(LUN_ID));
        assertNotEquals(LogicalUnitIdentity.of(LUN_ID).serialNumber(),
                LogicalUnitIdentity.of(LogicalUnitIdentity.stableIdFromName("other")).serialNumber());
        assertThrows(IllegalArgumentException.class, () -> new LogicalUnitIdentity("TOO-LONG-VENDOR", "p", "1", "s",
                LogicalUnitIdentity.naaFrom(LUN_ID)));
        assertThrows(IllegalArgumentException.class, () -> new LogicalUnitIdentity("V", "p", "1", "s\u00e9",
                LogicalUnitIdentity.naaFrom(LUN_ID)));
        assertThrows(IllegalArgumentException.class, () -> new LogicalUnitIdentity("V", "p", "1", "s", new byte[16]));
    }

    @Test
    void blockLimitsFollowRaidGeometry() {
        // RAID-5 of 4 members, 64 KiB chunk: io_min 64 KiB, io_opt 192 KiB (3 data disks).
        try (ScsiHarness h = harness(new Geometry(64 << 10, 192 << 10, 0, 0), true, 512)) {
            byte[] d = h.run(inquiry(true, 0xB0, 255)).assertGood().data();
            assertEquals((byte) 0xB0, d[1]);
            assertEquals(0x3C, Cdb.u16(d, 2));
            int granularity = Cdb.u16(d, 6);
            long max = Cdb.u32(d, 8);
            long optimal = Cdb.u32(d, 12);
            assertEquals(128, granularity, "64 KiB / 512");
            assertEquals(384, optimal, "192 KiB / 512");
            assertTrue(max >= optimal, "MAXIMUM TRANSFER LENGTH >= OPTIMAL (else Linux ignores io_opt)");
            assertEquals(0, max % granularity, "maximum a multiple of the granularity");
            assertEquals(0, max % optimal, "maximum a whole number of stripes");
            assertTrue(Cdb.u32(d, 20) > 0, "MAXIMUM UNMAP LBA COUNT with discard");
            assertTrue(Cdb.u32(d, 24) > 0, "MAXIMUM UNMAP BLOCK DESCRIPTOR COUNT with discard");
            assertEquals(0, d[4] & 0x01, "WSNZ=0: WRITE SAME of 0 blocks runs to the end of the medium");
            assertEquals(0xFFFF, Cdb.u64(d, 36), "MAXIMUM WRITE SAME LENGTH: what WRITE SAME(10) can express");
            assertTrue((d[5] & 0xff) >= 1, "COMPARE AND WRITE offered");
        }
    }

    @Test
    void blockLimitsMaximumNeverBelowOptimalEvenWhenTheDeviceAsksForLess() {
        try (ScsiHarness h = harness(new Geometry(64 << 10, 448 << 10, 0, 128 << 10), false, 4096)) {
            byte[] d = h.run(inquiry(true, 0xB0, 255)).assertGood().data();
            assertEquals(16, Cdb.u16(d, 6), "64 KiB / 4096");
            assertEquals(112, Cdb.u32(d, 12), "448 KiB / 4096");
            assertTrue(Cdb.u32(d, 8) >= 112);
            assertEquals(0, Cdb.u32(d, 8) % 16);
            assertEquals(0, Cdb.u32(d, 20), "no UNMAP without discard");
            assertEquals(0, Cdb.u32(d, 24));
        }
    }

    @Test
    void blockDeviceCharacteristicsSayNonRotating() {
        try (ScsiHarness h = harness(Geometry.simple(512), true, 512)) {
            byte[] d = h.run(inquiry(true, 0xB1, 255)).assertGood().data();
            assertEquals((byte) 0xB1, d[1]);
            assertEquals(0x3C, Cdb.u16(d, 2));
            assertEquals(1, Cdb.u16(d, 4), "MEDIUM ROTATION RATE 0001h: non-rotating");
        }
    }

    @Test
    void logicalBlockProvisioningOffersUnmapAndWriteSameUnmap() {
        try (ScsiHarness h = harness(Geometry.simple(512), true, 512)) {
            byte[] d = h.run(inquiry(true, 0xB2, 255)).assertGood().data();
            assertEquals((byte) 0xB2, d[1]);
            assertEquals(0x80, d[5] & 0x80, "LBPU");
            assertEquals(0x40, d[5] & 0x40, "LBPWS");
            assertEquals(0x20, d[5] & 0x20, "LBPWS10");
            assertEquals(0x04, d[5] & 0x04, "LBPRZ: memory device reads zeros after discard");
            assertEquals(2, d[6] & 0x07, "thin provisioned");
        }
    }

    @Test
    void inquiryToAnAbsentLunAnswersQualifier3AndOtherCommandsLunNotSupported() {
        try (ScsiHarness h = harness(Geometry.simple(512), true, 512)) {
            ScsiHarness.Result r = h.run(NEXUS_A, 5, inquiry(false, 0, 96), null).assertGood();
            assertEquals(0x7F, r.data()[0] & 0xff, "qualifier 011b, type 1Fh");
            h.run(NEXUS_A, 5, cdb(0, 0, 0, 0, 0, 0), null).assertCheck(SenseException.ILLEGAL_REQUEST, 0x25, 0x00);
            h.run(NEXUS_A, 5, read10(0, 1), null).assertCheck(SenseException.ILLEGAL_REQUEST, 0x25, 0x00);
            byte[] sense = h.run(NEXUS_A, 5, cdb(0x03, 0, 0, 0, 18, 0), null).assertGood().data();
            assertEquals(SenseException.ILLEGAL_REQUEST, sense[2] & 0x0f);
            assertEquals(0x25, sense[12]);
        }
    }
}
