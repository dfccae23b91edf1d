package io.stripestack.targetserver.scsi;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.Quiesce;
import java.util.concurrent.TimeUnit;

/**
 * One SCSI logical unit (SBC-3 direct-access block device) over a {@link BlockDevice}: the entry point that
 * reports unit attentions, checks reservations and dispatches each command through {@link CommandTable} to
 * its family, {@link SpcCommands} (the unit's own commands), {@link SbcCommands} (the medium's),
 * {@link Reservations} or {@link CopyManager} (EXTENDED COPY between the units of its {@link CopyTargets}), which
 * answer with status and fixed-format sense data.
 *
 * <p>Concurrency: {@link #execute} runs on many worker threads at once; the device is thread-safe.
 * <ul>
 *   <li>Identity, geometry and INQUIRY pages are fixed at construction (final fields), except the block count:
 *       volatile, grown under this object's monitor by {@link #capacityChanged} (the thread that learns the array
 *       grew), read once by each command that checks a range.</li>
 *   <li>The read-only flag: volatile, set by the administration thread, read once by each command that checks it.</li>
 *   <li>Removal at run time: the commands inside {@link #execute} are entered in a {@link Quiesce}; the
 *       administration suspends it for good (commands that come later are refused) and waits until none is
 *       inside before the device is closed.</li>
 *   <li>Mode pages: {@link ModePages} (volatile WCE and SWP, MODE SELECT serialized on its monitor).</li>
 *   <li>Unit attentions: {@link UnitAttentions} (per-nexus queues with their own monitors).</li>
 *   <li>Reservations: {@link Reservations} (all state under its monitor, checked once per command).</li>
 *   <li>COMPARE AND WRITE and ORWRITE atomicity: the write-order lock of {@link SbcCommands}, which EXTENDED
 *       COPY takes too when this unit is its destination.</li>
 *   <li>Copy statuses for RECEIVE COPY RESULTS: {@link CopyManager} (under its own monitor).</li>
 * </ul>
 */
public final class LogicalUnit {
    /** MAXIMUM TRANSFER LENGTH when the device states no limit (before rounding to full stripes). */
    static final int DEFAULT_MAX_TRANSFER_BYTES = 1 << 20;
    static final int MAX_COMPARE_AND_WRITE_BLOCKS = 64;
    static final int MAX_UNMAP_DESCRIPTORS = 64;
    /**
     * MAXIMUM UNMAP LBA COUNT: bounded so that one command cannot occupy a worker for long (libiscsi's
     * conformance suite also expects a stated limit to be at most 2^20).
     */
    static final long MAX_UNMAP_BLOCKS = 1L << 20;
    /**
     * MAXIMUM WRITE SAME LENGTH: the largest count WRITE SAME(10) can express, the same for WRITE SAME(16) (Linux
     * LIO's default too). At most 32 MiB (512-byte blocks) or 256 MiB (4 KiB blocks) per command keeps one WRITE
     * SAME well inside an initiator's command timeout even on a degraded array.
     */
    static final int MAX_WRITE_SAME_BLOCKS = 0xFFFF;
    /** How much of the medium one GET LBA STATUS reads to tell zero-filled (deallocated) blocks from mapped ones. */
    static final int LBA_STATUS_SCAN_BYTES = 1 << 20;

    private final BlockDevice device;
    private final LogicalUnitIdentity identity;
    /** Set at construction and by the administration ({@link #setReadOnly}); read once per writing command. */
    private volatile boolean readOnly;
    private final int blockSize;
    /** Grows when the device below did ({@link #capacityChanged}); read once per command that needs it. */
    private volatile long blockCount;
    private final int granularityBlocks;
    private final int optimalBlocks;
    private final int maxTransferBlocks;
    private final int physicalBlockExponent;
    private final int lowestAlignedLba;
    private final boolean deviceDiscards;
    private final CopyTargets copyTargets;

