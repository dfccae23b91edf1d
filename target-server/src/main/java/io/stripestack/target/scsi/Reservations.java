package io.stripestack.target.scsi;

/**
 * Reservation state of one logical unit: RESERVE/RELEASE (SPC-2) reservations.
 *
 * <p>Concurrency: all state is guarded by this object's monitor.
 */
final class Reservations {
    private String reserveHolder;

    /** Whether {@code nexus} must get RESERVATION CONFLICT for this command. */
    synchronized boolean conflicts(String nexus, int opcode, byte[] cdb) {
        if (reserveHolder == null || reserveHolder.equals(nexus)) {
            return false;
        }
        return switch (opcode) {
            case Opcodes.INQUIRY, Opcodes.REPORT_LUNS, Opcodes.REQUEST_SENSE, Opcodes.RELEASE_6, Opcodes.RELEASE_10,
                    Opcodes.MAINTENANCE_IN -> false;
            default -> true;
        };
    }

    synchronized void reserve(ScsiCommand cmd, byte[] cdb) {
        if (cmd.opcode() == Opcodes.RESERVE_10 && (cdb[1] & 0x12) != 0) {
            throw SenseException.invalidFieldInCdb(1, 4); // third-party / long id reservations
        }
        reserveHolder = cmd.nexus();
        cmd.complete(null);
    }

    synchronized void release(ScsiCommand cmd, byte[] cdb) {
        if (cmd.opcode() == Opcodes.RELEASE_10 && (cdb[1] & 0x12) != 0) {
            throw SenseException.invalidFieldInCdb(1, 4);
        }
        if (cmd.nexus().equals(reserveHolder)) {
            reserveHolder = null;
        }
        cmd.complete(null);
    }

    synchronized void persistentReserveIn(ScsiCommand cmd, byte[] cdb) {
        throw SenseException.invalidOpcode(cmd.opcode());
    }

    synchronized void persistentReserveOut(ScsiCommand cmd, byte[] cdb, UnitAttentions attentions) {
        throw SenseException.invalidOpcode(cmd.opcode());
    }

    /** The nexus is gone: its RESERVE(6/10) reservation ends (persistent reservations survive). */
    synchronized void nexusLost(String nexus) {
        if (nexus.equals(reserveHolder)) {
            reserveHolder = null;
        }
    }

    /** LOGICAL UNIT RESET / target reset: RESERVE(6/10) reservations end. */
    synchronized void reset() {
        reserveHolder = null;
    }
}
