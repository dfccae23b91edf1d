package io.stripestack.targetserver.scsi;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The SCSI side of one target: routes each command to its {@link LogicalUnit} and answers the commands
 * that concern the target rather than one unit (REPORT LUNS, and INQUIRY / REQUEST SENSE for a LUN it
 * does not have).
 *
 * <p>Concurrency: the LUN table is an immutable snapshot (sorted arrays, no boxing per command) in a volatile
 * field; each command reads it once, without a lock. {@link #addUnit} and {@link #removeUnit} (run-time
 * administration) are serialized on this object's monitor, build the next table from the current one and
 * publish it, then queue REPORTED LUNS DATA HAS CHANGED for every nexus logged in. The logged-in nexuses are a
 * concurrent set kept by {@link #nexusAdded} / {@link #nexusRemoved}. Per-nexus state lives in the logical
 * units (see {@link LogicalUnit}); the router's methods may be called from any number of threads.
 */
public final class ScsiTarget implements ScsiCommandRouter {
    private static final Logger log = LoggerFactory.getLogger(ScsiTarget.class);

    /** Largest LUN number REPORT LUNS can express with flat space addressing (SAM-5 4.7.7). */
    public static final long MAX_LUN = 16383;

    private volatile LunTable table;
    private final Set<String> nexuses = ConcurrentHashMap.newKeySet();

    /** One published state of the LUN table; never changed after construction. */
    private record LunTable(long[] numbers, LogicalUnit[] units, List<Long> list) {
        static LunTable of(Map<Long, LogicalUnit> logicalUnits) {
            TreeMap<Long, LogicalUnit> sorted = new TreeMap<>(logicalUnits);
            long[] numbers = new long[sorted.size()];
            LogicalUnit[] units = new LogicalUnit[sorted.size()];
            int i = 0;
            for (Map.Entry<Long, LogicalUnit> e : sorted.entrySet()) {
                long lun = e.getKey();
                if (lun < 0 || lun > MAX_LUN) {
                    throw new IllegalArgumentException("LUN " + lun + " outside 0.." + MAX_LUN + "; renumber it");
                }
                numbers[i] = lun;
                units[i] = e.getValue();
                i++;
            }
            return new LunTable(numbers, units, Collections.unmodifiableList(new ArrayList<>(sorted.keySet())));
        }

        LogicalUnit find(long lun) {
            int i = Arrays.binarySearch(numbers, lun);
            return i >= 0 ? units[i] : null;
        }

        Map<Long, LogicalUnit> asMap() {
            Map<Long, LogicalUnit> map = new TreeMap<>();
            for (int i = 0; i < numbers.length; i++) {
                map.put(numbers[i], units[i]);
            }
            return map;
        }
    }

    /**
     * @param logicalUnits LUN number (0 to {@value #MAX_LUN}) to logical unit; copied
     */
    public ScsiTarget(Map<Long, LogicalUnit> logicalUnits) {
        table = LunTable.of(logicalUnits);
    }

    /** The logical unit with that number, or null. */
    public LogicalUnit logicalUnit(long lun) {
        return table.find(lun);
    }

    /**
     * Adds a unit at run time; every logged-in nexus gets REPORTED LUNS DATA HAS CHANGED on every unit, the new
     * one included, so it learns of the LUN whichever unit it addresses next.
     */
    public synchronized void addUnit(long lun, LogicalUnit unit) {
        if (table.find(lun) != null) {
            throw new IllegalArgumentException("LUN " + lun + " exists already");
        }
        Map<Long, LogicalUnit> next = table.asMap();
        next.put(lun, unit);
        table = LunTable.of(next);
        announceLunChange();
    }

    /**
     * Removes a unit at run time and returns it (null if there is none); commands already running on it finish.
     * The remaining units report REPORTED LUNS DATA HAS CHANGED to every logged-in nexus.
     */
    public synchronized LogicalUnit removeUnit(long lun) {
        LogicalUnit unit = table.find(lun);
        if (unit == null) {
            return null;
        }
        Map<Long, LogicalUnit> next = table.asMap();
        next.remove(lun);
        table = LunTable.of(next);
        unit.leaveCopyTargets();
        announceLunChange();
        return unit;
    }

    /** The I_T nexuses logged in to this target now. */
    public Set<String> nexuses() {
        return Set.copyOf(nexuses);
    }

    private void announceLunChange() {
        for (LogicalUnit unit : table.units()) {
            for (String nexus : nexuses) {
                unit.unitAttentions().raise(nexus, UnitAttentions.REPORTED_LUNS_DATA_CHANGED);
            }
        }
    }

    @Override
    public void execute(ScsiCommand cmd) {
        try {
            byte[] cdb = cmd.cdb();
            if (cdb == null || cdb.length == 0 || cdb.length < cdbLength(cmd.opcode())) {
                throw SenseException.invalidOpcode(cdb == null || cdb.length == 0 ? 0 : cmd.opcode());
            }
            if (cmd.opcode() == Opcodes.REPORT_LUNS) {
                reportLuns(cmd);
                return;
            }
            LogicalUnit unit = logicalUnit(cmd.lun());
            if (unit == null) {
                executeWithoutUnit(cmd);
                return;
            }
            unit.execute(cmd);
        } catch (SenseException e) {
            cmd.checkCondition(e.toFixedFormat());
        } catch (RuntimeException e) {
            LogicalUnit unit = logicalUnit(cmd.lun());
            log.error("LUN {} ({}): opcode 0x{} from {} failed unexpectedly, answered HARDWARE ERROR", cmd.lun(),
                    unit == null ? "no device" : unit.device().name(), Integer.toHexString(cmd.opcode()), cmd.nexus(), e);
            cmd.checkCondition(SenseException.internalTargetFailure().toFixedFormat());
        }
    }

    /** The CDB length implied by the opcode's group code (SPC-4 4.2.5.1); 6 for groups without a fixed length. */
    private static int cdbLength(int opcode) {
        return switch (opcode >>> 5) {
            case 1, 2 -> 10;
            case 4 -> 16;
            case 5 -> 12;
            default -> 6;
        };
    }

    private static void executeWithoutUnit(ScsiCommand cmd) {
        byte[] cdb = cmd.cdb();
        switch (cmd.opcode()) {
            case Opcodes.INQUIRY -> {
                if ((cdb[1] & 0x01) != 0 || cdb[2] != 0) {
                    throw SenseException.logicalUnitNotSupported();
                }
                CommandData.respond(cmd, InquiryData.notConnected(), Cdb.u16(cdb, 3));
            }
            case Opcodes.REQUEST_SENSE -> {
                byte[] sense = SenseException.logicalUnitNotSupported().toFixedFormat();
                CommandData.respond(cmd, sense, Cdb.u8(cdb, 4));
            }
            default -> throw SenseException.logicalUnitNotSupported();
        }
    }

    /** REPORT LUNS (SPC-4 6.33): every LUN for SELECT REPORT 0, 1 and 2 (there are no well-known LUNs). */
    private void reportLuns(ScsiCommand cmd) {
        byte[] cdb = cmd.cdb();
        int select = Cdb.u8(cdb, 2);
        if (select > 2) {
            throw SenseException.invalidFieldInCdb(2, -1);
        }
        long allocation = Cdb.u32(cdb, 6);
        if (allocation < 16) {
            throw SenseException.invalidFieldInCdb(6, -1);
        }
        boolean wellKnownOnly = select == 1;
        long[] lunNumbers = table.numbers();
        int count = wellKnownOnly ? 0 : lunNumbers.length;
        byte[] d = new byte[8 + 8 * count];
        Cdb.put32(d, 0, 8L * count);
        for (int i = 0; i < count; i++) {
            long lun = lunNumbers[i];
            if (lun < 256) {
                d[8 + 8 * i + 1] = (byte) lun;                   // peripheral device addressing
            } else {
                Cdb.put16(d, 8 + 8 * i, 0x4000 | (int) lun);     // flat space addressing
            }
        }
        CommandData.respond(cmd, d, (int) Math.min(allocation, Integer.MAX_VALUE));
    }

    @Override
    public List<Long> luns() {
        return table.list();
    }

    @Override
    public void nexusAdded(String nexus) {
        nexuses.add(nexus);
        for (LogicalUnit unit : table.units()) {
            unit.unitAttentions().raise(nexus, UnitAttentions.POWER_ON_RESET);
        }
    }

    @Override
    public void nexusRemoved(String nexus) {
        nexuses.remove(nexus);
        for (LogicalUnit unit : table.units()) {
            unit.unitAttentions().forget(nexus);
            unit.reservations().nexusLost(nexus);
            unit.copyManager().nexusLost(nexus);
        }
    }

    /**
     * LOGICAL UNIT RESET: RESERVE(6/10) reservations end and every nexus, the one that asked included,
     * gets BUS DEVICE RESET FUNCTION OCCURRED (SAM-5 5.14; every path of a multipath initiator must learn
     * that its commands were aborted).
     */
    @Override
    public void lunReset(String nexus, long lun) {
        LogicalUnit unit = logicalUnit(lun);
        if (unit != null) {
            reset(unit, UnitAttentions.DEVICE_RESET);
        }
    }

    /** TARGET WARM/COLD RESET: as a logical unit reset of every unit, reported as POWER ON OR RESET. */
    @Override
    public void targetReset(String nexus) {
        for (LogicalUnit unit : table.units()) {
            reset(unit, UnitAttentions.POWER_ON_RESET);
        }
    }

    private static void reset(LogicalUnit unit, int attention) {
        unit.reservations().reset();
        unit.unitAttentions().raiseForOthers(null, attention);
    }
}
