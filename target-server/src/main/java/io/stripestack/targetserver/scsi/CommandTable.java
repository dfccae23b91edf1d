package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.CommandTable.Access.ALLOWED;
import static io.stripestack.targetserver.scsi.CommandTable.Access.PREVENT_ALLOW;
import static io.stripestack.targetserver.scsi.CommandTable.Access.READ;
import static io.stripestack.targetserver.scsi.CommandTable.Access.WRITE;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.function.Function;

/**
 * Every command a logical unit executes, one entry per operation code (and service action, for the opcodes
 * that have them): the handler that runs it, the CDB usage data REPORT SUPPORTED OPERATION CODES reports for
 * it (its length is the CDB length), and the rules that apply before it runs: how it fares under
 * reservations and whether a pending unit attention ends it. {@link LogicalUnit} dispatches through this
 * table, {@link SupportedOperations} reports it and {@link Reservations} judges conflicts by it, so what is
 * advertised, what runs and what a reservation blocks cannot disagree.
 *
 * <p>The table is built once, when the class is initialized, and never changes; it is shared by all logical
 * units and read without locks by every worker thread.
 */
final class CommandTable {
    private CommandTable() {
    }

    static final int NO_SERVICE_ACTION = -1;

    /** Allowed while another I_T nexus holds a RESERVE(6/10) reservation (SPC-2 5.5.1, table 11). */
    static final int PASSES_RESERVE = 1;
    /**
     * A pending unit attention does not end the command in CHECK CONDITION (SAM-5 5.14: INQUIRY, REPORT LUNS,
     * and REQUEST SENSE, which returns the condition as its data).
     */
    static final int IGNORES_UNIT_ATTENTION = 2;
    /**
     * Advertised only by a unit that offers UNMAP (see {@link LogicalUnit#offersUnmap()}); on other units the
     * handler refuses the command itself.
     */
    static final int NEEDS_UNMAP = 4;

    /** How a command fares under a persistent reservation another I_T nexus holds (SPC-4 5.7.1, table 65). */
    enum Access {
        /** Allowed under every reservation type. */
        ALLOWED,
        /** Reads the medium: conflicts with the Exclusive Access types only. */
        READ,
        /** Modifies the medium or the unit's state: conflicts with the Write Exclusive types too. */
        WRITE,
        /** PREVENT ALLOW MEDIUM REMOVAL: allowed with PREVENT 00b, otherwise as {@link #WRITE}. */
        PREVENT_ALLOW {
            @Override
            Access of(byte[] cdb) {
                return (cdb[4] & 0x03) == 0 ? ALLOWED : WRITE;
            }
        };

        /** The access of the command in {@code cdb}: the constant itself unless it depends on a CDB field. */
        Access of(byte[] cdb) {
            return this;
        }
    }

    /** Runs one command on a unit; SCSI errors leave as {@link SenseException}. */
    @FunctionalInterface
    interface Handler {
        void execute(LogicalUnit unit, ScsiCommand cmd, byte[] cdb);
    }

    /**
     * One command the logical unit executes.
     *
     * @param serviceAction the service action, or {@link #NO_SERVICE_ACTION}
     * @param usage         CDB usage data (SPC-4 6.35.3): the opcode, then a mask of the CDB bits the device
     *                      server looks at; its length is the CDB length
     * @param flags         {@link #PASSES_RESERVE}, {@link #IGNORES_UNIT_ATTENTION}, {@link #NEEDS_UNMAP}
     */
    record Command(String name, int opcode, int serviceAction, byte[] usage, Access access, int flags,
            Handler handler) {
        boolean hasServiceAction() {
            return serviceAction != NO_SERVICE_ACTION;
        }

        boolean is(int flag) {
            return (flags & flag) != 0;
        }

        boolean offeredBy(LogicalUnit unit) {
            return !is(NEEDS_UNMAP) || unit.offersUnmap();
        }

        int cdbLength() {
            return usage.length;
        }
    }

    private static final List<Command> COMMANDS = new ArrayList<>();
    private static final Command[] NONE = {};
    private static final Command[][] BY_OPCODE = new Command[256][];

