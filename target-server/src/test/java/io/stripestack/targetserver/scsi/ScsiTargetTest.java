package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Target-level behaviour: REPORT LUNS, unit attentions, REQUEST SENSE, REPORT SUPPORTED OPERATION CODES. */
class ScsiTargetTest {
    private static final int MIB = 1 << 20;

    private static LogicalUnit unit(String name) {
        return new LogicalUnit(new MemoryBlockDevice(name, MIB, 512),
                LogicalUnitIdentity.of(LogicalUnitIdentity.stableIdFromName(name)), false);
    }

    private static byte[] reportLuns(int select, int allocation) {
        byte[] c = new byte[12];
        c[0] = (byte) 0xA0;
        c[2] = (byte) select;
        Cdb.put32(c, 6, allocation);
        return c;
    }

    private static byte[] rsoc(boolean timeouts, int options, int opcode, int serviceAction, int allocation) {
        byte[] c = new byte[12];
        c[0] = (byte) 0xA3;
        c[1] = 0x0C;
        c[2] = (byte) ((timeouts ? 0x80 : 0) | options);
        c[3] = (byte) opcode;
        Cdb.put16(c, 4, serviceAction);
        Cdb.put32(c, 6, allocation);
        return c;
    }

    private static final byte[] TUR = cdb(0, 0, 0, 0, 0, 0);

