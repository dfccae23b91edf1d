package io.stripestack.targetserver.scsi;

import io.stripestack.targetserver.scsi.CommandTable.Command;
import java.io.ByteArrayOutputStream;

/**
 * REPORT SUPPORTED OPERATION CODES (SPC-4 6.35): every command of {@link CommandTable} the logical unit
 * offers, with its CDB length and CDB usage data (a mask of the CDB bits the device server looks at), so
 * the report is what the unit dispatches.
 *
 * <p>Stateless: reads the immutable table and the unit's fixed UNMAP offer, on the worker thread that runs
 * the command.
 */
final class SupportedOperations {
    private SupportedOperations() {
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
        for (Command c : CommandTable.all()) {
            if (!c.offeredBy(lu)) {
                continue;
            }
            byte[] d = new byte[8];
            d[0] = (byte) c.opcode();
            if (c.hasServiceAction()) {
                Cdb.put16(d, 2, c.serviceAction());
            }
            d[5] = (byte) ((timeouts ? 0x02 : 0) | (c.hasServiceAction() ? 0x01 : 0)); // CTDP, SERVACTV
            Cdb.put16(d, 6, c.cdbLength());
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
        for (Command c : CommandTable.withOpcode(opcode)) {
            if (!c.offeredBy(lu)) {
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
