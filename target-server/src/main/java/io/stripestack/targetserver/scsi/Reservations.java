package io.stripestack.targetserver.scsi;

import io.stripestack.targetserver.scsi.CommandTable.Access;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reservation state of one logical unit: RESERVE/RELEASE(6/10) reservations (SPC-2) and persistent
 * reservations (SPC-4 5.7): registrations per I_T nexus, one reservation of type Write Exclusive, Exclusive
 * Access, their Registrants Only and All Registrants variants, the PRgeneration counter. Persistent
 * reservations are kept in memory: they survive nexus loss and resets but not a restart of the target,
 * so REPORT CAPABILITIES does not claim PTPL and APTPL is refused.
 *
 * <p>Concurrency: all state is guarded by this object's monitor; {@link #conflicts} is one short
 * synchronized check per command, skipped without locking while no reservation of either kind exists.
 */
final class Reservations {
    static final int WRITE_EXCLUSIVE = 1;
    static final int EXCLUSIVE_ACCESS = 3;
    static final int WRITE_EXCLUSIVE_REGISTRANTS_ONLY = 5;
    static final int EXCLUSIVE_ACCESS_REGISTRANTS_ONLY = 6;
    static final int WRITE_EXCLUSIVE_ALL_REGISTRANTS = 7;
    static final int EXCLUSIVE_ACCESS_ALL_REGISTRANTS = 8;

    /** PERSISTENT RESERVE IN service actions. */
    static final int SA_READ_KEYS = 0;
    static final int SA_READ_RESERVATION = 1;
    static final int SA_REPORT_CAPABILITIES = 2;
    static final int SA_READ_FULL_STATUS = 3;

    /** PERSISTENT RESERVE OUT service actions. */
    static final int SA_REGISTER = 0;
    static final int SA_RESERVE = 1;
    static final int SA_RELEASE = 2;
    static final int SA_CLEAR = 3;
    static final int SA_PREEMPT = 4;
    static final int SA_PREEMPT_AND_ABORT = 5;
    static final int SA_REGISTER_AND_IGNORE = 6;

    private static final int PROUT_PARAMETER_LENGTH = 24;

    /** Set while any reservation of either kind exists; lets {@link #conflicts} return without locking. */
    private volatile boolean anyReservation;
    private String reserveHolder;
    private final Map<String, Long> registrations = new LinkedHashMap<>();
    private String persistentHolder;
    private int persistentType;
    private int generation;

    /**
     * Whether {@code nexus} must get RESERVATION CONFLICT for the command in {@code cdb}, judged by the rules
     * {@link CommandTable} keeps for it ({@code rules} null: a command the unit does not know, judged as one
     * that modifies the medium).
     */
    boolean conflicts(String nexus, CommandTable.Command rules, byte[] cdb) {
        if (!anyReservation) {
            return false;
        }
        return rules == null ? conflicts(nexus, false, Access.WRITE)
                : conflicts(nexus, rules.is(CommandTable.PASSES_RESERVE), rules.access().of(cdb));
    }

    /**
     * Whether {@code nexus} would get RESERVATION CONFLICT for a command with {@code access} that does not pass
     * RESERVE(6/10): how an EXTENDED COPY addressed to another unit is judged on this one as a copy target.
     */
    boolean conflicts(String nexus, Access access) {
        return anyReservation && conflicts(nexus, false, access);
    }

    private synchronized boolean conflicts(String nexus, boolean passesReserve, Access access) {
        if (reserveHolder != null) {
            return !reserveHolder.equals(nexus) && !passesReserve;
        }
        if (persistentType == 0) {
            return false;
        }
        if (access == Access.ALLOWED || isPersistentHolder(nexus)) {
            return false;
        }
        boolean registered = registrations.containsKey(nexus);
        return switch (persistentType) {
            case WRITE_EXCLUSIVE -> access == Access.WRITE;
            case EXCLUSIVE_ACCESS -> true;
            case WRITE_EXCLUSIVE_REGISTRANTS_ONLY, WRITE_EXCLUSIVE_ALL_REGISTRANTS ->
                    !registered && access == Access.WRITE;
            case EXCLUSIVE_ACCESS_REGISTRANTS_ONLY, EXCLUSIVE_ACCESS_ALL_REGISTRANTS -> !registered;
            default -> false;
        };
    }