    @Test
    void reportLunsListsEveryLunWithTheRightAddressing() {
        ScsiTarget target = new ScsiTarget(Map.of(3L, unit("c"), 0L, unit("a"), 300L, unit("b")));
        assertEquals(List.of(0L, 3L, 300L), target.luns());
        try (ScsiHarness h = new ScsiHarness(target.logicalUnit(0))) {
            ScsiCommand cmd = new ScsiCommand(NEXUS_A, 7, reportLuns(0, 4096), 4096, true, false,
                    ScsiCommand.ATTR_SIMPLE, null, h.allocator);
            target.execute(cmd); // REPORT LUNS works whatever LUN it is sent to
            assertEquals(ScsiCommand.GOOD, cmd.status());
            byte[] d = new byte[cmd.dataIn().readableBytes()];
            cmd.dataIn().getBytes(0, d);
            cmd.dataIn().release();
            assertEquals(32, d.length);
            assertEquals(24, Cdb.u32(d, 0), "LUN LIST LENGTH");
            assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 0, 0, 0}, Arrays.copyOfRange(d, 8, 16));
            assertArrayEquals(new byte[] {0, 3, 0, 0, 0, 0, 0, 0}, Arrays.copyOfRange(d, 16, 24));
            assertArrayEquals(new byte[] {0x41, 0x2C, 0, 0, 0, 0, 0, 0}, Arrays.copyOfRange(d, 24, 32),
                    "LUN 300 in flat space addressing");
        }
    }

    @Test
    void reportLunsFieldChecks() {
        try (ScsiHarness h = new ScsiHarness(unit("a"))) {
            h.run(reportLuns(0, 15)).assertInvalidFieldInCdb(6);
            h.run(reportLuns(3, 64)).assertInvalidFieldInCdb(2);
            byte[] wellKnown = h.run(reportLuns(1, 64)).assertGood().data();
            assertEquals(0, Cdb.u32(wellKnown, 0), "no well-known LUNs");
            byte[] truncated = h.run(reportLuns(0, 16)).assertGood().data();
            assertEquals(16, truncated.length);
            assertEquals(8, Cdb.u32(truncated, 0), "length field still tells the full list");
        }
    }

    @Test
    void lunOutsideTheAddressableRangeIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new ScsiTarget(Map.of(16384L, unit("a"))));
    }

    @Test
    void powerOnUnitAttentionIsReportedOncePerNexusAndLun() {
        ScsiTarget target = new ScsiTarget(Map.of(0L, unit("a"), 1L, unit("b")));
        try (ScsiHarness h = new ScsiHarness(target.logicalUnit(0))) {
            target.nexusAdded(NEXUS_A);
            for (long lun : new long[] {0, 1}) {
                ScsiCommand inq = new ScsiCommand(NEXUS_A, lun, inquiry(false, 0, 36), 36, true, false, 1, null, h.allocator);
                target.execute(inq);
                assertEquals(ScsiCommand.GOOD, inq.status(), "INQUIRY neither reports nor clears a unit attention");
                inq.dataIn().release();
                ScsiCommand tur = new ScsiCommand(NEXUS_A, lun, TUR, 0, false, false, 1, null, h.allocator);
                target.execute(tur);
                assertEquals(ScsiCommand.CHECK_CONDITION, tur.status());
                assertEquals(SenseException.UNIT_ATTENTION, tur.sense()[2] & 0x0f);
                assertEquals(0x29, tur.sense()[12]);
                ScsiCommand again = new ScsiCommand(NEXUS_A, lun, TUR, 0, false, false, 1, null, h.allocator);
                target.execute(again);
                assertEquals(ScsiCommand.GOOD, again.status());
            }
        }
    }

    @Test
    void requestSenseReturnsAndClearsThePendingUnitAttention() {
        try (ScsiHarness h = new ScsiHarness(unit("a"))) {
            h.target.nexusAdded(NEXUS_A);
            byte[] sense = h.run(cdb(0x03, 0, 0, 0, 252, 0)).assertGood().data();
            assertEquals(18, sense.length);
            assertEquals(0x70, sense[0] & 0x7f);
            assertEquals(SenseException.UNIT_ATTENTION, sense[2] & 0x0f);
            assertEquals(0x29, sense[12]);
            assertEquals(0x00, sense[13]);
            byte[] none = h.run(cdb(0x03, 0, 0, 0, 252, 0)).assertGood().data();
            assertEquals(SenseException.NO_SENSE, none[2] & 0x0f);
            assertEquals(0, none[12]);
            h.run(TUR).assertGood();
            h.run(cdb(0x03, 0x01, 0, 0, 252, 0)).assertInvalidFieldInCdb(1); // DESC
        }
    }

    @Test
    void resetsQueueUnitAttentionsForEveryNexusAndRemovedNexusesAreForgotten() {
        try (ScsiHarness h = new ScsiHarness(unit("a"))) {
            h.run(NEXUS_A, TUR, null).assertGood();
            h.run(NEXUS_B, TUR, null).assertGood();
            h.target.lunReset(NEXUS_A, 0);
            h.run(NEXUS_A, TUR, null).assertCheck(SenseException.UNIT_ATTENTION, 0x29, 0x03);
            h.run(NEXUS_B, TUR, null).assertCheck(SenseException.UNIT_ATTENTION, 0x29, 0x03);
            h.run(NEXUS_A, TUR, null).assertGood();
            h.target.targetReset(NEXUS_A);
            h.run(NEXUS_A, TUR, null).assertCheck(SenseException.UNIT_ATTENTION, 0x29, 0x00);
            h.run(NEXUS_B, TUR, null).assertCheck(SenseException.UNIT_ATTENTION, 0x29, 0x00);
            h.target.lunReset(NEXUS_A, 9); // no such LUN: nothing happens
            h.run(NEXUS_A, TUR, null).assertGood();
            h.target.nexusAdded(NEXUS_B);
            h.target.nexusRemoved(NEXUS_B);
            h.run(NEXUS_B, TUR, null).assertGood();
        }
    }

    @Test
    void unknownOpcodesAndTruncatedCdbs() {
        try (ScsiHarness h = new ScsiHarness(unit("a"))) {
            ScsiHarness.Result r = h.run(cdb(0xC5, 0, 0, 0, 0, 0)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x20, 0x00);
            assertEquals(0xC0, r.sense()[15] & 0xC0, "field pointer to the opcode");
            assertEquals(0, Cdb.u16(r.sense(), 16));
            h.run(new byte[] {0x28, 0, 0}).assertCheck(SenseException.ILLEGAL_REQUEST, 0x20, 0x00);
            h.run(cdb(0x9E, 0x1F, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0)).assertInvalidFieldInCdb(1);
        }
    }

    @Test
    void startStopAndPreventAllowAreAcceptedOnANonRemovableUnit() {
        try (ScsiHarness h = new ScsiHarness(unit("a"))) {
            long flushes = h.unit.device().stats().flushOps();
            h.run(cdb(0x1B, 0, 0, 0, 0x01, 0)).assertGood();
            assertEquals(flushes, h.unit.device().stats().flushOps(), "START does not flush");
            h.run(cdb(0x1B, 0, 0, 0, 0x04, 0)).assertGood();
            assertEquals(flushes, h.unit.device().stats().flushOps(), "STOP with NO_FLUSH does not flush");
            h.run(cdb(0x1B, 0, 0, 0, 0x00, 0)).assertGood();
            assertEquals(flushes + 1, h.unit.device().stats().flushOps(), "STOP flushes the cache");
            h.run(cdb(0x1E, 0, 0, 0, 0x00, 0)).assertGood();
            h.run(cdb(0x1E, 0, 0, 0, 0x01, 0)).assertGood();
            h.run(read10(0, 1)).assertGood();
        }
    }

    @Test
    void reportSupportedOperationCodesAllAndOne() {
        try (ScsiHarness h = new ScsiHarness(unit("a"))) {
            byte[] all = h.run(rsoc(false, 0, 0, 0, 65535)).assertGood().data();
            int length = (int) Cdb.u32(all, 0);
            assertEquals(all.length - 4, length);
            assertEquals(0, length % 8, "8-byte descriptors without timeouts");
            boolean sawRead16 = false;
            boolean sawReadCapacity16 = false;
            int prinServiceActions = 0;
            for (int p = 4; p < all.length; p += 8) {
                int opcode = all[p] & 0xff;
                boolean servactv = (all[p + 5] & 0x01) != 0;
                assertEquals(0, all[p + 5] & 0x02, "CTDP clear without RCTD");
                if (!servactv) {
                    assertEquals(0, Cdb.u16(all, p + 2), "SERVICE ACTION zero when SERVACTV is clear");
                }
                if (opcode == 0x88) {
                    sawRead16 = true;
                    assertEquals(16, Cdb.u16(all, p + 6));
                }
                if (opcode == 0x9E && Cdb.u16(all, p + 2) == 0x10) {
                    sawReadCapacity16 = servactv;
                }
                if (opcode == 0x5E) {
                    prinServiceActions++;
                }
                int options = servactv ? 2 : 1;
                byte[] one = h.run(rsoc(false, options, opcode, Cdb.u16(all, p + 2), 512)).assertGood().data();
                assertEquals(3, one[1] & 0x07, "SUPPORT 011b for 0x" + Integer.toHexString(opcode));
                int cdbSize = Cdb.u16(one, 2);
                assertEquals(Cdb.u16(all, p + 6), cdbSize);
                assertEquals(opcode, one[4] & 0xff, "usage data starts with the opcode");
                h.run(rsoc(false, servactv ? 1 : 2, opcode, Cdb.u16(all, p + 2), 512)).assertInvalidFieldInCdb(3);
            }
            assertTrue(sawRead16 && sawReadCapacity16);
            assertEquals(4, prinServiceActions, "PERSISTENT RESERVE IN service actions 0-3");

            byte[] withTimeouts = h.run(rsoc(true, 0, 0, 0, 65535)).assertGood().data();
            assertEquals(0, (withTimeouts.length - 4) % 20, "20-byte descriptors with timeouts");
            for (int p = 4; p < withTimeouts.length; p += 20) {
                assertEquals(0x02, withTimeouts[p + 5] & 0x02, "CTDP");
                assertEquals(0x0A, Cdb.u16(withTimeouts, p + 8), "timeouts descriptor length");
            }
            byte[] unsupported = h.run(rsoc(false, 1, 0xC5, 0, 512)).assertGood().data();
            assertEquals(1, unsupported[1] & 0x07, "SUPPORT 001b: not supported");
            byte[] read10Usage = h.run(rsoc(true, 1, 0x28, 0, 512)).assertGood().data();
            assertEquals(0x80, read10Usage[1] & 0x80, "CTDP");
            assertEquals(4 + 10 + 12, read10Usage.length);
            h.run(rsoc(false, 5, 0, 0, 512)).assertInvalidFieldInCdb(2);
        }
    }

    /** The report and the dispatcher agree: every command reported runs (its CDB of zeros may be refused, not its opcode). */
    @Test
    void everyReportedCommandIsExecuted() {
        try (ScsiHarness h = new ScsiHarness(unit("a"))) {
            byte[] all = h.run(rsoc(false, 0, 0, 0, 65535)).assertGood().data();
            int commands = 0;
            for (int p = 4; p < all.length; p += 8) {
                byte[] c = new byte[Cdb.u16(all, p + 6)];
                c[0] = all[p];
                if ((all[p + 5] & 0x01) != 0) {
                    c[1] = (byte) Cdb.u16(all, p + 2); // service action in byte 1 (SPC-4 4.2.5.2)
                }
                ScsiHarness.Result r = h.run(NEXUS_A, c, null);
                String name = "opcode 0x" + Integer.toHexString(c[0] & 0xff) + "/" + (c[1] & 0x1f);
                assertFalse(r.status() == ScsiCommand.CHECK_CONDITION && r.asc() == 0x20, name + " reported but refused");
                assertFalse(r.status() == ScsiCommand.CHECK_CONDITION && r.asc() == 0x24 && Cdb.u16(r.sense(), 16) == 1
                        && (c[1] & 0x1f) != 0, name + ": service action reported but refused");
                commands++;
            }
            assertTrue(commands >= 50, "all commands listed: " + commands);
        }
    }

    @Test
    void unmapIsNotReportedWhenTheDeviceCannotDiscard() {
        LogicalUnit noDiscard = new LogicalUnit(new ShapedBlockDevice(new MemoryBlockDevice("m", MIB, 512),
                Geometry.simple(512), false), LogicalUnitIdentity.of(UUID.randomUUID()), false);
        try (ScsiHarness h = new ScsiHarness(noDiscard)) {
            byte[] one = h.run(rsoc(false, 1, 0x42, 0, 512)).assertGood().data();
            assertEquals(1, one[1] & 0x07);
        }
    }
}
