/**
 * The SCSI command set (SPC-4 / SBC-3) over {@link io.stripestack.blockdev.BlockDevice}s.
 *
 * <p>Wiring: build one {@link io.stripestack.targetserver.scsi.LogicalUnit} per LUN from the top device of its
 * stack, a {@link io.stripestack.targetserver.scsi.LogicalUnitIdentity} and a read-only flag, and hand the map of
 * LUN numbers to a {@link io.stripestack.targetserver.scsi.ScsiTarget}, the
 * {@link io.stripestack.targetserver.scsi.ScsiCommandRouter} the iSCSI transport calls.
 *
 * <p>Command families: {@link io.stripestack.targetserver.scsi.LogicalUnit} dispatches each command through
 * {@code CommandTable} (immutable, shared by all units) to {@code SpcCommands}, {@code SbcCommands},
 * {@code Reservations} or {@code CopyManager}; REPORT SUPPORTED OPERATION CODES and the reservation rules read the
 * same table. EXTENDED COPY reaches the units of the {@link io.stripestack.targetserver.scsi.CopyTargets} its unit was
 * built with: give the LUNs of one target one registry.
 *
 * <p>Threads and locks: {@code ScsiTarget.execute} runs on many I/O worker threads at once and blocks on
 * device I/O. Per logical unit: mode pages (volatile WCE and SWP; MODE SELECT under the {@code ModePages}
 * monitor), unit attentions (one monitor per nexus queue), reservations (the {@code Reservations} monitor, skipped
 * lock-free while none exists), copy statuses (the {@code CopyManager} map's monitor), and a
 * {@link java.util.concurrent.locks.StampedLock} in {@code SbcCommands} that every writing command holds shared
 * (an EXTENDED COPY too, on each destination in turn) and the read-modify-write commands (COMPARE AND WRITE,
 * ORWRITE) hold exclusively. No lock is held across more than one logical unit, and none but the write-order lock is
 * held during device I/O.
 *
 * <p>Errors leave as CHECK CONDITION with fixed-format sense data; nothing here throws to the transport.
 */
package io.stripestack.targetserver.scsi;