    /**
     * Commands inside {@link #execute}; suspended once, for good, when the unit leaves its target at run time (a
     * command that found the unit just before is turned away), and the administration waits for none inside.
     */
    private final Quiesce commands = new Quiesce();

    private final ModePages modePages = new ModePages();
    private final UnitAttentions unitAttentions = new UnitAttentions();
    private final Reservations reservations = new Reservations();
    private final SpcCommands spc;
    private final SbcCommands sbc;
    private final CopyManager copyManager;

    /**
     * A unit whose EXTENDED COPY reaches only itself.
     *
     * @param device   the top of the LUN's stack; its size must be a whole number of logical blocks
     * @param identity INQUIRY strings, serial number and NAA designator
     * @param readOnly whether writes are refused with DATA PROTECT / WRITE PROTECTED
     */
    public LogicalUnit(BlockDevice device, LogicalUnitIdentity identity, boolean readOnly) {
        this(device, identity, readOnly, new CopyTargets());
    }

    /**
     * A unit that joins {@code copyTargets}: its EXTENDED COPY reaches every unit there, and theirs reach it.
     *
     * @param copyTargets the registry of the LUNs of this unit's iSCSI target; a unit with the same NAA
     *                    designator there is refused
     */
    public LogicalUnit(BlockDevice device, LogicalUnitIdentity identity, boolean readOnly, CopyTargets copyTargets) {
        this.device = device;
        this.identity = identity;
        this.readOnly = readOnly;
        this.blockSize = device.logicalBlockSize();
        this.blockCount = device.size() / blockSize;
        Geometry g = device.geometry();
        this.granularityBlocks = Math.max(1, g.minimumIo() / blockSize);
        this.optimalBlocks = Math.max(granularityBlocks, g.optimalIo() / blockSize);
        int wantedMax = (g.maxTransfer() > 0 ? g.maxTransfer() : DEFAULT_MAX_TRANSFER_BYTES) / blockSize;
        // Linux's sd ignores OPTIMAL TRANSFER LENGTH unless MAXIMUM TRANSFER LENGTH is at least as large; a
        // whole number of optimal units keeps requests split by the initiator on full-stripe boundaries.
        this.maxTransferBlocks = Math.max(optimalBlocks, wantedMax - wantedMax % optimalBlocks);
        // The physical block stands for the device's minimum I/O, capped at 4 KiB: initiators size file system
        // sectors by it, and a 64 KiB "sector" would do more harm than the lost alignment information.
        int physical = Math.max(blockSize, Math.min(Integer.highestOneBit(g.minimumIo()), 4096));
        this.physicalBlockExponent = Integer.numberOfTrailingZeros(physical / blockSize);
        this.lowestAlignedLba = (int) ((g.alignmentOffset() % physical) / blockSize);
        this.deviceDiscards = device.supportsDiscard();
        this.copyTargets = copyTargets;

        // The families read the identity and geometry set above.
        this.spc = new SpcCommands(this, modePages, unitAttentions);
        this.sbc = new SbcCommands(this, modePages);
        this.copyManager = new CopyManager(copyTargets, blockSize);
        // Last, complete: the registry publishes the unit to the worker threads.
        copyTargets.add(this);
    }

    public BlockDevice device() {
        return device;
    }

    public LogicalUnitIdentity identity() {
        return identity;
    }

    public boolean readOnly() {
        return readOnly;
    }

    /**
     * Makes the unit read-only or writable at run time (the device below must take writes for the latter).
     * Every nexus gets MODE PARAMETERS CHANGED: the WP bit of MODE SENSE changed under it.
     */
    public void setReadOnly(boolean value) {
        if (readOnly != value) {
            readOnly = value;
            unitAttentions.raiseForOthers(null, UnitAttentions.MODE_PARAMETERS_CHANGED);
        }
    }

    /** The unit left its target at run time: EXTENDED COPY of the target's other units can no longer reach it. */
    void leaveCopyTargets() {
        copyTargets.remove(this);
    }

