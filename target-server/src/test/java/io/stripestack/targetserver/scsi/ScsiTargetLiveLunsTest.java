package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.MemoryBlockDevice;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** LUNs added to and removed from a target at run time: REPORT LUNS, unit attentions, read-only switching. */
class ScsiTargetLiveLunsTest {
    private static final byte[] TUR = cdb(0, 0, 0, 0, 0, 0);

    private static LogicalUnit unit(String name) {
        return new LogicalUnit(new MemoryBlockDevice(name, 1 << 20, 512),
                LogicalUnitIdentity.of(LogicalUnitIdentity.stableIdFromName(name)), false);
    }

    @Test
    void anAddedLunIsReportedAndEveryLoggedInNexusHearsOfIt() {
        ScsiTarget live = new ScsiTarget(Map.of(0L, unit("a")));
        try (ScsiHarness h = new ScsiHarness(live.logicalUnit(0))) {
            live.nexusAdded(NEXUS_A);
            ScsiCommand before = new ScsiCommand(NEXUS_A, 0, TUR, 0, false, false, 1, null, h.allocator);
            live.execute(before);
            assertEquals(ScsiCommand.CHECK_CONDITION, before.status(), "power on first");
            live.execute(new ScsiCommand(NEXUS_A, 0, TUR, 0, false, false, 1, null, h.allocator));

            live.addUnit(5, unit("b"));
            assertEquals(List.of(0L, 5L), live.luns());
            for (long lun : new long[] {0, 5}) {
                ScsiCommand tur = new ScsiCommand(NEXUS_A, lun, TUR, 0, false, false, 1, null, h.allocator);
                live.execute(tur);
                assertEquals(ScsiCommand.CHECK_CONDITION, tur.status(), "LUN " + lun);
                assertEquals(SenseException.UNIT_ATTENTION, tur.sense()[2] & 0x0f);
                assertEquals(0x3F, tur.sense()[12] & 0xff, "REPORTED LUNS DATA HAS CHANGED");
                assertEquals(0x0E, tur.sense()[13] & 0xff);
                ScsiCommand again = new ScsiCommand(NEXUS_A, lun, TUR, 0, false, false, 1, null, h.allocator);
                live.execute(again);
                assertEquals(ScsiCommand.GOOD, again.status(), "reported once");
            }
            assertThrows(IllegalArgumentException.class, () -> live.addUnit(5, unit("c")), "a LUN number is taken once");
            assertEquals(List.of(0L, 5L), live.luns(), "the refused add changed nothing");
        }
    }

    @Test
    void aNexusThatLoggedOutHearsNothingAndARemovedLunIsGone() {
        ScsiTarget target = new ScsiTarget(Map.of(0L, unit("a"), 1L, unit("b")));
        try (ScsiHarness h = new ScsiHarness(target.logicalUnit(0))) {
            target.nexusAdded(NEXUS_A);
            target.nexusAdded(NEXUS_B);
            target.nexusRemoved(NEXUS_B);
            assertEquals(java.util.Set.of(NEXUS_A), target.nexuses());
            ScsiCommand first = new ScsiCommand(NEXUS_A, 0, TUR, 0, false, false, 1, null, h.allocator);
            target.execute(first); // power on
            assertNotNull(target.removeUnit(1));
            assertNull(target.removeUnit(1));
            assertEquals(List.of(0L), target.luns());
            ScsiCommand tur = new ScsiCommand(NEXUS_A, 0, TUR, 0, false, false, 1, null, h.allocator);
            target.execute(tur);
            assertEquals(0x3F, tur.sense()[12] & 0xff);
            assertEquals(0x0E, tur.sense()[13] & 0xff);
            ScsiCommand gone = new ScsiCommand(NEXUS_A, 1, TUR, 0, false, false, 1, null, h.allocator);
            target.execute(gone);
            assertEquals(ScsiCommand.CHECK_CONDITION, gone.status());
            assertEquals(0x25, gone.sense()[12] & 0xff, "LOGICAL UNIT NOT SUPPORTED");
            ScsiCommand other = new ScsiCommand(NEXUS_B, 0, TUR, 0, false, false, 1, null, h.allocator);
            target.execute(other);
            assertEquals(ScsiCommand.GOOD, other.status(), "a nexus no longer logged in is not told");
        }
    }

    @Test
    void readOnlyIsSwitchedAtRunTimeAndAnnounced() {
        try (ScsiHarness h = new ScsiHarness(unit("a"))) {
            h.run(NEXUS_A, TUR, null).assertGood();
            h.run(write10(0, 1, false), pattern(512, 1)).assertGood();
            LogicalUnit unit = h.target.logicalUnit(0);
            unit.setReadOnly(true);
            h.run(NEXUS_A, TUR, null).assertCheck(SenseException.UNIT_ATTENTION, 0x2A, 0x01);
            h.run(write10(0, 1, false), pattern(512, 2)).assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
            assertArrayEquals(pattern(512, 1), h.run(read10(0, 1)).assertGood().data());
            unit.setReadOnly(false);
            h.run(NEXUS_A, TUR, null).assertCheck(SenseException.UNIT_ATTENTION, 0x2A, 0x01);
            h.run(write10(0, 1, false), pattern(512, 3)).assertGood();
        }
    }
}
