package io.stripestack.targetserver.scsi;

import io.netty.buffer.ByteBuf;
import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.MediumErrorException;
import java.io.IOException;
import java.util.Arrays;
import java.util.concurrent.locks.StampedLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The block commands (SBC-3) of one logical unit: READ, WRITE, WRITE AND VERIFY, VERIFY, WRITE SAME, UNMAP,
 * COMPARE AND WRITE, ORWRITE, SYNCHRONIZE CACHE, PRE-FETCH, READ CAPACITY, GET LBA STATUS, START STOP UNIT,
 * PREVENT ALLOW MEDIUM REMOVAL and READ DEFECT DATA. Checks each CDB against the medium and the unit's
 * limits, moves the data between the command's buffers and the device, and turns device failures into
 * MEDIUM ERROR sense data.
 *
 * <p>Data path: a READ allocates one pooled direct buffer of the transfer size from the command's allocator
 * and lets the device read straight into it through the buffer's own cached NIO view (no copy in user
 * space, no further allocation); a WRITE hands the device an NIO view of the Data-Out buffer's memory (one
 * small view object, no copy) unless Data-Out arrived as several components, which are gathered first.
 *
 * <p>Concurrency: runs on the I/O worker threads that call {@link LogicalUnit#execute}, many at once; the
 * device is thread-safe and the geometry fields are final. Shared with other commands: the unit's
 * {@link ModePages} (WCE and SWP, volatile reads per write) and {@link #writeOrder}, a {@link StampedLock} that
 * makes COMPARE AND WRITE and ORWRITE atomic. Every command that modifies the medium holds its read
 * (shared) lock for the duration of its device writes, so ordinary writes run in parallel; COMPARE AND
 * WRITE and ORWRITE hold the write (exclusive) lock from their read to their write, so no other write can
 * land between the two. No other lock is held during device I/O. {@link CopyManager} reads and writes a copy
 * target's medium through {@link #readBlocks}, {@link #writeShared} and {@link #flushIfWriteThrough}, so its
 * writes follow the same rule.
 */
final class SbcCommands {
    private static final Logger log = LoggerFactory.getLogger(SbcCommands.class);

    private static final int MAX_LBA_STATUS_DESCRIPTORS = 256;
    private static final int LBA_STATUS_DESCRIPTOR_LENGTH = 16;
    /** PROVISIONING STATUS of an LBA status descriptor (SBC-3 table 59). */
    private static final int LBA_MAPPED = 0;
    private static final int LBA_DEALLOCATED = 1;

    private final LogicalUnit unit;
    private final BlockDevice device;
    private final boolean readOnly;
    private final int blockSize;
    private final int maxTransferBlocks;
    private final int physicalBlockExponent;
    private final int lowestAlignedLba;
    private final boolean offersUnmap;
    private final ModePages modePages;
    private final StampedLock writeOrder = new StampedLock();

    /** Takes {@code unit}'s device and geometry, which must be set already. */
    SbcCommands(LogicalUnit unit, ModePages modePages) {
        this.unit = unit;
        this.device = unit.device();
        this.readOnly = unit.readOnly();
        this.blockSize = unit.blockSize();
        this.maxTransferBlocks = unit.maxTransferBlocks();
        this.physicalBlockExponent = unit.physicalBlockExponent();
        this.lowestAlignedLba = unit.lowestAlignedLba();
        this.offersUnmap = unit.offersUnmap();
        this.modePages = modePages;
    }

    // ------------------------------------------------------------------------------------------------
    // Capacity, medium state and defects

    void readCapacity10(ScsiCommand cmd, byte[] cdb) {
        if ((cdb[8] & 0x01) == 0 && Cdb.u32(cdb, 2) != 0) {
            throw SenseException.invalidFieldInCdb(2, -1); // LOGICAL BLOCK ADDRESS must be 0 unless PMI
        }
        byte[] d = new byte[8];
        long lastLba = unit.blockCount() - 1;
        Cdb.put32(d, 0, Math.min(lastLba, 0xFFFFFFFFL)); // 0xFFFFFFFF: use READ CAPACITY(16)
        Cdb.put32(d, 4, blockSize);
        CommandData.respond(cmd, d, d.length);
    }


    void readCapacity16(ScsiCommand cmd, byte[] cdb) {
        byte[] d = new byte[32];
        Cdb.put64(d, 0, unit.blockCount() - 1);
        Cdb.put32(d, 8, blockSize);
        d[13] = (byte) physicalBlockExponent;
        int lbp = offersUnmap ? 0x80 | (device.discardZeroes() ? 0x40 : 0) : 0; // LBPME, LBPRZ
        Cdb.put16(d, 14, lbp << 8 | lowestAlignedLba);
        CommandData.respond(cmd, d, (int) Math.min(Cdb.u32(cdb, 10), Integer.MAX_VALUE));
    }

    /**
     * The medium is always spinning and cannot be ejected, so only one part of START STOP UNIT has an
     * effect: stopping (START=0) without NO_FLUSH makes cached writes durable first (SBC-3 5.25).
     */
    void startStopUnit(ScsiCommand cmd, byte[] cdb) {
        boolean start = (cdb[4] & 0x01) != 0;
        boolean noFlush = (cdb[4] & 0x04) != 0;
        if (!start && !noFlush) {
            flush();
        }
        cmd.complete(null);
    }

    /** The medium is not removable (RMB=0): SBC-3 lets such a unit accept PREVENT ALLOW as a no-op. */
    void preventAllowMediumRemoval(ScsiCommand cmd) {
        cmd.complete(null);
    }

    /**
     * READ DEFECT DATA(10/12) (SBC-3 5.19, 5.20): the stack remaps nothing it could list, so both the primary
     * and the grown defect list are empty; the header says the lists asked for are present (PLISTV, GLISTV) in
     * the format asked for, which any empty list is.
     */
    void readDefectData(ScsiCommand cmd, int flags, int allocation, boolean twelve) {
        byte[] d = new byte[twelve ? 8 : 4];
        d[1] = (byte) (flags & 0x1f); // PLISTV = REQ_PLIST, GLISTV = REQ_GLIST, DEFECT LIST FORMAT; length 0
        CommandData.respond(cmd, d, allocation);
    }

    // ------------------------------------------------------------------------------------------------
    // Reads and writes

    void readWithFlags(ScsiCommand cmd, byte[] cdb, long lba, long blocks, int lengthByte) {
        checkNoProtection(cdb);
        read(cmd, lba, blocks, lengthByte);
    }

    void read(ScsiCommand cmd, long lba, long blocks, int lengthByte) {
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
            readBlocks(lba, blocks, buffer);
            buffer.writerIndex(bytes);
            cmd.complete(buffer);
            buffer = null;
        } finally {
            if (buffer != null) {
                buffer.release();
            }
        }
    }

    void writeWithFlags(ScsiCommand cmd, byte[] cdb, long lba, long blocks, int lengthByte) {
        checkNoProtection(cdb);
        write(cmd, lba, blocks, lengthByte, (cdb[1] & 0x08) != 0);
    }

    void write(ScsiCommand cmd, long lba, long blocks, int lengthByte, boolean fua) {
        if (writeDataOut(cmd, lba, blocks, lengthByte) > 0) {
            flushIfWriteThrough(fua);
        }
        cmd.complete(null);
    }

    void writeAndVerify(ScsiCommand cmd, byte[] cdb, long lba, long blocks, int lengthByte) {
        checkNoProtection(cdb);
        int written = writeDataOut(cmd, lba, blocks, lengthByte);
        if (written > 0) {
            // Verification must see the medium, not a volatile cache: flush first, then read back and compare.
            flush();
            ByteBuf data = cmd.dataOut();
            compareWithMedium(cmd, lba, written / blockSize, data, data.readerIndex());
        }
        cmd.complete(null);
    }

    /**
     * The part every WRITE shares: checks the unit and the transfer, then stores the Data-Out's
     * {@link #writableBytes} at {@code lba}; returns how many bytes it wrote (0: none).
     */
    private int writeDataOut(ScsiCommand cmd, long lba, long blocks, int lengthByte) {
        checkWritable();
        int bytes = checkTransfer(lba, blocks, lengthByte);
        cmd.setCommandTransferLength(bytes);
        int toWrite = writableBytes(cmd, bytes);
        if (toWrite > 0) {
            ByteBuf data = cmd.dataOut();
            writeShared(cmd, lba, toWrite / blockSize, data, data.readerIndex(), toWrite);
        }
        return toWrite;
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

    void verify(ScsiCommand cmd, byte[] cdb, long lba, long blocks, int lengthByte) {
        checkNoProtection(cdb);
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
            ByteBuf data = CommandData.requireDataOut(cmd, bytes);
            compareWithMedium(cmd, lba, blocks, data, data.readerIndex());
        } else {
            // BYTCHK 11b (SBC-4): one block of Data-Out is compared with every block of the range.
            cmd.setCommandTransferLength(blockSize);
            ByteBuf data = CommandData.requireDataOut(cmd, blockSize);
            compareEachBlock(cmd, lba, blocks, data, data.readerIndex());
        }
        cmd.complete(null);
    }

    void synchronizeCache(ScsiCommand cmd, long lba, long blocks) {
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
    void preFetch(ScsiCommand cmd, long lba, long blocks) {
        checkRange(lba, blocks);
        cmd.complete(null);
    }

    // ------------------------------------------------------------------------------------------------
    // WRITE SAME, UNMAP, COMPARE AND WRITE

    void writeSame(ScsiCommand cmd, byte[] cdb, long lba, long blocks, int lengthByte, boolean noDataOut) {
        checkNoProtection(cdb);
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
            blocks = unit.blockCount() - lba;
        }
        if (blocks > LogicalUnit.MAX_WRITE_SAME_BLOCKS) {
            throw SenseException.invalidFieldInCdb(lengthByte, -1);
        }
        checkRange(lba, blocks);
        cmd.setCommandTransferLength(noDataOut ? -1 : blockSize);
        ByteBuf block = noDataOut ? null : CommandData.requireExactDataOut(cmd, blockSize);
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
        flushIfWriteThrough(false);
        cmd.complete(null);
    }

    /** Writes {@code block} (or zeros when null) to every block of the range, a pooled buffer at a time. */
    private void writeRepeated(ScsiCommand cmd, long lba, long blocks, ByteBuf block) throws IOException {
        int chunkBlocks = (int) Math.min(blocks, Math.max(1, LogicalUnit.DEFAULT_MAX_TRANSFER_BYTES / blockSize));
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

    void unmap(ScsiCommand cmd, byte[] cdb) {
        // Only read-only keeps a unit over a discarding device from offering UNMAP: refused as any write.
        if (!offersUnmap && !(readOnly && device.supportsDiscard())) {
            throw SenseException.invalidOpcode(Opcodes.UNMAP);
        }
        checkWritable();
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
        byte[] params = CommandData.parameterList(cmd, length);
        int descriptorBytes = Math.min(Cdb.u16(params, 2), length - 8) & ~15;
        int descriptors = descriptorBytes / 16;
        if (descriptors > LogicalUnit.MAX_UNMAP_DESCRIPTORS) {
            throw SenseException.invalidFieldInParameterList(2, -1);
        }
        for (int i = 0; i < descriptors; i++) {
            int at = 8 + 16 * i;
            long count = Cdb.u32(params, at + 8);
            if (count > LogicalUnit.MAX_UNMAP_BLOCKS) {
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
     * {@link LogicalUnit#LBA_STATUS_SCAN_BYTES} and as many descriptors as the allocation length holds, and the initiator
     * asks again from the LBA after the last descriptor.
     */
    void getLbaStatus(ScsiCommand cmd, byte[] cdb) {
        long lba = Cdb.u64(cdb, 2);
        int allocation = (int) Math.min(Cdb.u32(cdb, 10), Integer.MAX_VALUE);
        long blockCount = unit.blockCount();
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
            d = scanLbaStatus(cmd, lba, (int) Math.min(remaining, LogicalUnit.LBA_STATUS_SCAN_BYTES / blockSize), maxDescriptors);
        }
        Cdb.put32(d, 0, d.length - 4);
        CommandData.respond(cmd, d, allocation);
    }

    /** Descriptors for the runs of zero (deallocated) and non-zero (mapped) blocks among {@code blocks} from {@code lba}. */
    private byte[] scanLbaStatus(ScsiCommand cmd, long lba, int blocks, int maxDescriptors) {
        int bytes = blocks * blockSize;
        ByteBuf medium = cmd.allocator().directBuffer(bytes, bytes);
        try {
            readBlocks(lba, blocks, medium);
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

    void compareAndWrite(ScsiCommand cmd, byte[] cdb) {
        checkNoProtection(cdb);
        long lba = Cdb.u64(cdb, 2);
        int blocks = Cdb.u8(cdb, 13);
        checkWritable();
        if (blocks > LogicalUnit.MAX_COMPARE_AND_WRITE_BLOCKS) {
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
        flushIfWriteThrough((cdb[1] & 0x08) != 0);
        cmd.complete(null);
    }

    /**
     * ORWRITE(16) (SBC-3 5.10): each block becomes its old contents ORed with the Data-Out. Read, OR and write
     * run under the exclusive write-order lock, like COMPARE AND WRITE, so no other write lands in between and
     * two ORWRITEs of the same block both take effect.
     */
    void orWrite(ScsiCommand cmd, byte[] cdb) {
        checkNoProtection(cdb);
        checkWritable();
        long lba = Cdb.u64(cdb, 2);
        long blocks = Cdb.u32(cdb, 10);
        int bytes = checkTransfer(lba, blocks, 10);
        cmd.setCommandTransferLength(bytes);
        if (bytes == 0) {
            cmd.complete(null);
            return;
        }
        ByteBuf data = CommandData.requireDataOut(cmd, bytes);
        ByteBuf merged = cmd.allocator().directBuffer(bytes, bytes);
        try {
            long stamp = writeOrder.writeLock();
            try {
                readBlocks(lba, blocks, merged);
                orInto(merged, data, data.readerIndex(), bytes);
                writeDevice(cmd, lba, blocks, merged, 0, bytes);
            } finally {
                writeOrder.unlockWrite(stamp);
            }
        } finally {
            merged.release();
        }
        flushIfWriteThrough((cdb[1] & 0x08) != 0);
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
        long blockCount = unit.blockCount();
        if (lba < 0 || blocks < 0 || blocks > blockCount || lba > blockCount - blocks) {
            throw SenseException.lbaOutOfRange();
        }
    }

    /** RDPROTECT, WRPROTECT, VRPROTECT or ORPROTECT (CDB byte 1, bits 7-5): the unit keeps no protection information. */
    private static void checkNoProtection(byte[] cdb) {
        if ((cdb[1] & 0xE0) != 0) {
            throw SenseException.invalidFieldInCdb(1, 7);
        }
    }

    /** WRITE PROTECTED while the unit is read-only or SWP is set (see {@link LogicalUnit#writeProtected()}). */
    private void checkWritable() {
        if (unit.writeProtected()) {
            throw SenseException.writeProtected();
        }
    }

    /** Writes under the shared write-order lock; also the copy manager's path onto a destination unit. */
    void writeShared(ScsiCommand cmd, long lba, long blocks, ByteBuf data, int index, int bytes) {
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

    /** Makes the writes just done durable when FUA asks for it or the Caching mode page says write-through (WCE=0). */
    void flushIfWriteThrough(boolean fua) {
        if (fua || !modePages.writeCacheEnabled()) {
            flush();
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

    /** Reads {@code blocks} blocks at {@code lba} into {@code buffer} from its index 0; a failure is MEDIUM ERROR. */
    void readBlocks(long lba, long blocks, ByteBuf buffer) {
        try {
            device.read(lba * blockSize, buffer.internalNioBuffer(0, (int) blocks * blockSize));
        } catch (IOException e) {
            throw ioFailure(e, false, lba, blocks);
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
                readBlocks(lba + done, n, buffer);
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
            readBlocks(lba, blocks, medium);
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
                readBlocks(lba + i, 1, medium);
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
}