    /**
     * Whether the medium is write-protected now: the unit is read-only, or the control mode page's SWP is set.
     * Every command that modifies the medium is then refused with DATA PROTECT / WRITE PROTECTED.
     */
    boolean writeProtected() {
        return readOnly || modePages.softwareWriteProtect();
    }

    /** Whether the caching mode page's WCE is set (write-back); false means every write is flushed before GOOD. */
    public boolean writeCacheEnabled() {
        return modePages.writeCacheEnabled();
    }

    int blockSize() {
        return blockSize;
    }

    long blockCount() {
        return blockCount;
    }

    /**
     * The device below grew (an array reshaped onto more members): the unit takes the new size and every I_T nexus
     * gets CAPACITY DATA HAS CHANGED, so initiators know to read the capacity again.
     *
     * @return the new number of logical blocks
     */
    public long capacityChanged() {
        long blocks = device.resized() / blockSize;
        synchronized (this) {
            if (blocks <= blockCount) {
                return blockCount;
            }
            blockCount = blocks;
        }
        unitAttentions.raiseForOthers(null, UnitAttentions.CAPACITY_DATA_CHANGED);
        return blocks;
    }

    int physicalBlockExponent() {
        return physicalBlockExponent;
    }

    int lowestAlignedLba() {
        return lowestAlignedLba;
    }

    int optimalGranularityBlocks() {
        return granularityBlocks;
    }

    int optimalTransferBlocks() {
        return optimalBlocks;
    }

    int maxTransferBlocks() {
        return maxTransferBlocks;
    }

    boolean offersUnmap() {
        return deviceDiscards && !readOnly;
    }

    UnitAttentions unitAttentions() {
        return unitAttentions;
    }

    Reservations reservations() {
        return reservations;
    }

    SpcCommands spc() {
        return spc;
    }

    SbcCommands sbc() {
        return sbc;
    }

    CopyManager copyManager() {
        return copyManager;
    }

    // ------------------------------------------------------------------------------------------------
    // Dispatch

    /**
     * Runs {@code cmd} against this logical unit through {@link CommandTable}: a pending unit attention ends
     * it first, then a reservation conflict; a command the table lacks is refused after both. SCSI errors
     * leave as {@link SenseException}. Entered in {@link #commands} while it runs (no allocation, no lock).
     */
    void execute(ScsiCommand cmd) {
        if (!commands.tryEnter()) {
            throw SenseException.logicalUnitNotSupported();   // the unit was detached
        }
        try {
            dispatch(cmd);
        } finally {
            commands.exit();
        }
    }

    /**
     * The unit left its target (run-time administration): commands that still find it are refused from here on;
     * returns once no command is inside the unit any more, or false after {@code timeoutMillis}.
     */
    public boolean detachAndAwaitIdle(long timeoutMillis) throws InterruptedException {
        return commands.suspend(timeoutMillis, TimeUnit.MILLISECONDS);
    }

    private void dispatch(ScsiCommand cmd) {
        byte[] cdb = cmd.cdb();
        int opcode = cmd.opcode();
        CommandTable.Command[] group = CommandTable.withOpcode(opcode);
        CommandTable.Command command = CommandTable.find(group, cdb);
        // A service action the unit lacks is judged by the rules of its opcode's others (the table keeps them equal).
        CommandTable.Command rules = command != null ? command : group.length > 0 ? group[0] : null;
        if (rules == null || !rules.is(CommandTable.IGNORES_UNIT_ATTENTION)) {
            int attention = unitAttentions.take(cmd.nexus());
            if (attention >= 0) {
                throw SenseException.unitAttention(attention);
            }
        }
        if (reservations.conflicts(cmd.nexus(), rules, cdb)) {
            cmd.completeWithStatus(ScsiCommand.RESERVATION_CONFLICT);
            return;
        }
        if (command == null) {
            throw group.length == 0 ? SenseException.invalidOpcode(opcode) : SenseException.invalidFieldInCdb(1, 4);
        }
        command.handler().execute(this, cmd, cdb);
    }
}
