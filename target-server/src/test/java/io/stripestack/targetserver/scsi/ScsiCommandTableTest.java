package io.stripestack.targetserver.scsi;

import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Walks {@link CommandTable} from the outside: what REPORT SUPPORTED OPERATION CODES advertises is the
 * table, every advertised command is dispatched to a handler (not answered INVALID COMMAND OPERATION CODE,
 * nor refused as an unknown service action), and every opcode or service action the unit answers in any
 * other way is advertised.
 */
class ScsiCommandTableTest {
    private static final int MIB = 1 << 20;

    /** An advertised command as the ALL_COMMANDS report lists it. */
    private record Advertised(int opcode, int serviceAction, int cdbLength) {
    }

    @Test
    void writableUnitThatOffersUnmap() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            List<Advertised> advertised = walk(h, Set.of());
            assertTrue(advertised.stream().anyMatch(a -> a.opcode() == Opcodes.UNMAP), "UNMAP advertised");
        }
    }

    @Test
    void unitOverADeviceWithoutDiscard() {
        try (ScsiHarness h = new ScsiHarness(withoutDiscard(), false)) {
            List<Advertised> advertised = walk(h, Set.of());
            assertFalse(advertised.stream().anyMatch(a -> a.opcode() == Opcodes.UNMAP), "UNMAP not advertised");
        }
    }

    @Test
    void readOnlyUnitOverADeviceWithoutDiscard() {
        try (ScsiHarness h = new ScsiHarness(withoutDiscard(), true)) {
            walk(h, Set.of());
        }
    }

    /**
     * The one command a unit answers without advertising it: a read-only unit over a device that could
     * discard does not offer UNMAP (no Logical Block Provisioning page, LBPME=0), yet refuses UNMAP with
     * WRITE PROTECTED rather than INVALID COMMAND OPERATION CODE, as it refuses every other write.
     */
    @Test
    void readOnlyUnitOverADiscardingDeviceRefusesUnmapAsWriteProtected() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), true)) {
            walk(h, Set.of(Opcodes.UNMAP));
            h.run(ScsiHarness.cdb(Opcodes.UNMAP, 0, 0, 0, 0, 0, 0, 0, 24, 0), new byte[24])
                    .assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
        }
    }

    private static BlockDevice withoutDiscard() {
        return new ShapedBlockDevice(new MemoryBlockDevice("m0", MIB, 512), Geometry.simple(512), false);
    }

    /**
     * Checks the unit behind {@code h} both ways; {@code refusedOtherwise} are opcodes that are neither
     * advertised nor answered INVALID COMMAND OPERATION CODE (the caller checks what they answer).
     */
    private static List<Advertised> walk(ScsiHarness h, Set<Integer> refusedOtherwise) {
        List<Advertised> advertised = reportAll(h);
        assertEquals(tableOffers(h.unit), advertised, "the report lists the table's commands, in its order");

        Set<Integer> advertisedOpcodes = new HashSet<>();
        Set<Integer> opcodesWithServiceActions = new HashSet<>();
        Set<Long> advertisedServiceActions = new HashSet<>();
        for (Advertised a : advertised) {
            advertisedOpcodes.add(a.opcode());
            if (a.serviceAction() >= 0) {
                opcodesWithServiceActions.add(a.opcode());
                advertisedServiceActions.add((long) a.opcode() << 8 | a.serviceAction());
            }
            ScsiHarness.Result r = h.run(cdb(a.opcode(), a.serviceAction(), a.cdbLength()));
            String name = name(a.opcode(), a.serviceAction());
            assertFalse(isInvalidOpcode(r), name + " is advertised but answered INVALID COMMAND OPERATION CODE");
            assertFalse(isUnknownServiceAction(r), name + " is advertised but its service action was refused");
        }

        for (int opcode = 0; opcode < 256; opcode++) {
            if (!advertisedOpcodes.contains(opcode)) {
                if (!refusedOtherwise.contains(opcode)) {
                    ScsiHarness.Result r = h.run(cdb(opcode, -1, groupCdbLength(opcode)));
                    assertTrue(isInvalidOpcode(r), name(opcode, -1) + " is not advertised but was answered " + r.status()
                            + " " + ScsiHarness.hex(r.sense()));
                }
            } else if (opcodesWithServiceActions.contains(opcode)) {
                for (int sa = 0; sa < 32; sa++) {
                    if (!advertisedServiceActions.contains((long) opcode << 8 | sa)) {
                        ScsiHarness.Result r = h.run(cdb(opcode, sa, groupCdbLength(opcode)));
                        assertTrue(isUnknownServiceAction(r), name(opcode, sa)
                                + " is not advertised but was answered " + r.status() + " " + ScsiHarness.hex(r.sense()));
                    }
                }
            }
        }
        return advertised;
    }

    private static List<Advertised> tableOffers(LogicalUnit unit) {
        List<Advertised> offered = new ArrayList<>();
        for (CommandTable.Command c : CommandTable.all()) {
            if (c.offeredBy(unit)) {
                offered.add(new Advertised(c.opcode(), c.serviceAction(), c.cdbLength()));
            }
        }
        return offered;
    }

    /** REPORT SUPPORTED OPERATION CODES, REPORTING OPTIONS 000b (all commands), without timeouts. */
    private static List<Advertised> reportAll(ScsiHarness h) {
        byte[] rsoc = new byte[12];
        rsoc[0] = (byte) Opcodes.MAINTENANCE_IN;
        rsoc[1] = Opcodes.SA_REPORT_SUPPORTED_OPERATION_CODES;
        Cdb.put32(rsoc, 6, 65536);
        byte[] d = h.run(rsoc).assertGood().data();
        assertEquals(d.length - 4, Cdb.u32(d, 0), "COMMAND DATA LENGTH");
        List<Advertised> advertised = new ArrayList<>();
        for (int at = 4; at < d.length; at += 8) {
            boolean servactv = (d[at + 5] & 0x01) != 0;
            advertised.add(new Advertised(d[at] & 0xff, servactv ? Cdb.u16(d, at + 2) : CommandTable.NO_SERVICE_ACTION,
                    Cdb.u16(d, at + 6)));
        }
        return advertised;
    }

    /** A CDB of {@code length} zero bytes but the opcode and, if {@code serviceAction >= 0}, the service action. */
    private static byte[] cdb(int opcode, int serviceAction, int length) {
        byte[] c = new byte[length];
        c[0] = (byte) opcode;
        if (serviceAction >= 0) {
            c[1] = (byte) serviceAction;
        }
        return c;
    }

    /** The CDB length the opcode's group code implies (SPC-4 4.2.5.1); 6 where the group has none. */
    private static int groupCdbLength(int opcode) {
        return switch (opcode >>> 5) {
            case 1, 2 -> 10;
            case 4 -> 16;
            case 5 -> 12;
            default -> 6;
        };
    }

    private static boolean isInvalidOpcode(ScsiHarness.Result r) {
        return r.status() == ScsiCommand.CHECK_CONDITION && r.senseKey() == SenseException.ILLEGAL_REQUEST
                && r.asc() == 0x20 && r.ascq() == 0x00;
    }

    /** INVALID FIELD IN CDB pointing at the SERVICE ACTION field (byte 1, bit 4). */
    private static boolean isUnknownServiceAction(ScsiHarness.Result r) {
        return r.status() == ScsiCommand.CHECK_CONDITION && r.senseKey() == SenseException.ILLEGAL_REQUEST
                && r.asc() == 0x24 && (r.sense()[15] & 0xff) == 0xCC && Cdb.u16(r.sense(), 16) == 1;
    }

    private static String name(int opcode, int serviceAction) {
        return String.format(serviceAction < 0 ? "opcode 0x%02X" : "opcode 0x%02X service action 0x%02X", opcode,
                serviceAction);
    }
}
