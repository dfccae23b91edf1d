package io.stripestack.target.scsi;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;

/**
 * One SCSI logical unit (SBC-3 direct-access block device) over a {@link BlockDevice}: the entry point that
 * reports unit attentions, checks reservations and hands each command to its family, {@link SpcCommands}
 * (the unit's own commands), {@link SbcCommands} (the medium's) or {@link Reservations}, which answer with
 * status and fixed-format sense data.
 *
 * <p>Concurrency: {@link #execute} runs on many worker threads at once; the device is thread-safe.
 * <ul>
 *   <li>Identity, geometry and INQUIRY pages are fixed at construction (final fields).</li>
 *   <li>Mode pages: {@link ModePages} (volatile WCE, MODE SELECT serialized on its monitor).</li>
 *   <li>Unit attentions: {@link UnitAttentions} (per-nexus queues with their own monitors).</li>
 *   <li>Reservations: {@link Reservations} (all state under its monitor, checked once per command).</li>
 *   <li>COMPARE AND WRITE and ORWRITE atomicity: the write-order lock of {@link SbcCommands}.</li>
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
    private final boolean readOnly;
    private final int blockSize;
    private final long blockCount;
    private final int granularityBlocks;
    private final int optimalBlocks;
    private final int maxTransferBlocks;
    private final int physicalBlockExponent;
    private final int lowestAlignedLba;
    private final boolean offersUnmap;

    private final ModePages modePages = new ModePages();
    private final UnitAttentions unitAttentions = new UnitAttentions();
    private final Reservations reservations = new Reservations();
    private final SpcCommands spc;
    private final SbcCommands sbc;

    /**
     * @param device   the top of the LUN's stack; its size must be a whole number of logical blocks
     * @param identity INQUIRY strings, serial number and NAA designator
     * @param readOnly whether writes are refused with DATA PROTECT / WRITE PROTECTED
     */
    public LogicalUnit(BlockDevice device, LogicalUnitIdentity identity, boolean readOnly) {
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
        this.offersUnmap = device.supportsDiscard() && !readOnly;


        // Last: the families read the identity and geometry set above.
        this.spc = new SpcCommands(this, modePages, unitAttentions);
        this.sbc = new SbcCommands(this, modePages);
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
        return offersUnmap;
    }

    UnitAttentions unitAttentions() {
        return unitAttentions;
    }

    Reservations reservations() {
        return reservations;
    }

    // ------------------------------------------------------------------------------------------------
    // Dispatch

    /** Runs {@code cmd} against this logical unit; SCSI errors leave as {@link SenseException}. */
    void execute(ScsiCommand cmd) {
        byte[] cdb = cmd.cdb();
        int opcode = cmd.opcode();
        if (opcode != Opcodes.INQUIRY && opcode != Opcodes.REQUEST_SENSE && opcode != Opcodes.REPORT_LUNS) {
            int attention = unitAttentions.take(cmd.nexus());
            if (attention >= 0) {
                throw SenseException.unitAttention(attention);
            }
        }
        if (reservations.conflicts(cmd.nexus(), opcode, cdb)) {
            cmd.completeWithStatus(ScsiCommand.RESERVATION_CONFLICT);
            return;
        }
        switch (opcode) {
            case Opcodes.TEST_UNIT_READY -> spc.testUnitReady(cmd);
            case Opcodes.REQUEST_SENSE -> spc.requestSense(cmd, cdb);
            case Opcodes.INQUIRY -> spc.inquiry(cmd, cdb);
            case Opcodes.MODE_SENSE_6 -> spc.modeSense(cmd, cdb, false);
            case Opcodes.MODE_SENSE_10 -> spc.modeSense(cmd, cdb, true);
            case Opcodes.MODE_SELECT_6 -> spc.modeSelect(cmd, cdb, false);
            case Opcodes.MODE_SELECT_10 -> spc.modeSelect(cmd, cdb, true);
            case Opcodes.READ_CAPACITY_10 -> sbc.readCapacity10(cmd, cdb);
            case Opcodes.SERVICE_ACTION_IN_16 -> {
                switch (cdb[1] & 0x1f) {
                    case Opcodes.SA_READ_CAPACITY_16 -> sbc.readCapacity16(cmd, cdb);
                    case Opcodes.SA_GET_LBA_STATUS -> sbc.getLbaStatus(cmd, cdb);
                    default -> throw SenseException.invalidFieldInCdb(1, 4);
                }
            }
            case Opcodes.READ_6 -> sbc.read(cmd, Cdb.u24(cdb, 1) & 0x1FFFFF, cdb[4] == 0 ? 256 : Cdb.u8(cdb, 4), 4);
            case Opcodes.READ_10 -> sbc.readWithFlags(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7), 7);
            case Opcodes.READ_12 -> sbc.readWithFlags(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u32(cdb, 6), 6);
            case Opcodes.READ_16 -> sbc.readWithFlags(cmd, cdb, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10), 10);
            case Opcodes.WRITE_6 -> sbc.write(cmd, Cdb.u24(cdb, 1) & 0x1FFFFF, cdb[4] == 0 ? 256 : Cdb.u8(cdb, 4), 4, false);
            case Opcodes.WRITE_10 -> sbc.writeWithFlags(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7), 7);
            case Opcodes.WRITE_12 -> sbc.writeWithFlags(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u32(cdb, 6), 6);
            case Opcodes.WRITE_16 -> sbc.writeWithFlags(cmd, cdb, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10), 10);
            case Opcodes.WRITE_AND_VERIFY_10 -> sbc.writeAndVerify(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7), 7);
            case Opcodes.WRITE_AND_VERIFY_12 -> sbc.writeAndVerify(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u32(cdb, 6), 6);
            case Opcodes.WRITE_AND_VERIFY_16 -> sbc.writeAndVerify(cmd, cdb, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10), 10);
            case Opcodes.VERIFY_10 -> sbc.verify(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7), 7);
            case Opcodes.VERIFY_12 -> sbc.verify(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u32(cdb, 6), 6);
            case Opcodes.VERIFY_16 -> sbc.verify(cmd, cdb, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10), 10);
            case Opcodes.SYNCHRONIZE_CACHE_10 -> sbc.synchronizeCache(cmd, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7));
            case Opcodes.SYNCHRONIZE_CACHE_16 -> sbc.synchronizeCache(cmd, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10));
            case Opcodes.PRE_FETCH_10 -> sbc.preFetch(cmd, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7));
            case Opcodes.PRE_FETCH_16 -> sbc.preFetch(cmd, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10));
            case Opcodes.ORWRITE_16 -> sbc.orWrite(cmd, cdb);
            case Opcodes.WRITE_SAME_10 -> sbc.writeSame(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7), 7, false);
            case Opcodes.WRITE_SAME_16 -> sbc.writeSame(cmd, cdb, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10), 10, (cdb[1] & 0x01) != 0);
            case Opcodes.UNMAP -> sbc.unmap(cmd, cdb);
            case Opcodes.COMPARE_AND_WRITE -> sbc.compareAndWrite(cmd, cdb);
            case Opcodes.START_STOP_UNIT -> sbc.startStopUnit(cmd, cdb);
            case Opcodes.PREVENT_ALLOW_MEDIUM_REMOVAL -> sbc.preventAllowMediumRemoval(cmd);
            case Opcodes.RESERVE_6, Opcodes.RESERVE_10 -> reservations.reserve(cmd, cdb);
            case Opcodes.RELEASE_6, Opcodes.RELEASE_10 -> reservations.release(cmd, cdb);
            case Opcodes.PERSISTENT_RESERVE_IN -> reservations.persistentReserveIn(cmd, cdb);
            case Opcodes.PERSISTENT_RESERVE_OUT -> reservations.persistentReserveOut(cmd, cdb, unitAttentions);
            case Opcodes.MAINTENANCE_IN -> {
                if ((cdb[1] & 0x1f) != Opcodes.SA_REPORT_SUPPORTED_OPERATION_CODES) {
                    throw SenseException.invalidFieldInCdb(1, 4);
                }
                spc.reportSupportedOperationCodes(cmd, cdb);
            }
            case Opcodes.READ_DEFECT_DATA_10 -> sbc.readDefectData(cmd, Cdb.u8(cdb, 2), Cdb.u16(cdb, 7), false);
            case Opcodes.READ_DEFECT_DATA_12 -> sbc.readDefectData(cmd, Cdb.u8(cdb, 1),
                    (int) Math.min(Cdb.u32(cdb, 6), Integer.MAX_VALUE), true);
            default -> throw SenseException.invalidOpcode(opcode);
        }
    }
}