    private boolean isPersistentHolder(String nexus) {
        if (persistentType == WRITE_EXCLUSIVE_ALL_REGISTRANTS || persistentType == EXCLUSIVE_ACCESS_ALL_REGISTRANTS) {
            return registrations.containsKey(nexus);
        }
        return nexus.equals(persistentHolder);
    }

    private void updateAnyReservation() {
        anyReservation = reserveHolder != null || persistentType != 0;
    }

    // ------------------------------------------------------------------------------------------------
    // RESERVE / RELEASE (6) and (10)

    synchronized void reserve(ScsiCommand cmd, byte[] cdb) {
        if (cmd.opcode() == Opcodes.RESERVE_10 && (cdb[1] & 0x12) != 0) {
            throw SenseException.invalidFieldInCdb(1, 4); // third-party and long-id reservations
        }
        if (persistentType != 0 || (reserveHolder != null && !reserveHolder.equals(cmd.nexus()))) {
            cmd.completeWithStatus(ScsiCommand.RESERVATION_CONFLICT);
            return;
        }
        reserveHolder = cmd.nexus();
        updateAnyReservation();
        cmd.complete(null);
    }

    synchronized void release(ScsiCommand cmd, byte[] cdb) {
        if (cmd.opcode() == Opcodes.RELEASE_10 && (cdb[1] & 0x12) != 0) {
            throw SenseException.invalidFieldInCdb(1, 4);
        }
        if (cmd.nexus().equals(reserveHolder)) {
            reserveHolder = null;
            updateAnyReservation();
        }
        cmd.complete(null);
    }

    // ------------------------------------------------------------------------------------------------
    // PERSISTENT RESERVE IN: each service action's parameter data (CommandTable sends it)

    synchronized byte[] readKeys() {
        byte[] d = new byte[8 + 8 * registrations.size()];
        Cdb.put32(d, 0, generation);
        Cdb.put32(d, 4, 8L * registrations.size());
        int at = 8;
        for (long key : registrations.values()) {
            Cdb.put64(d, at, key);
            at += 8;
        }
        return d;
    }

    synchronized byte[] readReservation() {
        if (persistentType == 0) {
            byte[] d = new byte[8];
            Cdb.put32(d, 0, generation);
            return d;
        }
        byte[] d = new byte[24];
        Cdb.put32(d, 0, generation);
        Cdb.put32(d, 4, 16);
        Cdb.put64(d, 8, reservationKey());
        d[21] = (byte) persistentType; // scope 0: logical unit
        return d;
    }

    /** The RESERVATION KEY READ RESERVATION reports: 0 for all-registrants types (SPC-4 6.15.3). */
    private long reservationKey() {
        if (persistentType == WRITE_EXCLUSIVE_ALL_REGISTRANTS || persistentType == EXCLUSIVE_ACCESS_ALL_REGISTRANTS) {
            return 0;
        }
        Long key = registrations.get(persistentHolder);
        return key == null ? 0 : key;
    }

    static byte[] reportCapabilities() {
        byte[] d = new byte[8];
        Cdb.put16(d, 0, 8);
        d[2] = 0x10;              // CRH: RESERVE/RELEASE(6/10) answer as SPC-4 5.7.3 says when a PR exists
        d[3] = (byte) 0x80;       // TMV: the type mask is valid; ALLOW COMMANDS 0; PTPL_A 0
        d[4] = (byte) 0xEA;       // WR_EX_AR, EX_AC_RO, WR_EX_RO, EX_AC, WR_EX
        d[5] = 0x01;              // EX_AC_AR
        return d;
    }

    synchronized byte[] readFullStatus() {
        List<byte[]> descriptors = new ArrayList<>();
        for (Map.Entry<String, Long> e : registrations.entrySet()) {
            byte[] transportId = transportId(e.getKey());
            byte[] d = new byte[24 + transportId.length];
            Cdb.put64(d, 0, e.getValue());
            if (persistentType != 0 && isPersistentHolder(e.getKey())) {
                d[12] = 0x01;     // R_HOLDER
                d[13] = (byte) persistentType;
            }
            Cdb.put16(d, 18, 1);  // RELATIVE TARGET PORT IDENTIFIER
            Cdb.put32(d, 20, transportId.length);
            System.arraycopy(transportId, 0, d, 24, transportId.length);
            descriptors.add(d);
        }
        int length = 0;
        for (byte[] d : descriptors) {
            length += d.length;
        }
        byte[] out = new byte[8 + length];
        Cdb.put32(out, 0, generation);
        Cdb.put32(out, 4, length);
        int at = 8;
        for (byte[] d : descriptors) {
            System.arraycopy(d, 0, out, at, d.length);
            at += d.length;
        }
        return out;
    }

