package io.stripestack.targetserver.scsi;

import io.netty.buffer.ByteBuf;
import io.stripestack.targetserver.scsi.CommandTable.Access;
import io.stripestack.targetserver.scsi.CopyParameterList.Segment;
import io.stripestack.targetserver.scsi.CopyParameterList.TargetDescriptor;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The copy manager of one logical unit (SPC-4 5.17): EXTENDED COPY(LID1) between the logical units of its
 * {@link CopyTargets} (this one included) and RECEIVE COPY RESULTS (COPY STATUS, RECEIVE COPY OPERATING
 * PARAMETERS).
 *
 * <p>Before a block is moved the whole parameter list is checked: every copy target found, block sizes equal,
 * no reservation of another nexus in the way (RESERVATION CONFLICT), no destination write-protected (DATA
 * PROTECT), every range inside its medium (COPY ABORTED). Then each segment is copied in pieces through one
 * buffer of at most {@link #COPY_BUFFER_BYTES} per command, backwards when a copy within one unit overlaps
 * itself forwards, so the destination ends up holding what the source held. A failure on the way ends the command
 * in COPY ABORTED with the segments before it copied.
 *
 * <p>Concurrency: runs on the I/O worker threads, many commands at once, each reading and writing the copy
 * targets' devices directly: a piece is written to a destination under that unit's write-order lock (shared,
 * like a WRITE; see {@link SbcCommands}), so the copy keeps COMPARE AND WRITE atomic and holds no lock of two
 * units at once. The copy status each nexus may ask for is kept in {@link #statuses}, under its monitor, which
 * no device I/O runs under.
 */
final class CopyManager {
    /** The largest buffer one EXTENDED COPY reads into and writes from. */
    static final int COPY_BUFFER_BYTES = 1 << 20;

    /** COPY MANAGER STATUS of the COPY STATUS data (SPC-4 6.18.3). */
    private static final int IN_PROGRESS = 0x00;
    private static final int COMPLETED = 0x01;
    private static final int COMPLETED_WITH_ERRORS = 0x02;

    private final CopyTargets copyTargets;
    private final byte[] operatingParameters;
    /** Nexus to LIST IDENTIFIER to the status of the last copy with it (statuses only: no data is held). */
    private final Map<String, Map<Integer, CopyStatus>> statuses = new HashMap<>();

    /** @param blockSize the logical block size of the copy manager's own unit (DATA SEGMENT GRANULARITY) */
    CopyManager(CopyTargets copyTargets, int blockSize) {
        this.copyTargets = copyTargets;
        this.operatingParameters = operatingParameters(blockSize);
    }

    /** What the copy of one list has done: COPY MANAGER STATUS, segments processed and bytes written. */
    private record CopyStatus(int managerStatus, int segmentsProcessed, long bytes) {
        /** COPY STATUS parameter data (SPC-4 6.18.3), the transfer count in the smallest unit it fits in. */
        byte[] render() {
            byte[] d = new byte[12];
            Cdb.put32(d, 0, d.length - 4);
            d[4] = (byte) managerStatus;  // HDD 0: no held data is discarded
            Cdb.put16(d, 5, Math.min(segmentsProcessed, 0xFFFF));
            int units = 0;                // TRANSFER COUNT UNITS: 00h bytes, 01h kibibytes, 02h mebibytes...
            long count = bytes;
            while (count > 0xFFFFFFFFL) {
                count >>>= 10;
                units++;
            }
            d[7] = (byte) units;
            Cdb.put32(d, 8, count);
            return d;
        }
    }

    /** One segment with its copy targets found. */
    private record ResolvedSegment(Segment segment, LogicalUnit source, LogicalUnit destination) {
    }

    // ------------------------------------------------------------------------------------------------
    // EXTENDED COPY(LID1)

    void extendedCopy(ScsiCommand cmd, byte[] cdb) {
        long length = Cdb.u32(cdb, 10);
        cmd.setCommandTransferLength(length);
        if (length == 0) {
            cmd.complete(null);
            return;
        }
        if (length < CopyParameterList.HEADER_LENGTH
                || length > CopyParameterList.HEADER_LENGTH + CopyParameterList.MAX_DESCRIPTOR_LIST_LENGTH) {
            throw SenseException.parameterListLengthError();
        }
        CopyParameterList list = CopyParameterList.parse(CommandData.parameterList(cmd, (int) length));
        List<ResolvedSegment> copies = resolve(list);
        for (ResolvedSegment copy : copies) {
            if (copy.source().reservations().conflicts(cmd.nexus(), Access.READ)
                    || copy.destination().reservations().conflicts(cmd.nexus(), Access.WRITE)) {
                cmd.completeWithStatus(ScsiCommand.RESERVATION_CONFLICT);
                return;
            }
        }
        for (ResolvedSegment copy : copies) {
            if (copy.destination().writeProtected()) {
                throw SenseException.writeProtected();
            }
        }
        for (ResolvedSegment copy : copies) {
            Segment s = copy.segment();
            if (!inside(copy.source(), s.sourceLba(), s.blocks())
                    || !inside(copy.destination(), s.destinationLba(), s.blocks())) {
                throw SenseException.copyTargetDeviceNotReachable("segment at parameter byte " + s.offset()
                        + " reaches past the end of a copy target's medium");
            }
        }
        copyAll(cmd, list, copies);
        cmd.complete(null);
    }

    /** The copy targets of every segment; a designator no unit of {@link #copyTargets} has is not reachable. */
    private List<ResolvedSegment> resolve(CopyParameterList list) {
        List<LogicalUnit> units = new ArrayList<>();
        for (TargetDescriptor t : list.targets()) {
            LogicalUnit target = t.association() == CopyParameterList.ASSOCIATION_LOGICAL_UNIT
                    && t.designatorType() == CopyParameterList.DESIGNATOR_NAA ? copyTargets.find(t.designator()) : null;
            if (target != null && t.diskBlockLength() != target.blockSize()) {
                throw SenseException.invalidFieldInParameterList(t.diskBlockLengthOffset(), -1);
            }
            units.add(target);
        }
        List<ResolvedSegment> copies = new ArrayList<>();
        for (Segment s : list.segments()) {
            LogicalUnit source = units.get(s.source());
            LogicalUnit destination = units.get(s.destination());
            if (source == null || destination == null) {
                throw SenseException.copyTargetDeviceNotReachable("segment at parameter byte " + s.offset()
                        + " names a logical unit this target does not have");
            }
            if (source.blockSize() != destination.blockSize()) {
                throw SenseException.invalidFieldInParameterList(s.offset() + 10, -1);
            }
            copies.add(new ResolvedSegment(s, source, destination));
        }
        return copies;
    }

    private static boolean inside(LogicalUnit target, long lba, long blocks) {
        return lba >= 0 && lba <= target.blockCount() - blocks;
    }

    /**
     * Copies every segment in list order through one buffer. A list with an identifier is marked in progress
     * first and its status kept after each segment and at the end, whatever happens.
     */
    private void copyAll(ScsiCommand cmd, CopyParameterList list, List<ResolvedSegment> copies) {
        boolean tracked = list.listIdUsage() != CopyParameterList.NO_LIST_ID;
        if (tracked) {
            begin(cmd.nexus(), list.listId());
        }
        long largest = 0;
        for (ResolvedSegment copy : copies) {
            largest = Math.max(largest, (long) copy.segment().blocks() * copy.source().blockSize());
        }
        int bufferBytes = (int) Math.min(largest, COPY_BUFFER_BYTES);
        ByteBuf buffer = bufferBytes == 0 ? null : cmd.allocator().directBuffer(bufferBytes, bufferBytes);
        int done = 0;
        long bytes = 0;
        boolean completed = false;
        try {
            for (ResolvedSegment copy : copies) {
                copySegment(cmd, copy, buffer);
                bytes += (long) copy.segment().blocks() * copy.source().blockSize();
                done++;
                if (tracked && done < copies.size()) {
                    record(cmd.nexus(), list.listId(), new CopyStatus(IN_PROGRESS, done, bytes));
                }
            }
            completed = true;
        } catch (SenseException e) {
            throw SenseException.copyTargetDeviceNotReachable("segment " + done + " failed: " + e.getMessage());
        } finally {
            if (buffer != null) {
                buffer.release();
            }
            if (tracked) {
                record(cmd.nexus(), list.listId(), new CopyStatus(completed ? COMPLETED : COMPLETED_WITH_ERRORS,
                        done, bytes));
            }
        }
    }

    /**
     * Copies one segment a buffer at a time, backwards when the destination overlaps the source from above
     * within one unit, so that no piece is overwritten before it is read.
     */
    private static void copySegment(ScsiCommand cmd, ResolvedSegment copy, ByteBuf buffer) {
        Segment s = copy.segment();
        if (s.blocks() == 0) {
            return;
        }
        LogicalUnit source = copy.source();
        LogicalUnit destination = copy.destination();
        int pieceBlocks = buffer.capacity() / source.blockSize();
        long pieces = (s.blocks() + pieceBlocks - 1) / pieceBlocks;
        boolean backwards = source == destination && s.destinationLba() > s.sourceLba()
                && s.destinationLba() < s.sourceLba() + s.blocks();
        for (long i = 0; i < pieces; i++) {
            long first = (backwards ? pieces - 1 - i : i) * pieceBlocks;
            int blocks = (int) Math.min(pieceBlocks, s.blocks() - first);
            source.sbc().readBlocks(s.sourceLba() + first, blocks, buffer);
            destination.sbc().writeShared(cmd, s.destinationLba() + first, blocks, buffer, 0,
                    blocks * destination.blockSize());
        }
        destination.sbc().flushIfWriteThrough(false);
    }

    // ------------------------------------------------------------------------------------------------
    // Copy statuses

    /** Marks the list identifier in progress; OPERATION IN PROGRESS if a copy of the nexus runs with it already. */
    private void begin(String nexus, int listId) {
        synchronized (statuses) {
            Map<Integer, CopyStatus> ofNexus = statuses.computeIfAbsent(nexus, n -> new HashMap<>());
            CopyStatus previous = ofNexus.get(listId);
            if (previous != null && previous.managerStatus() == IN_PROGRESS) {
                throw SenseException.operationInProgress();
            }
            ofNexus.put(listId, new CopyStatus(IN_PROGRESS, 0, 0));
        }
    }

    private void record(String nexus, int listId, CopyStatus status) {
        synchronized (statuses) {
            statuses.computeIfAbsent(nexus, n -> new HashMap<>()).put(listId, status);
        }
    }

    /** The session ended: its copy statuses go (a nexus holds at most one per list identifier, 256). */
    void nexusLost(String nexus) {
        synchronized (statuses) {
            statuses.remove(nexus);
        }
    }

    // ------------------------------------------------------------------------------------------------
    // RECEIVE COPY RESULTS

    /** COPY STATUS (SPC-4 6.18.3) of the nexus's last copy with the LIST IDENTIFIER of CDB byte 2. */
    void copyStatus(ScsiCommand cmd, byte[] cdb) {
        CopyStatus status;
        synchronized (statuses) {
            Map<Integer, CopyStatus> ofNexus = statuses.get(cmd.nexus());
            status = ofNexus == null ? null : ofNexus.get(Cdb.u8(cdb, 2));
        }
        if (status == null) {
            throw SenseException.invalidFieldInCdb(2, -1); // no copy with that list identifier
        }
        CommandData.respond(cmd, status.render(), allocationLength(cdb));
    }

    void operatingParameters(ScsiCommand cmd, byte[] cdb) {
        CommandData.respond(cmd, operatingParameters, allocationLength(cdb));
    }

    private static int allocationLength(byte[] cdb) {
        return (int) Math.min(Cdb.u32(cdb, 10), Integer.MAX_VALUE);
    }

    /** RECEIVE COPY OPERATING PARAMETERS data (SPC-4 6.18.4): the limits of {@link CopyParameterList}. */
    private static byte[] operatingParameters(int blockSize) {
        int[] descriptorTypes = {CopyParameterList.BLOCK_TO_BLOCK, CopyParameterList.IDENTIFICATION_DESCRIPTOR};
        byte[] d = new byte[44 + descriptorTypes.length];
        Cdb.put32(d, 0, d.length - 4);
        d[4] = 0x01;                                              // SNLID: LIST ID USAGE 11b is supported
        Cdb.put16(d, 8, CopyParameterList.MAX_TARGET_DESCRIPTORS);
        Cdb.put16(d, 10, CopyParameterList.MAX_SEGMENT_DESCRIPTORS);
        Cdb.put32(d, 12, CopyParameterList.MAX_DESCRIPTOR_LIST_LENGTH);
        Cdb.put32(d, 16, maxSegmentBytes(blockSize));
        // MAXIMUM INLINE DATA LENGTH, HELD DATA LIMIT, MAXIMUM STREAM DEVICE TRANSFER SIZE: 0 (none).
        // TOTAL CONCURRENT COPIES, MAXIMUM CONCURRENT COPIES: what the transport lets run at once (CopyLimits)
        Cdb.put16(d, 34, CopyLimits.CONCURRENT_COPIES);
        d[36] = (byte) CopyLimits.CONCURRENT_COPIES;
        d[37] = (byte) Integer.numberOfTrailingZeros(blockSize);  // DATA SEGMENT GRANULARITY (log2)
        // INLINE DATA GRANULARITY and HELD DATA GRANULARITY: 0 (2^0 bytes; neither is supported).
        d[43] = (byte) descriptorTypes.length;
        for (int i = 0; i < descriptorTypes.length; i++) {
            d[44 + i] = (byte) descriptorTypes[i];
        }
        return d;
    }

    /** MAXIMUM SEGMENT LENGTH: the most a block-to-block segment's 16-bit block count can name, in bytes. */
    static long maxSegmentBytes(int blockSize) {
        return 0xFFFFL * blockSize;
    }
}
