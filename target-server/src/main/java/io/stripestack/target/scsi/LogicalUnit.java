package io.stripestack.target.scsi;

import io.netty.buffer.ByteBuf;
import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MediumErrorException;
import java.io.IOException;
import java.util.Arrays;
import java.util.concurrent.locks.StampedLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One SCSI logical unit (SBC-3 direct-access block device) over a {@link BlockDevice}: decodes the CDB,
 * checks it, moves the data between the command's buffers and the device, and answers with status and
 * fixed-format sense data.
 *
 * <p>Data path: a READ allocates one pooled direct buffer of the transfer size from the command's allocator
 * and lets the device read straight into it through the buffer's own cached NIO view (no copy in user
 * space, no further allocation); a WRITE hands the device an NIO view of the Data-Out buffer's memory (one
 * small view object, no copy) unless Data-Out arrived as several components, which are gathered first.
 *
 * <p>Concurrency: {@link #execute} runs on many worker threads at once; the device is thread-safe.
 * <ul>
 *   <li>Identity, geometry and INQUIRY pages are fixed at construction (final fields).</li>
 *   <li>Mode pages: {@link ModePages} (volatile WCE, MODE SELECT serialized on its monitor).</li>
 *   <li>Unit attentions: {@link UnitAttentions} (per-nexus queues with their own monitors).</li>
 *   <li>Reservations: {@link Reservations} (all state under its monitor, checked once per command).</li>
 *   <li>COMPARE AND WRITE and ORWRITE atomicity: {@link #writeOrder}, a {@link StampedLock}. Every command that
 *       modifies the medium holds its read (shared) lock for the duration of its device writes, so ordinary
 *       writes run in parallel; COMPARE AND WRITE and ORWRITE hold the write (exclusive) lock from their read to
 *       their write, so no other write can land between the two.</li>
 * </ul>
 */
public final class LogicalUnit {
    private static final Logger log = LoggerFactory.getLogger(LogicalUnit.class);

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
    private static final int MAX_LBA_STATUS_DESCRIPTORS = 256;
    private static final int LBA_STATUS_DESCRIPTOR_LENGTH = 16;
    /** PROVISIONING STATUS of an LBA status descriptor (SBC-3 table 59). */
    private static final int LBA_MAPPED = 0;
    private static final int LBA_DEALLOCATED = 1;

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

    private final byte[] standardInquiry;
    private final byte[] supportedVpdPages;
    private final byte[] unitSerialNumber;
    private final byte[] deviceIdentification;
    private final byte[] blockLimits;
    private final byte[] blockDeviceCharacteristics;
    private final byte[] logicalBlockProvisioning;

    private final ModePages modePages = new ModePages();
    private final UnitAttentions unitAttentions = new UnitAttentions();
    private final Reservations reservations = new Reservations();
    private final StampedLock writeOrder = new StampedLock();

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

        this.standardInquiry = InquiryData.standard(identity);
        this.supportedVpdPages = InquiryData.supportedPages(offersUnmap);
        this.unitSerialNumber = InquiryData.unitSerialNumber(identity);
        this.deviceIdentification = InquiryData.deviceIdentification(identity);
        this.blockLimits = InquiryData.blockLimits(this);
        this.blockDeviceCharacteristics = InquiryData.blockDeviceCharacteristics();
        this.logicalBlockProvisioning = offersUnmap ? InquiryData.logicalBlockProvisioning(device.discardZeroes()) : null;
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

    long maxUnmapBlocks() {
        return MAX_UNMAP_BLOCKS;
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
            case Opcodes.TEST_UNIT_READY -> cmd.complete(null);
            case Opcodes.REQUEST_SENSE -> requestSense(cmd, cdb);
            case Opcodes.INQUIRY -> inquiry(cmd, cdb);
            case Opcodes.MODE_SENSE_6 -> modeSense(cmd, cdb, false);
            case Opcodes.MODE_SENSE_10 -> modeSense(cmd, cdb, true);
            case Opcodes.MODE_SELECT_6 -> modeSelect(cmd, cdb, false);
            case Opcodes.MODE_SELECT_10 -> modeSelect(cmd, cdb, true);
            case Opcodes.READ_CAPACITY_10 -> readCapacity10(cmd, cdb);
            case Opcodes.SERVICE_ACTION_IN_16 -> serviceActionIn16(cmd, cdb);
            case Opcodes.READ_6 -> read(cmd, Cdb.u24(cdb, 1) & 0x1FFFFF, cdb[4] == 0 ? 256 : Cdb.u8(cdb, 4), 4);
            case Opcodes.READ_10 -> readWithFlags(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7), 7);
            case Opcodes.READ_12 -> readWithFlags(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u32(cdb, 6), 6);
            case Opcodes.READ_16 -> readWithFlags(cmd, cdb, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10), 10);
            case Opcodes.WRITE_6 -> write(cmd, Cdb.u24(cdb, 1) & 0x1FFFFF, cdb[4] == 0 ? 256 : Cdb.u8(cdb, 4), 4, false);
            case Opcodes.WRITE_10 -> writeWithFlags(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7), 7);
            case Opcodes.WRITE_12 -> writeWithFlags(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u32(cdb, 6), 6);
            case Opcodes.WRITE_16 -> writeWithFlags(cmd, cdb, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10), 10);
            case Opcodes.WRITE_AND_VERIFY_10 -> writeAndVerify(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7), 7);
            case Opcodes.WRITE_AND_VERIFY_12 -> writeAndVerify(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u32(cdb, 6), 6);
            case Opcodes.WRITE_AND_VERIFY_16 -> writeAndVerify(cmd, cdb, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10), 10);
            case Opcodes.VERIFY_10 -> verify(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7), 7);
            case Opcodes.VERIFY_12 -> verify(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u32(cdb, 6), 6);
            case Opcodes.VERIFY_16 -> verify(cmd, cdb, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10), 10);
            case Opcodes.SYNCHRONIZE_CACHE_10 -> synchronizeCache(cmd, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7));
            case Opcodes.SYNCHRONIZE_CACHE_16 -> synchronizeCache(cmd, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10));
            case Opcodes.PRE_FETCH_10 -> preFetch(cmd, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7));
            case Opcodes.PRE_FETCH_16 -> preFetch(cmd, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10));
            case Opcodes.ORWRITE_16 -> orWrite(cmd, cdb);
            case Opcodes.WRITE_SAME_10 -> writeSame(cmd, cdb, Cdb.u32(cdb, 2), Cdb.u16(cdb, 7), 7, false);
            case Opcodes.WRITE_SAME_16 -> writeSame(cmd, cdb, Cdb.u64(cdb, 2), Cdb.u32(cdb, 10), 10, (cdb[1] & 0x01) != 0);
            case Opcodes.UNMAP -> unmap(cmd, cdb);
            case Opcodes.COMPARE_AND_WRITE -> compareAndWrite(cmd, cdb);
            case Opcodes.START_STOP_UNIT -> startStopUnit(cmd, cdb);
            // The medium is not removable (RMB=0): SBC-3 lets such a unit accept PREVENT ALLOW as a no-op.
            case Opcodes.PREVENT_ALLOW_MEDIUM_REMOVAL -> cmd.complete(null);
            case Opcodes.RESERVE_6, Opcodes.RESERVE_10 -> reservations.reserve(cmd, cdb);
            case Opcodes.RELEASE_6, Opcodes.RELEASE_10 -> reservations.release(cmd, cdb);
            case Opcodes.PERSISTENT_RESERVE_IN -> reservations.persistentReserveIn(cmd, cdb);
            case Opcodes.PERSISTENT_RESERVE_OUT -> reservations.persistentReserveOut(cmd, cdb, unitAttentions);
            case Opcodes.MAINTENANCE_IN -> maintenanceIn(cmd, cdb);
            case Opcodes.READ_DEFECT_DATA_10 -> readDefectData(cmd, Cdb.u8(cdb, 2), Cdb.u16(cdb, 7), false);
            case Opcodes.READ_DEFECT_DATA_12 -> readDefectData(cmd, Cdb.u8(cdb, 1),
                    (int) Math.min(Cdb.u32(cdb, 6), Integer.MAX_VALUE), true);
            default -> throw SenseException.invalidOpcode(opcode);
        }
    }

    // ------------------------------------------------------------------------------------------------
    // Non-data and informational commands

    private void requestSense(ScsiCommand cmd, byte[] cdb) {
        if ((cdb[1] & 0x01) != 0) {
            throw SenseException.invalidFieldInCdb(1, 0); // DESC: descriptor-format sense is not supported
        }
        int allocation = Cdb.u8(cdb, 4);
        int attention = unitAttentions.take(cmd.nexus());
        SenseException pending = attention >= 0 ? SenseException.unitAttention(attention) : SenseException.noSense();
        respond(cmd, pending.toFixedFormat(), allocation);
    }

    private void inquiry(ScsiCommand cmd, byte[] cdb) {
        int allocation = Cdb.u16(cdb, 3);
        boolean evpd = (cdb[1] & 0x01) != 0;
        if ((cdb[1] & 0x02) != 0) {
            throw SenseException.invalidFieldInCdb(1, 1); // CMDDT is obsolete
        }
        int page = Cdb.u8(cdb, 2);
        if (!evpd) {
            if (page != 0) {
                throw SenseException.invalidFieldInCdb(2, -1);
            }
            respond(cmd, standardInquiry, allocation);
            return;
        }
        byte[] data = switch (page) {
            case InquiryData.VPD_SUPPORTED_PAGES -> supportedVpdPages;
            case InquiryData.VPD_UNIT_SERIAL_NUMBER -> unitSerialNumber;
            case InquiryData.VPD_DEVICE_IDENTIFICATION -> deviceIdentification;
            case InquiryData.VPD_BLOCK_LIMITS -> blockLimits;
            case InquiryData.VPD_BLOCK_DEVICE_CHARACTERISTICS -> blockDeviceCharacteristics;
            case InquiryData.VPD_LOGICAL_BLOCK_PROVISIONING -> logicalBlockProvisioning;
            default -> null;
        };
        if (data == null) {
            throw SenseException.invalidFieldInCdb(2, -1);
        }
        respond(cmd, data, allocation);
    }

    private void readCapacity10(ScsiCommand cmd, byte[] cdb) {
        if ((cdb[8] & 0x01) == 0 && Cdb.u32(cdb, 2) != 0) {
            throw SenseException.invalidFieldInCdb(2, -1); // LOGICAL BLOCK ADDRESS must be 0 unless PMI
        }
        byte[] d = new byte[8];
        long lastLba = blockCount - 1;
        Cdb.put32(d, 0, Math.min(lastLba, 0xFFFFFFFFL)); // 0xFFFFFFFF: use READ CAPACITY(16)
        Cdb.put32(d, 4, blockSize);
        respond(cmd, d, d.length);
    }

    private void serviceActionIn16(ScsiCommand cmd, byte[] cdb) {
        switch (cdb[1] & 0x1f) {
            case Opcodes.SA_READ_CAPACITY_16 -> readCapacity16(cmd, cdb);
            case Opcodes.SA_GET_LBA_STATUS -> getLbaStatus(cmd, cdb);
            default -> throw SenseException.invalidFieldInCdb(1, 4);
        }
    }

    private void readCapacity16(ScsiCommand cmd, byte[] cdb) {
        byte[] d = new byte[32];
        Cdb.put64(d, 0, blockCount - 1);
        Cdb.put32(d, 8, blockSize);
        d[13] = (byte) physicalBlockExponent;
        int lbp = offersUnmap ? 0x80 | (device.discardZeroes() ? 0x40 : 0) : 0; // LBPME, LBPRZ
        Cdb.put16(d, 14, lbp << 8 | lowestAlignedLba);
        respond(cmd, d, (int) Math.min(Cdb.u32(cdb, 10), Integer.MAX_VALUE));
    }

    /**
     * The medium is always spinning and cannot be ejected, so only one part of START STOP UNIT has an
     * effect: stopping (START=0) without NO_FLUSH makes cached writes durable first (SBC-3 5.25).
     */
    private void startStopUnit(ScsiCommand cmd, byte[] cdb) {
        boolean start = (cdb[4] & 0x01) != 0;
        boolean noFlush = (cdb[4] & 0x04) != 0;
        if (!start && !noFlush) {
            flush();
        }
        cmd.complete(null);
    }

    private void maintenanceIn(ScsiCommand cmd, byte[] cdb) {
        if ((cdb[1] & 0x1f) != Opcodes.SA_REPORT_SUPPORTED_OPERATION_CODES) {
            throw SenseException.invalidFieldInCdb(1, 4);
        }
        SupportedOperations.report(cmd, cdb, this);
    }

    /**
     * READ DEFECT DATA(10/12) (SBC-3 5.19, 5.20): the stack remaps nothing it could list, so both the primary
     * and the grown defect list are empty; the header says the lists asked for are present (PLISTV, GLISTV) in
     * the format asked for, which any empty list is.
     */
    private void readDefectData(ScsiCommand cmd, int flags, int allocation, boolean twelve) {
        byte[] d = new byte[twelve ? 8 : 4];
        d[1] = (byte) (flags & 0x1f); // PLISTV = REQ_PLIST, GLISTV = REQ_GLIST, DEFECT LIST FORMAT; length 0
        respond(cmd, d, allocation);
    }

    // ------------------------------------------------------------------------------------------------
    // Mode pages

    private void modeSense(ScsiCommand cmd, byte[] cdb, boolean ten) {
        boolean disableBlockDescriptors = (cdb[1] & 0x08) != 0;
        boolean longLba = ten && (cdb[1] & 0x10) != 0;
        int pc = (cdb[2] & 0xC0) >>> 6;
        byte[] pages = modePages.sense(cdb[2] & 0x3f, Cdb.u8(cdb, 3), pc, 2);
        int header = ten ? 8 : 4;
        int descriptor = disableBlockDescriptors ? 0 : longLba ? 16 : 8;
        byte[] d = new byte[header + descriptor + pages.length];
        int deviceSpecific = (readOnly ? 0x80 : 0) | 0x10; // WP, DPOFUA
        if (ten) {
            Cdb.put16(d, 0, d.length - 2);
            d[3] = (byte) deviceSpecific;
            d[4] = (byte) (longLba ? 0x01 : 0);
            Cdb.put16(d, 6, descriptor);
        } else {
            d[0] = (byte) (d.length - 1);
            d[2] = (byte) deviceSpecific;
            d[3] = (byte) descriptor;
        }
        if (descriptor == 8) {
            Cdb.put32(d, header, Math.min(blockCount, 0xFFFFFFFFL));
            Cdb.put32(d, header + 4, blockSize);
        } else if (descriptor == 16) {
            Cdb.put64(d, header, blockCount);
            Cdb.put32(d, header + 12, blockSize);
        }
        System.arraycopy(pages, 0, d, header + descriptor, pages.length);
        respond(cmd, d, ten ? Cdb.u16(cdb, 7) : Cdb.u8(cdb, 4));
    }

    private void modeSelect(ScsiCommand cmd, byte[] cdb, boolean ten) {
        if ((cdb[1] & 0x01) != 0) {
            throw SenseException.invalidFieldInCdb(1, 0); // SP: pages cannot be saved
        }
        int length = ten ? Cdb.u16(cdb, 7) : Cdb.u8(cdb, 4);
        cmd.setCommandTransferLength(length);
        if (length == 0) {
            cmd.complete(null);
            return;
        }
        byte[] params = dataOutBytes(cmd, length);
        int header = ten ? 8 : 4;
        if (length < header) {
            throw SenseException.parameterListLengthError();
        }
        int descriptorLength = ten ? Cdb.u16(params, 6) : Cdb.u8(params, 3);
        boolean longLba = ten && (params[4] & 0x01) != 0;
        int expectedDescriptor = longLba ? 16 : 8;
        if (descriptorLength != 0 && descriptorLength != expectedDescriptor) {
            throw SenseException.invalidFieldInParameterList(ten ? 6 : 3, -1);
        }
        if (header + descriptorLength > length) {
            throw SenseException.parameterListLengthError();
        }
        if (descriptorLength != 0) {
            long descriptorBlockSize = longLba ? Cdb.u32(params, header + 12) : Cdb.u24(params, header + 5);
            if (descriptorBlockSize != blockSize) {
                throw SenseException.invalidFieldInParameterList(header + (longLba ? 12 : 5), -1);
            }
        }
        if (modePages.select(params, header + descriptorLength, length)) {
            unitAttentions.raiseForOthers(cmd.nexus(), UnitAttentions.MODE_PARAMETERS_CHANGED);
        }
        cmd.complete(null);
    }

    // ------------------------------------------------------------------------------------------------
    // Reads and writes

    private void readWithFlags(ScsiCommand cmd, byte[] cdb, long lba, long blocks, int lengthByte) {
        if ((cdb[1] & 0xE0) != 0) {
            throw SenseException.invalidFieldInCdb(1, 7); // RDPROTECT: no protection information
        }
        read(cmd, lba, blocks, lengthByte);
    }

    private void read(ScsiCommand cmd, long lba, long blocks, int lengthByte) {
        int bytes = checkTransfer(lba, blocks, lengthByte);
        cmd.setCommandTransferLength(bytes);
        if (bytes == 0) {
            cmd.complete(null);
            return;
        }
        ByteBuf buffer = cmd.allocator().directBuffer(bytes, bytes);
        try {
            // The buffer is ours until complete(): its internal NIO view needs no allocation, and the device
            // keeps no reference to it after read returns.
            device.read(lba * blockSize, buffer.internalNioBuffer(0, bytes));
            buffer.writerIndex(bytes);
            cmd.complete(buffer);
            buffer = null;
        } catch (IOException e) {
            throw ioFailure(e, false, lba, blocks);
        } finally {
            if (buffer != null) {
                buffer.release();
            }
        }
    }

    private void writeWithFlags(ScsiCommand cmd, byte[] cdb, long lba, long blocks, int lengthByte) {
        if ((cdb[1] & 0xE0) != 0) {
            throw SenseException.invalidFieldInCdb(1, 7); // WRPROTECT: no protection information
        }
        write(cmd, lba, blocks, lengthByte, (cdb[1] & 0x08) != 0);
    }

    private void write(ScsiCommand cmd, long lba, long blocks, int lengthByte, boolean fua) {
        checkWritable();
        int bytes = checkTransfer(lba, blocks, lengthByte);
        cmd.setCommandTransferLength(bytes);
        int toWrite = writableBytes(cmd, bytes);
        if (toWrite > 0) {
            ByteBuf data = cmd.dataOut();
            writeShared(cmd, lba, toWrite / blockSize, data, data.readerIndex(), toWrite);
            if (fua || !modePages.writeCacheEnabled()) {
                flush();
            }
        }
        cmd.complete(null);
    }

    private void writeAndVerify(ScsiCommand cmd, byte[] cdb, long lba, long blocks, int lengthByte) {
        if ((cdb[1] & 0xE0) != 0) {
            throw SenseException.invalidFieldInCdb(1, 7);
        }
        checkWritable();
        int bytes = checkTransfer(lba, blocks, lengthByte);
        cmd.setCommandTransferLength(bytes);
        int toWrite = writableBytes(cmd, bytes);
        if (toWrite > 0) {
            ByteBuf data = cmd.dataOut();
            writeShared(cmd, lba, toWrite / blockSize, data, data.readerIndex(), toWrite);
            // Verification must see the medium, not a volatile cache: flush first, then read back and compare.
            flush();
            compareWithMedium(cmd, lba, toWrite / blockSize, data, data.readerIndex());
        }
        cmd.complete(null);
    }

    /**
     * How many of the CDB's {@code bytes} a WRITE stores. An initiator whose Expected Data Transfer Length is
     * shorter than the CDB's transfer length sends only EDTL bytes: as FCP-4 and RFC 7143 (residual overflow)
     * prescribe, the command is processed for those bytes, when they are whole blocks, and the transport
     * reports the overflow. A partial block, or a Data-Out shorter than the EDTL allows, is refused with
     * INVALID FIELD IN INFORMATION UNIT and nothing is written; bytes beyond the CDB's length are never read.
     */
    private int writableBytes(ScsiCommand cmd, int bytes) {
        int allowed = (int) Math.min(bytes, Integer.toUnsignedLong(cmd.expectedTransferLength()));
        ByteBuf data = cmd.dataOut();
        int available = data == null ? 0 : data.readableBytes();
        if (available < allowed || allowed % blockSize != 0) {
            throw SenseException.invalidFieldInInformationUnit("Data-Out holds " + available + " bytes (EDTL "
                    + cmd.expectedTransferLength() + ") of " + bytes);
        }
        return allowed;
    }

    private void verify(ScsiCommand cmd, byte[] cdb, long lba, long blocks, int lengthByte) {
        if ((cdb[1] & 0xE0) != 0) {
            throw SenseException.invalidFieldInCdb(1, 7); // VRPROTECT
        }
        int byteCheck = (cdb[1] & 0x06) >>> 1;
        if (byteCheck == 2) {
            throw SenseException.invalidFieldInCdb(1, 2);
        }
        checkRange(lba, blocks);
        if (blocks == 0) {
            cmd.setCommandTransferLength(byteCheck == 0 ? -1 : 0);
            cmd.complete(null);
            return;
        }
        if (byteCheck == 0) {
            // No data to compare: check that the medium can be read.
            cmd.setCommandTransferLength(-1);
            readMedium(cmd, lba, blocks);
        } else if (byteCheck == 1) {
            int bytes = checkTransfer(lba, blocks, lengthByte);
            cmd.setCommandTransferLength(bytes);
            ByteBuf data = requireDataOut(cmd, bytes);
            compareWithMedium(cmd, lba, blocks, data, data.readerIndex());
        } else {
            // BYTCHK 11b (SBC-4): one block of Data-Out is compared with every block of the range.
            cmd.setCommandTransferLength(blockSize);
            ByteBuf data = requireDataOut(cmd, blockSize);
            compareEachBlock(cmd, lba, blocks, data, data.readerIndex());
        }
        cmd.complete(null);
    }

    private void synchronizeCache(ScsiCommand cmd, long lba, long blocks) {
        checkRange(lba, blocks);
        flush();
        cmd.complete(null);
    }

    /**
     * PRE-FETCH(10/16) (SBC-3 5.11, 5.12). The stack has no cache a prefetched range could be parked in until
     * the initiator reads it (the readahead stage follows sequential streams, it does not hold ranges on
     * request), so this is the case SBC-3 describes as a cache without room for the blocks: nothing is
     * transferred and the status is GOOD, not CONDITION MET, with IMMED set or not.
     */
    private void preFetch(ScsiCommand cmd, long lba, long blocks) {
        checkRange(lba, blocks);
        cmd.complete(null);
    }

    // ------------------------------------------------------------------------------------------------
    // WRITE SAME, UNMAP, COMPARE AND WRITE

    private void writeSame(ScsiCommand cmd, byte[] cdb, long lba, long blocks, int lengthByte, boolean noDataOut) {
        if ((cdb[1] & 0xE0) != 0) {
            throw SenseException.invalidFieldInCdb(1, 7); // WRPROTECT
        }
        if ((cdb[1] & 0x10) != 0) {
            throw SenseException.invalidFieldInCdb(1, 4); // ANCHOR: anchored blocks are not supported
        }
        checkWritable();
        boolean unmap = (cdb[1] & 0x08) != 0;
        if (unmap && !device.supportsDiscard()) {
            throw SenseException.invalidFieldInCdb(1, 3);
        }
        checkRange(lba, 0);
        // WSNZ=0: NUMBER OF LOGICAL BLOCKS 0 means every block from the LBA to the end of the medium. Only the
        // one block of Data-Out moves, so the limit is MAXIMUM WRITE SAME LENGTH, not MAXIMUM TRANSFER LENGTH.
        if (blocks == 0) {
            blocks = blockCount - lba;
        }
        if (blocks > MAX_WRITE_SAME_BLOCKS) {
            throw SenseException.invalidFieldInCdb(lengthByte, -1);
        }
        checkRange(lba, blocks);
        cmd.setCommandTransferLength(noDataOut ? -1 : blockSize);
        ByteBuf block = noDataOut ? null : requireExactDataOut(cmd, blockSize);
        long stamp = writeOrder.readLock();
        try {
            // With UNMAP set, SBC lets the device server unmap each LBA instead of writing it, whatever the one
            // block holds; only a discard that zero-fills is used, so that unmapped blocks read as LBPRZ=1 says
            // (initiators send a zero block here; tgt and LIO unmap the same way).
            if (unmap && device.discardZeroes()) {
                device.discard(lba * blockSize, blocks * blockSize);
            } else {
                writeRepeated(cmd, lba, blocks, block);
            }
        } catch (IOException e) {
            throw ioFailure(e, true, lba, blocks);
        } finally {
            writeOrder.unlockRead(stamp);
        }
        if (!modePages.writeCacheEnabled()) {
            flush();
        }
        cmd.complete(null);
    }

    /** Writes {@code block} (or zeros when null) to every block of the range, a pooled buffer at a time. */
    private void writeRepeated(ScsiCommand cmd, long lba, long blocks, ByteBuf block) throws IOException {
        int chunkBlocks = (int) Math.min(blocks, Math.max(1, DEFAULT_MAX_TRANSFER_BYTES / blockSize));
        int chunkBytes = chunkBlocks * blockSize;
        ByteBuf pattern = cmd.allocator().directBuffer(chunkBytes, chunkBytes);
        try {
            for (int i = 0; i < chunkBlocks; i++) {
                if (block == null) {
                    pattern.writeZero(blockSize);
                } else {
                    pattern.writeBytes(block, block.readerIndex(), blockSize);
                }
            }
            long done = 0;
            while (done < blocks) {
                int n = (int) Math.min(chunkBlocks, blocks - done);
                device.write((lba + done) * blockSize, pattern.internalNioBuffer(0, n * blockSize));
                done += n;
            }
        } finally {
            pattern.release();
        }
    }

    private void unmap(ScsiCommand cmd, byte[] cdb) {
        if (!offersUnmap) {
            if (readOnly && device.supportsDiscard()) {
                throw SenseException.writeProtected();
            }
            throw SenseException.invalidOpcode(Opcodes.UNMAP);
        }
        if ((cdb[1] & 0x01) != 0) {
            throw SenseException.invalidFieldInCdb(1, 0); // ANCHOR
        }
        int length = Cdb.u16(cdb, 7);
        cmd.setCommandTransferLength(length);
        if (length == 0) {
            cmd.complete(null);
            return;
        }
        if (length < 8) {
            throw SenseException.parameterListLengthError();
        }
        byte[] params = dataOutBytes(cmd, length);
        int descriptorBytes = Math.min(Cdb.u16(params, 2), length - 8) & ~15;
        int descriptors = descriptorBytes / 16;
        if (descriptors > MAX_UNMAP_DESCRIPTORS) {
            throw SenseException.invalidFieldInParameterList(2, -1);
        }
        for (int i = 0; i < descriptors; i++) {
            int at = 8 + 16 * i;
            long count = Cdb.u32(params, at + 8);
            if (count > maxUnmapBlocks()) {
                throw SenseException.invalidFieldInParameterList(at + 8, -1);
            }
            checkRange(Cdb.u64(params, at), count);
        }
        long stamp = writeOrder.readLock();
        try {
            for (int i = 0; i < descriptors; i++) {
                int at = 8 + 16 * i;
                long lba = Cdb.u64(params, at);
                long count = Cdb.u32(params, at + 8);
                if (count > 0) {
                    try {
                        device.discard(lba * blockSize, count * blockSize);
                    } catch (IOException e) {
                        throw ioFailure(e, true, lba, count);
                    }
                }
            }
        } finally {
            writeOrder.unlockRead(stamp);
        }
        cmd.complete(null);
    }

    /**
     * GET LBA STATUS (SBC-3 5.16). The stack keeps no allocation map. A fully provisioned unit (no UNMAP offered)
     * has every block mapped: one descriptor to the end of the medium. On a unit whose discard zero-fills
     * (LBPRZ=1) a block that reads as zeros cannot be told from a deallocated one by any initiator, so such
     * blocks are reported deallocated and all others mapped; one command looks at no more than
     * {@link #LBA_STATUS_SCAN_BYTES} and as many descriptors as the allocation length holds, and the initiator
     * asks again from the LBA after the last descriptor.
     */
    private void getLbaStatus(ScsiCommand cmd, byte[] cdb) {
        long lba = Cdb.u64(cdb, 2);
        int allocation = (int) Math.min(Cdb.u32(cdb, 10), Integer.MAX_VALUE);
        if (lba < 0 || lba >= blockCount) {
            throw SenseException.lbaOutOfRange();
        }
        long remaining = blockCount - lba;
        byte[] d;
        if (!offersUnmap || !device.discardZeroes()) {
            d = new byte[8 + LBA_STATUS_DESCRIPTOR_LENGTH];
            putLbaStatusDescriptor(d, 0, lba, Math.min(remaining, 0xFFFFFFFFL), LBA_MAPPED);
        } else {
            int maxDescriptors = Math.max(1, Math.min(MAX_LBA_STATUS_DESCRIPTORS,
                    (allocation - 8) / LBA_STATUS_DESCRIPTOR_LENGTH));
            d = scanLbaStatus(cmd, lba, (int) Math.min(remaining, LBA_STATUS_SCAN_BYTES / blockSize), maxDescriptors);
        }
        Cdb.put32(d, 0, d.length - 4);
        respond(cmd, d, allocation);
    }

    /** Descriptors for the runs of zero (deallocated) and non-zero (mapped) blocks among {@code blocks} from {@code lba}. */
    private byte[] scanLbaStatus(ScsiCommand cmd, long lba, int blocks, int maxDescriptors) {
        int bytes = blocks * blockSize;
        ByteBuf medium = cmd.allocator().directBuffer(bytes, bytes);
        try {
            try {
                device.read(lba * blockSize, medium.internalNioBuffer(0, bytes));
            } catch (IOException e) {
                throw ioFailure(e, false, lba, blocks);
            }
            byte[] d = new byte[8 + maxDescriptors * LBA_STATUS_DESCRIPTOR_LENGTH];
            int descriptors = 0;
            int runStart = 0;
            int runStatus = isZero(medium, 0, blockSize) ? LBA_DEALLOCATED : LBA_MAPPED;
            for (int i = 1; i <= blocks; i++) {
                int status = i == blocks ? -1 : isZero(medium, i * blockSize, blockSize) ? LBA_DEALLOCATED : LBA_MAPPED;
                if (status != runStatus) {
                    putLbaStatusDescriptor(d, descriptors++, lba + runStart, i - runStart, runStatus);
                    if (descriptors == maxDescriptors) {
                        break;
                    }
                    runStart = i;
                    runStatus = status;
                }
            }
            return descriptors == maxDescriptors ? d : Arrays.copyOf(d, 8 + descriptors * LBA_STATUS_DESCRIPTOR_LENGTH);
        } finally {
            medium.release();
        }
    }

    private static void putLbaStatusDescriptor(byte[] d, int index, long lba, long blocks, int status) {
        int at = 8 + index * LBA_STATUS_DESCRIPTOR_LENGTH;
        Cdb.put64(d, at, lba);
        Cdb.put32(d, at + 8, blocks);
        d[at + 12] = (byte) status;
    }

    private void compareAndWrite(ScsiCommand cmd, byte[] cdb) {
        if ((cdb[1] & 0xE0) != 0) {
            throw SenseException.invalidFieldInCdb(1, 7); // WRPROTECT
        }
        long lba = Cdb.u64(cdb, 2);
        int blocks = Cdb.u8(cdb, 13);
        checkWritable();
        if (blocks > MAX_COMPARE_AND_WRITE_BLOCKS) {
            throw SenseException.invalidFieldInCdb(13, -1);
        }
        checkRange(lba, blocks);
        int half = blocks * blockSize;
        cmd.setCommandTransferLength(2L * half);
        ByteBuf data = cmd.dataOut();
        if ((data == null ? 0 : data.readableBytes()) != 2 * half) {
            // The Data-Out must be exactly the compare and write halves NUMBER OF LOGICAL BLOCKS describes; a
            // mismatch (an 8-bit count that wrapped to 0, say) means the CDB does not describe the data.
            throw SenseException.invalidFieldInCdb(13, -1);
        }
        if (blocks == 0) {
            cmd.complete(null);
            return;
        }
        long stamp = writeOrder.writeLock();
        try {
            compareWithMedium(cmd, lba, blocks, data, data.readerIndex());
            writeDevice(cmd, lba, blocks, data, data.readerIndex() + half, half);
        } finally {
            writeOrder.unlockWrite(stamp);
        }
        if ((cdb[1] & 0x08) != 0 || !modePages.writeCacheEnabled()) {
            flush();
        }
        cmd.complete(null);
    }

    /**
     * ORWRITE(16) (SBC-3 5.10): each block becomes its old contents ORed with the Data-Out. Read, OR and write
     * run under the exclusive write-order lock, like COMPARE AND WRITE, so no other write lands in between and
     * two ORWRITEs of the same block both take effect.
     */
    private void orWrite(ScsiCommand cmd, byte[] cdb) {
        if ((cdb[1] & 0xE0) != 0) {
            throw SenseException.invalidFieldInCdb(1, 7); // ORPROTECT: no protection information
        }
        checkWritable();
        long lba = Cdb.u64(cdb, 2);
        long blocks = Cdb.u32(cdb, 10);
        int bytes = checkTransfer(lba, blocks, 10);
        cmd.setCommandTransferLength(bytes);
        if (bytes == 0) {
            cmd.complete(null);
            return;
        }
        ByteBuf data = requireDataOut(cmd, bytes);
        ByteBuf merged = cmd.allocator().directBuffer(bytes, bytes);
        try {
            long stamp = writeOrder.writeLock();
            try {
                try {
                    device.read(lba * blockSize, merged.internalNioBuffer(0, bytes));
                } catch (IOException e) {
                    throw ioFailure(e, false, lba, blocks);
                }
                orInto(merged, data, data.readerIndex(), bytes);
                try {
                    device.write(lba * blockSize, merged.internalNioBuffer(0, bytes));
                } catch (IOException e) {
                    throw ioFailure(e, true, lba, blocks);
                }
            } finally {
                writeOrder.unlockWrite(stamp);
            }
        } finally {
            merged.release();
        }
        if ((cdb[1] & 0x08) != 0 || !modePages.writeCacheEnabled()) {
            flush();
        }
        cmd.complete(null);
    }

    // ------------------------------------------------------------------------------------------------
    // Helpers

    /** Checks the LBA range and the MAXIMUM TRANSFER LENGTH; returns the transfer size in bytes. */
    private int checkTransfer(long lba, long blocks, int lengthByte) {
        if (blocks > maxTransferBlocks) {
            throw SenseException.invalidFieldInCdb(lengthByte, -1);
        }
        checkRange(lba, blocks);
        return (int) blocks * blockSize;
    }

    /** LBA OUT OF RANGE unless {@code [lba, lba + blocks)} lies inside the medium (LBAs are unsigned). */
    private void checkRange(long lba, long blocks) {
        if (lba < 0 || blocks < 0 || blocks > blockCount || lba > blockCount - blocks) {
            throw SenseException.lbaOutOfRange();
        }
    }

    private void checkWritable() {
        if (readOnly) {
            throw SenseException.writeProtected();
        }
    }

    /**
     * The Data-Out buffer when it holds at least {@code bytes}; an initiator that sent less (its Expected
     * Data Transfer Length was shorter than the CDB's transfer length) gets INVALID FIELD IN INFORMATION
     * UNIT, and nothing is written.
     */
    private static ByteBuf requireDataOut(ScsiCommand cmd, int bytes) {
        ByteBuf data = cmd.dataOut();
        if (data == null || data.readableBytes() < bytes) {
            throw SenseException.invalidFieldInInformationUnit(
                    "Data-Out holds " + (data == null ? 0 : data.readableBytes()) + " of " + bytes + " bytes");
        }
        return data;
    }

    /**
     * The Data-Out buffer when it holds exactly {@code bytes}: WRITE SAME's single block has no meaning with
     * extra bytes, so unlike READ/WRITE a longer Data-Out is refused.
     */
    private static ByteBuf requireExactDataOut(ScsiCommand cmd, int bytes) {
        ByteBuf data = requireDataOut(cmd, bytes);
        if (data.readableBytes() != bytes) {
            throw SenseException.invalidFieldInInformationUnit(
                    "Data-Out holds " + data.readableBytes() + " bytes, the CDB says " + bytes);
        }
        return data;
    }

    /** A copy of a (small) parameter list from Data-Out. */
    private static byte[] dataOutBytes(ScsiCommand cmd, int length) {
        ByteBuf data = requireDataOut(cmd, length);
        byte[] params = new byte[length];
        data.getBytes(data.readerIndex(), params);
        return params;
    }

    private void writeShared(ScsiCommand cmd, long lba, long blocks, ByteBuf data, int index, int bytes) {
        long stamp = writeOrder.readLock();
        try {
            writeDevice(cmd, lba, blocks, data, index, bytes);
        } finally {
            writeOrder.unlockRead(stamp);
        }
    }

    /**
     * Writes {@code data[index, index + bytes)} at {@code lba}. A single-component buffer is handed to the
     * device as is; a composite one (Data-Out assembled from several PDUs) is first gathered into one
     * pooled direct buffer, because the device needs whole blocks per call.
     */
    private void writeDevice(ScsiCommand cmd, long lba, long blocks, ByteBuf data, int index, int bytes) {
        try {
            if (data.nioBufferCount() == 1) {
                device.write(lba * blockSize, data.nioBuffer(index, bytes));
                return;
            }
            ByteBuf contiguous = cmd.allocator().directBuffer(bytes, bytes);
            try {
                contiguous.writeBytes(data, index, bytes);
                device.write(lba * blockSize, contiguous.internalNioBuffer(0, bytes));
            } finally {
                contiguous.release();
            }
        } catch (IOException e) {
            throw ioFailure(e, true, lba, blocks);
        }
    }

    private void flush() {
        try {
            device.flush();
        } catch (IOException e) {
            log.error("{}: flush failed: {}", device.name(), e.toString(), e);
            throw SenseException.flushFailed();
        }
    }

    /** Reads the range a bounded buffer at a time, only to find out whether the medium can be read. */
    private void readMedium(ScsiCommand cmd, long lba, long blocks) {
        int chunkBlocks = (int) Math.min(blocks, maxTransferBlocks);
        ByteBuf buffer = cmd.allocator().directBuffer(chunkBlocks * blockSize);
        try {
            long done = 0;
            while (done < blocks) {
                int n = (int) Math.min(chunkBlocks, blocks - done);
                try {
                    device.read((lba + done) * blockSize, buffer.internalNioBuffer(0, n * blockSize));
                } catch (IOException e) {
                    throw ioFailure(e, false, lba + done, n);
                }
                done += n;
            }
        } finally {
            buffer.release();
        }
    }

    /** MISCOMPARE (INFORMATION = offset into Data-Out of the first differing byte) unless the medium equals {@code data}. */
    private void compareWithMedium(ScsiCommand cmd, long lba, long blocks, ByteBuf data, int index) {
        int bytes = (int) blocks * blockSize;
        ByteBuf medium = cmd.allocator().directBuffer(bytes, bytes);
        try {
            try {
                device.read(lba * blockSize, medium.internalNioBuffer(0, bytes));
            } catch (IOException e) {
                throw ioFailure(e, false, lba, blocks);
            }
            int at = firstDifference(medium, 0, data, index, bytes);
            if (at >= 0) {
                throw SenseException.miscompare(at);
            }
        } finally {
            medium.release();
        }
    }

    private void compareEachBlock(ScsiCommand cmd, long lba, long blocks, ByteBuf block, int index) {
        ByteBuf medium = cmd.allocator().directBuffer(blockSize, blockSize);
        try {
            for (long i = 0; i < blocks; i++) {
                try {
                    device.read((lba + i) * blockSize, medium.internalNioBuffer(0, blockSize));
                } catch (IOException e) {
                    throw ioFailure(e, false, lba + i, 1);
                }
                int at = firstDifference(medium, 0, block, index, blockSize);
                if (at >= 0) {
                    throw SenseException.miscompare(i * blockSize + at);
                }
            }
        } finally {
            medium.release();
        }
    }

    private static int firstDifference(ByteBuf a, int aIndex, ByteBuf b, int bIndex, int length) {
        int i = 0;
        while (i + 8 <= length && a.getLong(aIndex + i) == b.getLong(bIndex + i)) {
            i += 8;
        }
        for (; i < length; i++) {
            if (a.getByte(aIndex + i) != b.getByte(bIndex + i)) {
                return i;
            }
        }
        return -1;
    }

    private static boolean isZero(ByteBuf buf, int index, int length) {
        int i = 0;
        for (; i + 8 <= length; i += 8) {
            if (buf.getLong(index + i) != 0) {
                return false;
            }
        }
        for (; i < length; i++) {
            if (buf.getByte(index + i) != 0) {
                return false;
            }
        }
        return true;
    }

    /** {@code target[0, length) |= source[index, index + length)}. */
    private static void orInto(ByteBuf target, ByteBuf source, int index, int length) {
        int i = 0;
        for (; i + 8 <= length; i += 8) {
            target.setLong(i, target.getLong(i) | source.getLong(index + i));
        }
        for (; i < length; i++) {
            target.setByte(i, target.getByte(i) | source.getByte(index + i));
        }
    }

    /**
     * Turns a device failure into sense data: MEDIUM ERROR with the failing LBA (the device's own position
     * for a {@link MediumErrorException}, else the command's first LBA), logged with the device name.
     */
    private SenseException ioFailure(IOException e, boolean write, long lba, long blocks) {
        long failedLba = lba;
        boolean failedWrite = write;
        if (e instanceof MediumErrorException medium) {
            long reported = medium.offset() / blockSize;
            if (reported >= lba && reported < lba + Math.max(blocks, 1)) {
                failedLba = reported;
            }
            failedWrite = medium.isWrite();
        }
        log.error("{}: {} of {} blocks at LBA {} failed (answering MEDIUM ERROR at LBA {}): {}", device.name(),
                write ? "write" : "read", blocks, lba, failedLba, e.toString());
        return SenseException.mediumError(failedWrite, failedLba);
    }

    /** Sends {@code data} truncated to the allocation length (SPC-4 4.2.5.6). */
    static void respond(ScsiCommand cmd, byte[] data, int allocationLength) {
        cmd.setCommandTransferLength(allocationLength);
        int n = Math.min(data.length, allocationLength);
        if (n == 0) {
            cmd.complete(null);
            return;
        }
        ByteBuf buf = cmd.allocator().buffer(n, n);
        buf.writeBytes(data, 0, n);
        cmd.complete(buf);
    }
}
