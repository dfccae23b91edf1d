package io.stripestack.targetserver.scsi;

import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The logical units an EXTENDED COPY may name as its copy source or destination, by the NAA designator of their
 * device identification page (VPD 0x83). Share one among the LUNs of one iSCSI target and no further: an
 * initiator logged in to that target may address each of them anyway, while a wider registry would let it read
 * or overwrite LUNs it is not allowed to log in to (Linux LIO's CVE-2020-28374).
 *
 * <p>Concurrency: each {@link LogicalUnit} joins the registry it is built with, on the thread that builds the
 * target; I/O worker threads look units up while commands run. The map is concurrent, so a unit is published
 * to the workers by its insertion. A unit removed at run time leaves it (the administration's thread).
 */
public final class CopyTargets {
    private final Map<String, LogicalUnit> byNaa = new ConcurrentHashMap<>();

    /** Called by the unit's constructor, last. */
    void add(LogicalUnit unit) {
        String naa = HexFormat.of().formatHex(unit.identity().naaBytes());
        if (byNaa.putIfAbsent(naa, unit) != null) {
            throw new IllegalArgumentException("two logical units of one target have the NAA designator " + naa
                    + "; give them distinct serial numbers or stable ids in the configuration");
        }
    }

    /** Called when the unit leaves its target at run time: an EXTENDED COPY can no longer name it. */
    void remove(LogicalUnit unit) {
        byNaa.remove(HexFormat.of().formatHex(unit.identity().naaBytes()), unit);
    }

    /** The unit whose NAA designator is {@code naa}, or null. */
    LogicalUnit find(byte[] naa) {
        return byNaa.get(HexFormat.of().formatHex(naa));
    }
}