    /**
     * iSCSI TransportID, format 00b (SPC-4 7.6.4.6): the initiator's iSCSI name, which is the nexus name up
     * to its first comma, NUL-terminated and padded to a multiple of 4 bytes (at least 20 in all).
     */
    private static byte[] transportId(String nexus) {
        int comma = nexus.indexOf(',');
        String name = comma < 0 ? nexus : nexus.substring(0, comma);
        int nameLength = Math.max(16, (name.length() + 1 + 3) & ~3);
        byte[] id = new byte[4 + nameLength];
        id[0] = 0x05;             // protocol identifier: iSCSI
        Cdb.put16(id, 2, nameLength);
        for (int i = 0; i < name.length(); i++) {
            id[4 + i] = (byte) name.charAt(i);
        }
        return id;
    }

    // ------------------------------------------------------------------------------------------------
    // PERSISTENT RESERVE OUT

    /** Every service action from REGISTER to REGISTER AND IGNORE EXISTING KEY (CommandTable refuses the others). */
    synchronized void persistentReserveOut(ScsiCommand cmd, byte[] cdb, UnitAttentions attentions) {
        int serviceAction = cdb[1] & 0x1f;
        long length = Cdb.u32(cdb, 5);
        cmd.setCommandTransferLength(length);
        if (length != PROUT_PARAMETER_LENGTH) {
            throw SenseException.parameterListLengthError();
        }
        byte[] p = CommandData.parameterList(cmd, PROUT_PARAMETER_LENGTH);
        if ((p[20] & 0x08) != 0) {
            throw SenseException.invalidFieldInParameterList(20, 3); // SPEC_I_PT
        }
        if ((p[20] & 0x04) != 0) {
            throw SenseException.invalidFieldInParameterList(20, 2); // ALL_TG_PT
        }
        if ((p[20] & 0x01) != 0) {
            throw SenseException.invalidFieldInParameterList(20, 0); // APTPL: nothing survives a restart
        }
        String nexus = cmd.nexus();
        long key = Cdb.u64(p, 0);
        long serviceKey = Cdb.u64(p, 8);
        Long registered = registrations.get(nexus);
        boolean ok;
        if (serviceAction == SA_REGISTER || serviceAction == SA_REGISTER_AND_IGNORE) {
            ok = register(nexus, registered, key, serviceKey, serviceAction == SA_REGISTER_AND_IGNORE, attentions);
        } else if (registered == null || registered != key) {
            ok = false;
        } else {
            int type = cdb[2] & 0x0f;
            if (serviceAction != SA_CLEAR && (cdb[2] & 0xf0) != 0) {
                throw SenseException.invalidFieldInCdb(2, 7); // SCOPE: only LU_SCOPE
            }
            ok = switch (serviceAction) {
                case SA_RESERVE -> reservePersistent(nexus, checkedType(type));
                case SA_RELEASE -> releasePersistent(nexus, type, attentions);
                case SA_CLEAR -> clear(nexus, attentions);
                default -> preempt(nexus, serviceKey, checkedType(type), attentions);
            };
        }
        updateAnyReservation();
        if (ok) {
            cmd.complete(null);
        } else {
            cmd.completeWithStatus(ScsiCommand.RESERVATION_CONFLICT);
        }
    }

    private static int checkedType(int type) {
        return switch (type) {
            case WRITE_EXCLUSIVE, EXCLUSIVE_ACCESS, WRITE_EXCLUSIVE_REGISTRANTS_ONLY, EXCLUSIVE_ACCESS_REGISTRANTS_ONLY,
                    WRITE_EXCLUSIVE_ALL_REGISTRANTS, EXCLUSIVE_ACCESS_ALL_REGISTRANTS -> type;
            default -> throw SenseException.invalidFieldInCdb(2, 3);
        };
    }

    private boolean register(String nexus, Long registered, long key, long serviceKey, boolean ignoreKey,
            UnitAttentions attentions) {
        if (!ignoreKey && (registered == null ? key != 0 : registered != key)) {
            return false;
        }
        if (serviceKey == 0) {
            if (registered != null) {
                unregister(nexus, attentions);
                generation++;
            }
            return true;
        }
        registrations.put(nexus, serviceKey);
        generation++;
        return true;
    }