    static {
        Arrays.fill(BY_OPCODE, NONE);
        add("TEST UNIT READY", Opcodes.TEST_UNIT_READY, ALLOWED, 0, "00 00 00 00 00",
                (u, c, b) -> u.spc().testUnitReady(c));
        add("REQUEST SENSE", Opcodes.REQUEST_SENSE, ALLOWED, PASSES_RESERVE | IGNORES_UNIT_ATTENTION,
                "01 00 00 ff 00", (u, c, b) -> u.spc().requestSense(c, b));
        add("READ(6)", Opcodes.READ_6, READ, 0, "1f ff ff ff 00",
                (u, c, b) -> u.sbc().read(c, Cdb.u24(b, 1) & 0x1FFFFF, b[4] == 0 ? 256 : Cdb.u8(b, 4), 4));
        add("WRITE(6)", Opcodes.WRITE_6, WRITE, 0, "1f ff ff ff 00",
                (u, c, b) -> u.sbc().write(c, Cdb.u24(b, 1) & 0x1FFFFF, b[4] == 0 ? 256 : Cdb.u8(b, 4), 4, false));
        add("INQUIRY", Opcodes.INQUIRY, ALLOWED, PASSES_RESERVE | IGNORES_UNIT_ATTENTION, "01 ff ff ff 00",
                (u, c, b) -> u.spc().inquiry(c, b));
        add("MODE SELECT(6)", Opcodes.MODE_SELECT_6, WRITE, 0, "11 00 00 ff 00",
                (u, c, b) -> u.spc().modeSelect(c, b, false));
        add("RESERVE(6)", Opcodes.RESERVE_6, WRITE, 0, "00 00 00 00 00",
                (u, c, b) -> u.reservations().reserve(c, b));
        add("RELEASE(6)", Opcodes.RELEASE_6, WRITE, PASSES_RESERVE, "00 00 00 00 00",
                (u, c, b) -> u.reservations().release(c, b));
        add("MODE SENSE(6)", Opcodes.MODE_SENSE_6, READ, 0, "08 ff ff ff 00",
                (u, c, b) -> u.spc().modeSense(c, b, false));
        add("START STOP UNIT", Opcodes.START_STOP_UNIT, WRITE, 0, "01 00 0f f7 00",
                (u, c, b) -> u.sbc().startStopUnit(c, b));
        add("PREVENT ALLOW MEDIUM REMOVAL", Opcodes.PREVENT_ALLOW_MEDIUM_REMOVAL, PREVENT_ALLOW, 0,
                "00 00 00 03 00", (u, c, b) -> u.sbc().preventAllowMediumRemoval(c));
        add("READ CAPACITY(10)", Opcodes.READ_CAPACITY_10, ALLOWED, 0, "00 ff ff ff ff 00 00 01 00",
                (u, c, b) -> u.sbc().readCapacity10(c, b));
        add("READ(10)", Opcodes.READ_10, READ, 0, "f8 ff ff ff ff 00 ff ff 00",
                (u, c, b) -> u.sbc().readWithFlags(c, b, Cdb.u32(b, 2), Cdb.u16(b, 7), 7));
        add("WRITE(10)", Opcodes.WRITE_10, WRITE, 0, "f8 ff ff ff ff 00 ff ff 00",
                (u, c, b) -> u.sbc().writeWithFlags(c, b, Cdb.u32(b, 2), Cdb.u16(b, 7), 7));
        add("WRITE AND VERIFY(10)", Opcodes.WRITE_AND_VERIFY_10, WRITE, 0, "f2 ff ff ff ff 00 ff ff 00",
                (u, c, b) -> u.sbc().writeAndVerify(c, b, Cdb.u32(b, 2), Cdb.u16(b, 7), 7));
        add("VERIFY(10)", Opcodes.VERIFY_10, READ, 0, "f6 ff ff ff ff 00 ff ff 00",
                (u, c, b) -> u.sbc().verify(c, b, Cdb.u32(b, 2), Cdb.u16(b, 7), 7));
        add("PRE-FETCH(10)", Opcodes.PRE_FETCH_10, WRITE, 0, "02 ff ff ff ff 00 ff ff 00",
                (u, c, b) -> u.sbc().preFetch(c, Cdb.u32(b, 2), Cdb.u16(b, 7)));
        add("SYNCHRONIZE CACHE(10)", Opcodes.SYNCHRONIZE_CACHE_10, WRITE, 0, "00 ff ff ff ff 00 ff ff 00",
                (u, c, b) -> u.sbc().synchronizeCache(c, Cdb.u32(b, 2), Cdb.u16(b, 7)));
        add("READ DEFECT DATA(10)", Opcodes.READ_DEFECT_DATA_10, WRITE, 0, "00 1f 00 00 00 00 ff ff 00",
                (u, c, b) -> u.sbc().readDefectData(c, Cdb.u8(b, 2), Cdb.u16(b, 7), false));
        add("WRITE SAME(10)", Opcodes.WRITE_SAME_10, WRITE, 0, "f8 ff ff ff ff 00 ff ff 00",
                (u, c, b) -> u.sbc().writeSame(c, b, Cdb.u32(b, 2), Cdb.u16(b, 7), 7, false));
        // UNMAP runs on every unit: one that does not offer it refuses it itself (WRITE PROTECTED when only
        // read-only keeps it from offering it, else INVALID COMMAND OPERATION CODE).
        add("UNMAP", Opcodes.UNMAP, WRITE, NEEDS_UNMAP, "01 00 00 00 00 00 ff ff 00",
                (u, c, b) -> u.sbc().unmap(c, b));
        add("MODE SELECT(10)", Opcodes.MODE_SELECT_10, WRITE, 0, "11 00 00 00 00 00 ff ff 00",
                (u, c, b) -> u.spc().modeSelect(c, b, true));
        add("RESERVE(10)", Opcodes.RESERVE_10, WRITE, 0, "12 00 00 00 00 00 00 00 00",
                (u, c, b) -> u.reservations().reserve(c, b));
        add("RELEASE(10)", Opcodes.RELEASE_10, WRITE, PASSES_RESERVE, "12 00 00 00 00 00 00 00 00",
                (u, c, b) -> u.reservations().release(c, b));
        add("MODE SENSE(10)", Opcodes.MODE_SENSE_10, READ, 0, "18 ff ff 00 00 00 ff ff 00",
                (u, c, b) -> u.spc().modeSense(c, b, true));
        persistentReserveIn(Reservations.SA_READ_KEYS, "READ KEYS", Reservations::readKeys);
        persistentReserveIn(Reservations.SA_READ_RESERVATION, "READ RESERVATION", Reservations::readReservation);
        persistentReserveIn(Reservations.SA_REPORT_CAPABILITIES, "REPORT CAPABILITIES",
                r -> Reservations.reportCapabilities());
        persistentReserveIn(Reservations.SA_READ_FULL_STATUS, "READ FULL STATUS", Reservations::readFullStatus);
        persistentReserveOut(Reservations.SA_REGISTER, "REGISTER");
        persistentReserveOut(Reservations.SA_RESERVE, "RESERVE");
        persistentReserveOut(Reservations.SA_RELEASE, "RELEASE");
        persistentReserveOut(Reservations.SA_CLEAR, "CLEAR");
        persistentReserveOut(Reservations.SA_PREEMPT, "PREEMPT");
        persistentReserveOut(Reservations.SA_PREEMPT_AND_ABORT, "PREEMPT AND ABORT");
        persistentReserveOut(Reservations.SA_REGISTER_AND_IGNORE, "REGISTER AND IGNORE EXISTING KEY");
        add("EXTENDED COPY(LID1)", Opcodes.EXTENDED_COPY, Opcodes.SA_EXTENDED_COPY_LID1, WRITE, 0,
                "1f 00 00 00 00 00 00 00 00 ff ff ff ff 00 00", (u, c, b) -> u.copyManager().extendedCopy(c, b));
        // RECEIVE COPY RESULTS reports on copies, which read the medium: judged as a read.
        add("RECEIVE COPY RESULTS / COPY STATUS", Opcodes.RECEIVE_COPY_RESULTS, Opcodes.SA_COPY_STATUS, READ, 0,
                "1f ff 00 00 00 00 00 00 00 ff ff ff ff 00 00", (u, c, b) -> u.copyManager().copyStatus(c, b));
        add("RECEIVE COPY RESULTS / RECEIVE COPY OPERATING PARAMETERS", Opcodes.RECEIVE_COPY_RESULTS,
                Opcodes.SA_RECEIVE_COPY_OPERATING_PARAMETERS, READ, 0, "1f 00 00 00 00 00 00 00 00 ff ff ff ff 00 00",
                (u, c, b) -> u.copyManager().operatingParameters(c, b));
        add("READ(16)", Opcodes.READ_16, READ, 0, "f8 ff ff ff ff ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().readWithFlags(c, b, Cdb.u64(b, 2), Cdb.u32(b, 10), 10));
        add("COMPARE AND WRITE", Opcodes.COMPARE_AND_WRITE, WRITE, 0, "f8 ff ff ff ff ff ff ff ff 00 00 00 ff 00 00",
                (u, c, b) -> u.sbc().compareAndWrite(c, b));
        add("WRITE(16)", Opcodes.WRITE_16, WRITE, 0, "f8 ff ff ff ff ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().writeWithFlags(c, b, Cdb.u64(b, 2), Cdb.u32(b, 10), 10));
        add("ORWRITE(16)", Opcodes.ORWRITE_16, WRITE, 0, "f8 ff ff ff ff ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().orWrite(c, b));
        add("WRITE AND VERIFY(16)", Opcodes.WRITE_AND_VERIFY_16, WRITE, 0,
                "f2 ff ff ff ff ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().writeAndVerify(c, b, Cdb.u64(b, 2), Cdb.u32(b, 10), 10));
        add("VERIFY(16)", Opcodes.VERIFY_16, READ, 0, "f6 ff ff ff ff ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().verify(c, b, Cdb.u64(b, 2), Cdb.u32(b, 10), 10));
        add("PRE-FETCH(16)", Opcodes.PRE_FETCH_16, WRITE, 0, "02 ff ff ff ff ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().preFetch(c, Cdb.u64(b, 2), Cdb.u32(b, 10)));
        add("SYNCHRONIZE CACHE(16)", Opcodes.SYNCHRONIZE_CACHE_16, WRITE, 0,
                "00 ff ff ff ff ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().synchronizeCache(c, Cdb.u64(b, 2), Cdb.u32(b, 10)));
        add("WRITE SAME(16)", Opcodes.WRITE_SAME_16, WRITE, 0, "f9 ff ff ff ff ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().writeSame(c, b, Cdb.u64(b, 2), Cdb.u32(b, 10), 10, (b[1] & 0x01) != 0));
        add("READ CAPACITY(16)", Opcodes.SERVICE_ACTION_IN_16, Opcodes.SA_READ_CAPACITY_16, ALLOWED, 0,
                "1f 00 00 00 00 00 00 00 00 ff ff ff ff 00 00", (u, c, b) -> u.sbc().readCapacity16(c, b));
        add("GET LBA STATUS", Opcodes.SERVICE_ACTION_IN_16, Opcodes.SA_GET_LBA_STATUS, ALLOWED, 0,
                "1f ff ff ff ff ff ff ff ff ff ff ff ff 00 00", (u, c, b) -> u.sbc().getLbaStatus(c, b));
        add("REPORT LUNS", Opcodes.REPORT_LUNS, ALLOWED, PASSES_RESERVE | IGNORES_UNIT_ATTENTION,
                "00 ff 00 00 00 ff ff ff ff 00 00", (u, c, b) -> {
                    throw new IllegalStateException("REPORT LUNS is answered by ScsiTarget, for every LUN number");
                });
        add("REPORT SUPPORTED OPERATION CODES", Opcodes.MAINTENANCE_IN, Opcodes.SA_REPORT_SUPPORTED_OPERATION_CODES,
                ALLOWED, PASSES_RESERVE, "1f 87 ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.spc().reportSupportedOperationCodes(c, b));
        add("READ(12)", Opcodes.READ_12, READ, 0, "f8 ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().readWithFlags(c, b, Cdb.u32(b, 2), Cdb.u32(b, 6), 6));
        add("WRITE(12)", Opcodes.WRITE_12, WRITE, 0, "f8 ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().writeWithFlags(c, b, Cdb.u32(b, 2), Cdb.u32(b, 6), 6));
        add("WRITE AND VERIFY(12)", Opcodes.WRITE_AND_VERIFY_12, WRITE, 0, "f2 ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().writeAndVerify(c, b, Cdb.u32(b, 2), Cdb.u32(b, 6), 6));
        add("VERIFY(12)", Opcodes.VERIFY_12, READ, 0, "f6 ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().verify(c, b, Cdb.u32(b, 2), Cdb.u32(b, 6), 6));
        add("READ DEFECT DATA(12)", Opcodes.READ_DEFECT_DATA_12, WRITE, 0, "1f ff ff ff ff ff ff ff ff 00 00",
                (u, c, b) -> u.sbc().readDefectData(c, Cdb.u8(b, 1),
                        (int) Math.min(Cdb.u32(b, 6), Integer.MAX_VALUE), true));
    }

    /** PERSISTENT RESERVE IN with one service action: the page {@code data} renders, cut to ALLOCATION LENGTH. */
    private static void persistentReserveIn(int serviceAction, String name, Function<Reservations, byte[]> data) {
        add("PERSISTENT RESERVE IN / " + name, Opcodes.PERSISTENT_RESERVE_IN, serviceAction, ALLOWED, 0,
                "1f 00 00 00 00 00 ff ff 00",
                (u, c, b) -> CommandData.respond(c, data.apply(u.reservations()), Cdb.u16(b, 7)));
    }

    /** PERSISTENT RESERVE OUT with one service action; {@link Reservations} tells them apart itself. */
    private static void persistentReserveOut(int serviceAction, String name) {
        add("PERSISTENT RESERVE OUT / " + name, Opcodes.PERSISTENT_RESERVE_OUT, serviceAction, ALLOWED, 0,
                "1f ff 00 00 ff ff ff ff 00",
                (u, c, b) -> u.reservations().persistentReserveOut(c, b, u.unitAttentions()));
    }

    private static void add(String name, int opcode, Access access, int flags, String mask, Handler handler) {
        add(name, opcode, NO_SERVICE_ACTION, access, flags, mask, handler);
    }

    /**
     * Registers a command; {@code mask} is its CDB usage data after the opcode byte, in hex. The commands of
     * one opcode must agree in their reservation and unit attention rules: a service action the unit lacks
     * is judged by them before it is refused.
     */
    private static void add(String name, int opcode, int serviceAction, Access access, int flags, String mask,
            Handler handler) {
        String[] hex = mask.split(" ");
        byte[] usage = new byte[hex.length + 1];
        usage[0] = (byte) opcode;
        for (int i = 0; i < hex.length; i++) {
            usage[i + 1] = (byte) Integer.parseInt(hex[i], 16);
        }
        Command command = new Command(name, opcode, serviceAction, usage, access, flags, handler);
        Command[] group = BY_OPCODE[opcode];
        if (group.length > 0 && (!group[0].hasServiceAction() || !command.hasServiceAction()
                || group[0].access() != access || group[0].flags() != flags)) {
            throw new IllegalStateException(name + " does not fit the other commands of opcode 0x"
                    + Integer.toHexString(opcode));
        }
        BY_OPCODE[opcode] = append(group, command);
        COMMANDS.add(command);
    }

    private static Command[] append(Command[] group, Command command) {
        Command[] longer = Arrays.copyOf(group, group.length + 1);
        longer[group.length] = command;
        return longer;
    }

    /** Every command, ascending by opcode and service action (the order REPORT SUPPORTED OPERATION CODES lists). */
    static List<Command> all() {
        return Collections.unmodifiableList(COMMANDS);
    }

    /** The commands with {@code opcode}: one without a service action, one per service action, or none. */
    static Command[] withOpcode(int opcode) {
        return BY_OPCODE[opcode];
    }

    /** The command of {@code group} (see {@link #withOpcode}) that {@code cdb} names, or null. */
    static Command find(Command[] group, byte[] cdb) {
        if (group.length == 0 || !group[0].hasServiceAction()) {
            return group.length == 0 ? null : group[0];
        }
        int serviceAction = cdb[1] & 0x1f;
        for (Command c : group) {
            if (c.serviceAction() == serviceAction) {
                return c;
            }
        }
        return null;
    }
}
