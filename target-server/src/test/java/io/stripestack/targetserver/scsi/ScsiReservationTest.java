package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.MemoryBlockDevice;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** RESERVE/RELEASE(6/10) and PERSISTENT RESERVE IN/OUT between two I_T nexuses (SPC-4 5.7, 6.15, 6.16). */
class ScsiReservationTest {
    private static final int MIB = 1 << 20;
    private static final long KEY_A = 0x1111222233334444L;
    private static final long KEY_B = 0x5555666677778888L;

    private static ScsiHarness harness() {
        return new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false);
    }

    private static byte[] prout(int serviceAction, int type) {
        return cdb(0x5F, serviceAction, type, 0, 0, 0, 0, 0, 24, 0);
    }

    private static byte[] proutParams(long key, long serviceKey) {
        byte[] p = new byte[24];
        Cdb.put64(p, 0, key);
        Cdb.put64(p, 8, serviceKey);
        return p;
    }

    private static byte[] prin(int serviceAction) {
        return cdb(0x5E, serviceAction, 0, 0, 0, 0, 0, 0x10, 0x00, 0);
    }

    private static ScsiHarness.Result register(ScsiHarness h, String nexus, long key) {
        return h.run(nexus, prout(0x06, 0), proutParams(0, key)); // REGISTER AND IGNORE EXISTING KEY
    }

    private static void assertConflict(ScsiHarness.Result r) {
        assertEquals(ScsiCommand.RESERVATION_CONFLICT, r.status());
        assertNull(r.sense(), "RESERVATION CONFLICT carries no sense data");
    }

    private static boolean readWorks(ScsiHarness h, String nexus) {
        return h.run(nexus, read10(0, 1), null).status() == ScsiCommand.GOOD;
    }

    private static boolean writeWorks(ScsiHarness h, String nexus) {
        return h.run(nexus, write10(0, 1, false), new byte[512]).status() == ScsiCommand.GOOD;
    }

    @Test
    void reserve6KeepsOtherNexusesOutUntilReleased() {
        try (ScsiHarness h = harness()) {
            h.run(NEXUS_A, cdb(0x16, 0, 0, 0, 0, 0), null).assertGood();
            assertTrue(readWorks(h, NEXUS_A) && writeWorks(h, NEXUS_A));
            assertConflict(h.run(NEXUS_B, read10(0, 1), null));
            assertConflict(h.run(NEXUS_B, cdb(0, 0, 0, 0, 0, 0), null));
            assertConflict(h.run(NEXUS_B, cdb(0x16, 0, 0, 0, 0, 0), null));
            assertConflict(h.run(NEXUS_B, prout(0x06, 0), proutParams(0, KEY_B)));
            h.run(NEXUS_B, inquiry(false, 0, 36), null).assertGood();
            h.run(NEXUS_B, cdb(0x17, 0, 0, 0, 0, 0), null).assertGood(); // RELEASE by a non-holder: no effect
            assertConflict(h.run(NEXUS_B, read10(0, 1), null));
            h.run(NEXUS_A, cdb(0x57, 0, 0, 0, 0, 0, 0, 0, 0, 0), null).assertGood(); // RELEASE(10)
            assertTrue(readWorks(h, NEXUS_B));
        }
    }

    @Test
    void reserveEndsWithTheNexusOrAReset() {
        try (ScsiHarness h = harness()) {
            h.run(NEXUS_A, cdb(0x56, 0, 0, 0, 0, 0, 0, 0, 0, 0), null).assertGood(); // RESERVE(10)
            assertConflict(h.run(NEXUS_B, read10(0, 1), null));
            h.target.nexusRemoved(NEXUS_A);
            assertTrue(readWorks(h, NEXUS_B));
            h.target.nexusAdded(NEXUS_A); // A logs in again
            h.run(NEXUS_A, cdb(0, 0, 0, 0, 0, 0), null).assertCheck(SenseException.UNIT_ATTENTION, 0x29, 0x00);
            h.run(NEXUS_B, cdb(0x16, 0, 0, 0, 0, 0), null).assertGood();
            h.target.lunReset(NEXUS_A, 0);
            h.run(NEXUS_A, cdb(0, 0, 0, 0, 0, 0), null).assertCheck(SenseException.UNIT_ATTENTION, 0x29, 0x03);
            assertTrue(readWorks(h, NEXUS_A), "LOGICAL UNIT RESET released the RESERVE");
            h.run(NEXUS_B, cdb(0, 0, 0, 0, 0, 0), null).assertCheck(SenseException.UNIT_ATTENTION, 0x29, 0x03);
        }
    }

    @Test
    void registerReadKeysAndGeneration() {
        try (ScsiHarness h = harness()) {
            byte[] empty = h.run(NEXUS_A, prin(0), null).assertGood().data();
            assertEquals(0, Cdb.u32(empty, 4), "no keys");
            long generation = Cdb.u32(empty, 0);

            h.run(NEXUS_A, prout(0x00, 0), proutParams(0, KEY_A)).assertGood();     // REGISTER
            register(h, NEXUS_B, KEY_B).assertGood();
            byte[] keys = h.run(NEXUS_A, prin(0), null).assertGood().data();
            assertEquals(generation + 2, Cdb.u32(keys, 0), "PRgeneration counts registrations");
            assertEquals(16, Cdb.u32(keys, 4));
            assertEquals(KEY_A, Cdb.u64(keys, 8));
            assertEquals(KEY_B, Cdb.u64(keys, 16));

            assertConflict(h.run(NEXUS_A, prout(0x00, 0), proutParams(KEY_B, 7)));  // wrong current key
            assertConflict(h.run(NEXUS_A, prout(0x01, 1), proutParams(KEY_B, 0)));  // RESERVE with wrong key
            h.run(NEXUS_A, prout(0x00, 0), proutParams(KEY_A, 0)).assertGood();     // unregister
            keys = h.run(NEXUS_B, prin(0), null).assertGood().data();
            assertEquals(8, Cdb.u32(keys, 4));
            assertEquals(KEY_B, Cdb.u64(keys, 8));
            assertConflict(h.run(NEXUS_A, prout(0x01, 1), proutParams(KEY_A, 0)));  // not registered
        }
    }

    @Test
    void reportCapabilitiesListsTheSupportedTypes() {
        try (ScsiHarness h = harness()) {
            byte[] d = h.run(NEXUS_A, prin(2), null).assertGood().data();
            assertEquals(8, Cdb.u16(d, 0));
            assertEquals(0x80, d[3] & 0x80, "TMV");
            assertEquals(0, d[3] & 0x01, "PTPL_A: nothing persists through power loss");
            int mask = Cdb.u16(d, 4);
            assertEquals(0xEA01, mask, "WR_EX_AR, EX_AC_RO, WR_EX_RO, EX_AC, WR_EX, EX_AC_AR");
            for (int sa = 4; sa < 0x20; sa++) {
                h.run(NEXUS_A, prin(sa), null).assertInvalidFieldInCdb(1);
            }
        }
    }

    @Test
    void writeExclusiveLetsOthersReadButNotWrite() {
        try (ScsiHarness h = harness()) {
            register(h, NEXUS_A, KEY_A).assertGood();
            register(h, NEXUS_B, KEY_B).assertGood();
            h.run(NEXUS_A, prout(0x01, Reservations.WRITE_EXCLUSIVE), proutParams(KEY_A, 0)).assertGood();
            byte[] res = h.run(NEXUS_B, prin(1), null).assertGood().data();
            assertEquals(16, Cdb.u32(res, 4));
            assertEquals(KEY_A, Cdb.u64(res, 8));
            assertEquals(Reservations.WRITE_EXCLUSIVE, res[21] & 0x0f);
            assertTrue(readWorks(h, NEXUS_A) && writeWorks(h, NEXUS_A));
            assertTrue(readWorks(h, NEXUS_B), "registered or not, others may read under WRITE EXCLUSIVE");
            assertFalse(writeWorks(h, NEXUS_B));
            assertConflict(h.run(NEXUS_B, prout(0x01, Reservations.WRITE_EXCLUSIVE), proutParams(KEY_B, 0)));
            h.run(NEXUS_A, prout(0x01, Reservations.WRITE_EXCLUSIVE), proutParams(KEY_A, 0)).assertGood();
            h.run(NEXUS_A, prout(0x02, Reservations.EXCLUSIVE_ACCESS), proutParams(KEY_A, 0))
                    .assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x04);
            h.run(NEXUS_A, prout(0x02, Reservations.WRITE_EXCLUSIVE), proutParams(KEY_A, 0)).assertGood();
            assertTrue(writeWorks(h, NEXUS_B));
            assertEquals(0, Cdb.u32(h.run(NEXUS_B, prin(1), null).data(), 4), "no reservation");
        }
    }

    @Test
    void accessMatrixForEveryType() {
        // {type, unregistered may read, unregistered may write, registered may read, registered may write}
        int[][] cases = {
            {Reservations.WRITE_EXCLUSIVE, 1, 0, 1, 0},
            {Reservations.EXCLUSIVE_ACCESS, 0, 0, 0, 0},
            {Reservations.WRITE_EXCLUSIVE_REGISTRANTS_ONLY, 1, 0, 1, 1},
            {Reservations.EXCLUSIVE_ACCESS_REGISTRANTS_ONLY, 0, 0, 1, 1},
            {Reservations.WRITE_EXCLUSIVE_ALL_REGISTRANTS, 1, 0, 1, 1},
            {Reservations.EXCLUSIVE_ACCESS_ALL_REGISTRANTS, 0, 0, 1, 1},
        };
        for (int[] c : cases) {
            try (ScsiHarness h = harness()) {
                int type = c[0];
                register(h, NEXUS_A, KEY_A).assertGood();
                h.run(NEXUS_A, prout(0x01, type), proutParams(KEY_A, 0)).assertGood();
                assertEquals(c[1] == 1, readWorks(h, NEXUS_B), "type " + type + " unregistered read");
                assertEquals(c[2] == 1, writeWorks(h, NEXUS_B), "type " + type + " unregistered write");
                h.run(NEXUS_B, inquiry(false, 0, 36), null).assertGood();
                h.run(NEXUS_B, cdb(0, 0, 0, 0, 0, 0), null).assertGood();
                register(h, NEXUS_B, KEY_B).assertGood();
                assertEquals(c[3] == 1, readWorks(h, NEXUS_B), "type " + type + " registered read");
                assertEquals(c[4] == 1, writeWorks(h, NEXUS_B), "type " + type + " registered write");
                assertTrue(readWorks(h, NEXUS_A) && writeWorks(h, NEXUS_A), "holder keeps access, type " + type);
                byte[] res = h.run(NEXUS_A, prin(1), null).data();
                boolean allRegistrants = type == Reservations.WRITE_EXCLUSIVE_ALL_REGISTRANTS
                        || type == Reservations.EXCLUSIVE_ACCESS_ALL_REGISTRANTS;
                assertEquals(allRegistrants ? 0 : KEY_A, Cdb.u64(res, 8), "reservation key, type " + type);
            }
        }
    }

    @Test
    void preemptRemovesTheHolderAndTakesTheReservation() {
        try (ScsiHarness h = harness()) {
            register(h, NEXUS_A, KEY_A).assertGood();
            register(h, NEXUS_B, KEY_B).assertGood();
            h.run(NEXUS_A, prout(0x01, Reservations.EXCLUSIVE_ACCESS), proutParams(KEY_A, 0)).assertGood();
            long generation = Cdb.u32(h.run(NEXUS_B, prin(0), null).data(), 0);

            h.run(NEXUS_B, prout(0x04, Reservations.WRITE_EXCLUSIVE), proutParams(KEY_B, KEY_A)).assertGood();
            byte[] keys = h.run(NEXUS_B, prin(0), null).data();
            assertEquals(generation + 1, Cdb.u32(keys, 0));
            assertEquals(8, Cdb.u32(keys, 4));
            assertEquals(KEY_B, Cdb.u64(keys, 8));
            byte[] res = h.run(NEXUS_B, prin(1), null).data();
            assertEquals(KEY_B, Cdb.u64(res, 8));
            assertEquals(Reservations.WRITE_EXCLUSIVE, res[21] & 0x0f);

            h.run(NEXUS_A, cdb(0, 0, 0, 0, 0, 0), null).assertCheck(SenseException.UNIT_ATTENTION, 0x2A, 0x05);
            assertFalse(writeWorks(h, NEXUS_A));
            assertConflict(h.run(NEXUS_B, prout(0x04, Reservations.WRITE_EXCLUSIVE), proutParams(KEY_B, 0x999)));
            h.run(NEXUS_B, prout(0x04, Reservations.WRITE_EXCLUSIVE), proutParams(KEY_B, 0))
                    .assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x00);
        }
    }

    @Test
    void preemptWithoutReservationRemovesRegistrations() {
        try (ScsiHarness h = harness()) {
            register(h, NEXUS_A, KEY_A).assertGood();
            register(h, NEXUS_B, KEY_B).assertGood();
            h.run(NEXUS_B, prout(0x04, Reservations.EXCLUSIVE_ACCESS), proutParams(KEY_B, KEY_A)).assertGood();
            byte[] keys = h.run(NEXUS_B, prin(0), null).data();
            assertEquals(8, Cdb.u32(keys, 4));
            assertEquals(KEY_B, Cdb.u64(keys, 8));
            assertEquals(0, Cdb.u32(h.run(NEXUS_B, prin(1), null).data(), 4), "no reservation created");
        }
    }

    @Test
    void clearRemovesEverythingAndTellsOtherRegistrants() {
        try (ScsiHarness h = harness()) {
            register(h, NEXUS_A, KEY_A).assertGood();
            register(h, NEXUS_B, KEY_B).assertGood();
            h.run(NEXUS_A, prout(0x01, Reservations.EXCLUSIVE_ACCESS), proutParams(KEY_A, 0)).assertGood();
            assertConflict(h.run(NEXUS_B, prout(0x03, 0), proutParams(KEY_A, 0))); // B's key is not KEY_A
            h.run(NEXUS_B, prout(0x03, 0), proutParams(KEY_B, 0)).assertGood();
            assertEquals(0, Cdb.u32(h.run(NEXUS_B, prin(0), null).data(), 4));
            assertTrue(writeWorks(h, NEXUS_B));
            h.run(NEXUS_A, cdb(0, 0, 0, 0, 0, 0), null).assertCheck(SenseException.UNIT_ATTENTION, 0x2A, 0x03);
            assertTrue(writeWorks(h, NEXUS_A));
        }
    }

    @Test
    void registrantsOnlyHolderUnregisteringReleasesAndNotifies() {
        try (ScsiHarness h = harness()) {
            register(h, NEXUS_A, KEY_A).assertGood();
            register(h, NEXUS_B, KEY_B).assertGood();
            h.run(NEXUS_A, prout(0x01, Reservations.WRITE_EXCLUSIVE_REGISTRANTS_ONLY), proutParams(KEY_A, 0)).assertGood();
            register(h, NEXUS_A, 0).assertGood();
            h.run(NEXUS_B, cdb(0, 0, 0, 0, 0, 0), null).assertCheck(SenseException.UNIT_ATTENTION, 0x2A, 0x04);
            assertEquals(0, Cdb.u32(h.run(NEXUS_B, prin(1), null).data(), 4), "reservation released");
        }
    }

    @Test
    void persistentReservationsSurviveNexusLossButRefuseReserve6() {
        try (ScsiHarness h = harness()) {
            register(h, NEXUS_A, KEY_A).assertGood();
            h.run(NEXUS_A, prout(0x01, Reservations.EXCLUSIVE_ACCESS), proutParams(KEY_A, 0)).assertGood();
            h.target.nexusRemoved(NEXUS_A);
            assertFalse(readWorks(h, NEXUS_B), "the persistent reservation outlives the session");
            assertConflict(h.run(NEXUS_A, cdb(0x16, 0, 0, 0, 0, 0), null));
            assertTrue(readWorks(h, NEXUS_A));
        }
    }

    @Test
    void proutParameterChecks() {
        try (ScsiHarness h = harness()) {
            h.run(NEXUS_A, cdb(0x5F, 0x06, 0, 0, 0, 0, 0, 0, 20, 0), new byte[20])
                    .assertCheck(SenseException.ILLEGAL_REQUEST, 0x1A, 0x00);
            byte[] aptpl = proutParams(0, KEY_A);
            aptpl[20] = 0x01;
            h.run(NEXUS_A, prout(0x06, 0), aptpl).assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x00);
            h.run(NEXUS_A, prout(0x07, 0), proutParams(0, KEY_A)).assertInvalidFieldInCdb(1); // REGISTER AND MOVE
            register(h, NEXUS_A, KEY_A).assertGood();
            h.run(NEXUS_A, prout(0x01, 0x02), proutParams(KEY_A, 0)).assertInvalidFieldInCdb(2); // type 2
            h.run(NEXUS_A, prout(0x01, 0x11), proutParams(KEY_A, 0)).assertInvalidFieldInCdb(2); // scope 1
        }
    }

    @Test
    void readFullStatusNamesTheHolderWithAnIscsiTransportId() {
        try (ScsiHarness h = harness()) {
            register(h, NEXUS_A, KEY_A).assertGood();
            h.run(NEXUS_A, prout(0x01, Reservations.WRITE_EXCLUSIVE), proutParams(KEY_A, 0)).assertGood();
            byte[] d = h.run(NEXUS_A, prin(3), null).assertGood().data();
            assertEquals(d.length - 8, Cdb.u32(d, 4));
            assertEquals(KEY_A, Cdb.u64(d, 8));
            assertEquals(0x01, d[8 + 12] & 0x01, "R_HOLDER");
            assertEquals(Reservations.WRITE_EXCLUSIVE, d[8 + 13] & 0x0f);
            int idLength = (int) Cdb.u32(d, 8 + 20);
            assertEquals(0x05, d[8 + 24] & 0x0f, "iSCSI TransportID");
            assertEquals(0, idLength % 4);
            String name = new String(d, 8 + 28, "iqn.2026-01.test:a".length(), StandardCharsets.US_ASCII);
            assertEquals("iqn.2026-01.test:a", name);
        }
    }
}
