package io.stripestack.targetserver.scsi;

import java.util.List;

/**
 * The SCSI side of one iSCSI target: its LUNs and the per-nexus state (unit attentions,
 * reservations). The transport calls it; it knows nothing of iSCSI.
 *
 * <p>Concurrency: every method may be called from many threads at once. {@link #execute} blocks
 * (device I/O): call it on an I/O worker thread, never on a network event loop.
 */
public interface ScsiCommandRouter {

    /** Runs the command to completion and fills its response side. Never throws. */
    void execute(ScsiCommand command);

    /** The LUN numbers this target exposes, ascending (REPORT LUNS answers with them). */
    List<Long> luns();

    /** A new I_T nexus logged in (a power-on/reset unit attention may be queued for it). */
    void nexusAdded(String nexus);

    /** The session ended: drop the nexus's unit attentions, copy statuses and RESERVE(6/10) reservations it held. */
    void nexusRemoved(String nexus);

    /**
     * LOGICAL UNIT RESET from {@code nexus}: clears RESERVE(6/10) reservations and queues a unit attention
     * to every nexus, {@code nexus} included (SAM-5: all I_T nexuses learn of the reset).
     */
    void lunReset(String nexus, long lun);

    /** TARGET WARM/COLD RESET from {@code nexus}. */
    void targetReset(String nexus);
}