    /** Removes a registration; a holder losing it releases the reservation (SPC-4 5.7.11.2.1). */
    private void unregister(String nexus, UnitAttentions attentions) {
        boolean allRegistrants = persistentType == WRITE_EXCLUSIVE_ALL_REGISTRANTS
                || persistentType == EXCLUSIVE_ACCESS_ALL_REGISTRANTS;
        registrations.remove(nexus);
        if (persistentType == 0) {
            return;
        }
        if (allRegistrants ? registrations.isEmpty() : nexus.equals(persistentHolder)) {
            if (persistentType == WRITE_EXCLUSIVE_REGISTRANTS_ONLY || persistentType == EXCLUSIVE_ACCESS_REGISTRANTS_ONLY) {
                raiseForRegistrants(null, UnitAttentions.RESERVATIONS_RELEASED, attentions);
            }
            persistentHolder = null;
            persistentType = 0;
        }
    }

    private boolean reservePersistent(String nexus, int type) {
        if (persistentType != 0) {
            // Reserving again with the same type is a no-op for the holder; everything else conflicts.
            return persistentType == type && isPersistentHolder(nexus);
        }
        persistentHolder = nexus;
        persistentType = type;
        return true;
    }

    private boolean releasePersistent(String nexus, int type, UnitAttentions attentions) {
        if (persistentType == 0 || !isPersistentHolder(nexus)) {
            return true;
        }
        if (type != persistentType) {
            throw SenseException.invalidReleaseOfPersistentReservation();
        }
        if (persistentType != WRITE_EXCLUSIVE && persistentType != EXCLUSIVE_ACCESS) {
            raiseForRegistrants(nexus, UnitAttentions.RESERVATIONS_RELEASED, attentions);
        }
        persistentHolder = null;
        persistentType = 0;
        return true;
    }

    private boolean clear(String nexus, UnitAttentions attentions) {
        raiseForRegistrants(nexus, UnitAttentions.RESERVATIONS_PREEMPTED, attentions);
        registrations.clear();
        persistentHolder = null;
        persistentType = 0;
        generation++;
        return true;
    }

    /** PREEMPT and PREEMPT AND ABORT (this layer has no task set of its own to abort). SPC-4 5.7.11.4. */
    private boolean preempt(String nexus, long serviceKey, int type, UnitAttentions attentions) {
        boolean allRegistrants = persistentType == WRITE_EXCLUSIVE_ALL_REGISTRANTS
                || persistentType == EXCLUSIVE_ACCESS_ALL_REGISTRANTS;
        if (persistentType != 0 && allRegistrants && serviceKey == 0) {
            removeRegistrations(nexus, k -> true, attentions);
            persistentHolder = nexus;
            persistentType = type;
            generation++;
            return true;
        }
        if (serviceKey == 0) {
            throw SenseException.invalidFieldInParameterList(8, -1);
        }
        boolean preemptsHolder = persistentType != 0 && !allRegistrants && reservationKey() == serviceKey;
        int removed = removeRegistrations(nexus, k -> k == serviceKey, attentions);
        if (preemptsHolder) {
            persistentHolder = nexus;
            persistentType = type;
        } else if (removed == 0) {
            return false;
        }
        generation++;
        return true;
    }

    private int removeRegistrations(String except, java.util.function.LongPredicate keyMatches,
            UnitAttentions attentions) {
        int removed = 0;
        for (Iterator<Map.Entry<String, Long>> it = registrations.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Long> e = it.next();
            if (!e.getKey().equals(except) && keyMatches.test(e.getValue())) {
                attentions.raise(e.getKey(), UnitAttentions.REGISTRATIONS_PREEMPTED);
                it.remove();
                removed++;
            }
        }
        return removed;
    }

    private void raiseForRegistrants(String except, int code, UnitAttentions attentions) {
        for (String registrant : registrations.keySet()) {
            if (!registrant.equals(except)) {
                attentions.raise(registrant, code);
            }
        }
    }

    // ------------------------------------------------------------------------------------------------
    // Nexus loss and resets

    /** The nexus is gone: its RESERVE(6/10) reservation ends; persistent reservations survive. */
    synchronized void nexusLost(String nexus) {
        if (nexus.equals(reserveHolder)) {
            reserveHolder = null;
            updateAnyReservation();
        }
    }

    /** LOGICAL UNIT RESET / target reset: RESERVE(6/10) reservations end; persistent ones survive. */
    synchronized void reset() {
        reserveHolder = null;
        updateAnyReservation();
    }
}
