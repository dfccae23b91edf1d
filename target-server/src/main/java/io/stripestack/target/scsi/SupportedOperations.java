package io.stripestack.target.scsi;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * REPORT SUPPORTED OPERATION CODES (SPC-4 6.35): every command the logical unit executes, with its CDB
 * length and CDB usage data (a mask of the CDB bits the device server looks at).
 *
 * <p>The table is immutable and shared by all logical units; UNMAP appears only for units that offer it.
 */
final class SupportedOperations {
    private SupportedOperations() {
    }

    private static final int NO_SERVICE_ACTION = -1;

    /** One supported command: opcode, service action (or {@link #NO_SERVICE_ACTION}) and usage data. */
    private record Command(int opcode, int serviceAction, byte[] usage) {
        boolean hasServiceAction() {
            return serviceAction != NO_SERVICE_ACTION;
        }
    }

    private static final List<Command> COMMANDS = new ArrayList<>();

    static {
        add(-1, 0x00, 0, 0, 0, 0, 0);                                      // TEST UNIT READY
        add(-1, 0x03, 0x01, 0, 0, 0xff, 0);                                // REQUEST SENSE
        add(-1, 0x08, 0x1f, 0xff, 0xff, 0xff, 0);                          // READ(6)
        add(-1, 0x0A, 0x1f, 0xff, 0xff, 0xff, 0);                          // WRITE(6)
        add(-1, 0x12, 0x01, 0xff, 0xff, 0xff, 0);                          // INQUIRY
        add(-1, 0x15, 0x11, 0, 0, 0xff, 0);                                // MODE SELECT(6)
        add(-1, 0x16, 0, 0, 0, 0, 0);                                      // RESERVE(6)
        add(-1, 0x17, 0, 0, 0, 0, 0);                                      // RELEASE(6)
        add(-1, 0x1A, 0x08, 0xff, 0xff, 0xff, 0);                          // MODE SENSE(6)
        add(-1, 0x1B, 0x01, 0, 0x0f, 0xf7, 0);                             // START STOP UNIT
        add(-1, 0x1E, 0, 0, 0, 0x03, 0);                                   // PREVENT ALLOW MEDIUM REMOVAL
        add(-1, 0x25, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x01, 0);           // READ CAPACITY(10)
        add(-1, 0x28, 0xf8, 0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0);     // READ(10)
        add(-1, 0x2A, 0xf8, 0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0);     // WRITE(10)
        add(-1, 0x2E, 0xf2, 0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0);     // WRITE AND VERIFY(10)
        add(-1, 0x2F, 0xf6, 0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0);     // VERIFY(10)
        add(-1, 0x34, 0x02, 0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0);     // PRE-FETCH(10)
        add(-1, 0x35, 0, 0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0);        // SYNCHRONIZE CACHE(10)
        add(-1, 0x37, 0, 0x1f, 0, 0, 0, 0, 0xff, 0xff, 0);                 // READ DEFECT DATA(10)
        add(-1, 0x41, 0xf8, 0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0);     // WRITE SAME(10)
        add(-1, 0x42, 0x01, 0, 0, 0, 0, 0, 0xff, 0xff, 0);                 // UNMAP
        add(-1, 0x55, 0x11, 0, 0, 0, 0, 0, 0xff, 0xff, 0);                 // MODE SELECT(10)
        add(-1, 0x56, 0x12, 0, 0, 0, 0, 0, 0, 0, 0);                       // RESERVE(10)
        add(-1, 0x57, 0x12, 0, 0, 0, 0, 0, 0, 0, 0);                       // RELEASE(10)
        add(-1, 0x5A, 0x18, 0xff, 0xff, 0, 0, 0, 0xff, 0xff, 0);           // MODE SENSE(10)
        for (int sa = 0; sa <= 3; sa++) {                                  // PERSISTENT RESERVE IN
            add(sa, 0x5E, 0x1f, 0, 0, 0, 0, 0, 0xff, 0xff, 0);
        }
        for (int sa = 0; sa <= 6; sa++) {                                  // PERSISTENT RESERVE OUT
            add(sa, 0x5F, 0x1f, 0xff, 0, 0, 0xff, 0xff, 0xff, 0xff, 0);
        }
        add(-1, 0x88, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // READ(16)
        add(-1, 0x89, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0xff, 0, 0);       // COMPARE AND WRITE
        add(-1, 0x8A, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // WRITE(16)
        add(-1, 0x8B, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // ORWRITE(16)
        add(-1, 0x8E, 0xf2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // WRITE AND VERIFY(16)
        add(-1, 0x8F, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // VERIFY(16)
        add(-1, 0x90, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // PRE-FETCH(16)
        add(-1, 0x91, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0);    // SYNCHRONIZE CACHE(16)
        add(-1, 0x93, 0xf9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // WRITE SAME(16)
        add(0x10, 0x9E, 0x1f, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0);                     // READ CAPACITY(16)
        add(0x12, 0x9E, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // GET LBA STATUS
        add(-1, 0xA0, 0, 0xff, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0);     // REPORT LUNS
        add(0x0C, 0xA3, 0x1f, 0x87, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // REPORT SUPPORTED OPERATION CODES
        add(-1, 0xA8, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // READ(12)
        add(-1, 0xAA, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // WRITE(12)
        add(-1, 0xAE, 0xf2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // WRITE AND VERIFY(12)
        add(-1, 0xAF, 0xf6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // VERIFY(12)
        add(-1, 0xB7, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0); // READ DEFECT DATA(12)
    }

    /** Registers a command; {@code mask} is the usage data after the opcode byte (the opcode byte is the opcode). */
    private static void add(int serviceAction, int opcode, int... mask) {
        byte[] usage = new byte[mask.length + 1];
        usage[0] = (byte) opcode;
        for (int i = 0; i < mask.length; i++) {
            usage[i + 1] = (byte) mask[i];
        }
        COMMANDS.add(new Command(opcode, serviceAction, usage));
    }

    private static boolean offered(Command c, LogicalUnit lu) {
        return c.opcode() != Opcodes.UNMAP || lu.offersUnmap();
    }

    static void report(ScsiCommand cmd, byte[] cdb, LogicalUnit lu) {
        boolean timeouts = (cdb[2] & 0x80) != 0;
        int options = cdb[2] & 0x07;
        int opcode = Cdb.u8(cdb, 3);
        int serviceAction = Cdb.u16(cdb, 4);
        int allocation = (int) Math.min(Cdb.u32(cdb, 6), Integer.MAX_VALUE);
        byte[] data = switch (options) {
            case 0 -> all(lu, timeouts);
            case 1, 2, 3 -> one(lu, timeouts, options, opcode, serviceAction);
            default -> throw SenseException.invalidFieldInCdb(2, 2);
        };
        CommandData.respond(cmd, data, allocation);
    }

    private static byte[] all(LogicalUnit lu, boolean timeouts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(1024);
        out.writeBytes(new byte[4]);
        for (Command c : COMMANDS) {
            if (!offered(c, lu)) {
                continue;
            }
            byte[] d = new byte[8];
            d[0] = (byte) c.opcode();
            if (c.hasServiceAction()) {
                Cdb.put16(d, 2, c.serviceAction());
            }
            d[5] = (byte) ((timeouts ? 0x02 : 0) | (c.hasServiceAction() ? 0x01 : 0)); // CTDP, SERVACTV
            Cdb.put16(d, 6, c.usage().length);
            out.writeBytes(d);
            if (timeouts) {
                out.writeBytes(timeoutsDescriptor());
            }
        }
        byte[] data = out.toByteArray();
        Cdb.put32(data, 0, data.length - 4);
        return data;
    }

    private static byte[] one(LogicalUnit lu, boolean timeouts, int options, int opcode, int serviceAction) {
        boolean opcodeHasServiceActions = false;
        Command match = null;
        for (Command c : COMMANDS) {
            if (c.opcode() != opcode || !offered(c, lu)) {
                continue;
            }
            opcodeHasServiceActions |= c.hasServiceAction();
            if (!c.hasServiceAction() || c.serviceAction() == serviceAction) {
                match = c;
            }
        }
        if (options == 1 && opcodeHasServiceActions) {
            throw SenseException.invalidFieldInCdb(3, -1);
        }
        if (options == 2 && match != null && !opcodeHasServiceActions) {
            throw SenseException.invalidFieldInCdb(3, -1);
        }
        if (match == null) {
            byte[] d = new byte[4];
            d[1] = 0x01;          // SUPPORT 001b: not supported
            return d;
        }
        byte[] usage = match.usage();
        byte[] d = new byte[4 + usage.length + (timeouts ? 12 : 0)];
        d[1] = (byte) ((timeouts ? 0x80 : 0) | 0x03); // CTDP, SUPPORT 011b: supported as the standard says
        Cdb.put16(d, 2, usage.length);
        System.arraycopy(usage, 0, d, 4, usage.length);
        if (timeouts) {
            System.arraycopy(timeoutsDescriptor(), 0, d, 4 + usage.length, 12);
        }
        return d;
    }

    /** Command timeouts descriptor (SPC-4 6.35.4): no timeouts are stated (0 = not specified). */
    private static byte[] timeoutsDescriptor() {
        byte[] t = new byte[12];
        Cdb.put16(t, 0, 0x0A);
        return t;
    }
}
