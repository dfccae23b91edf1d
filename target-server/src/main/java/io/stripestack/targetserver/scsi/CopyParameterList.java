package io.stripestack.targetserver.scsi;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The parameter list of one EXTENDED COPY(LID1) (SPC-4 6.4.3): the header, the target (CSCD) descriptors and the
 * segment descriptors, checked against the copy manager's limits: the list lengths first (PARAMETER LIST LENGTH
 * ERROR), then each descriptor in list order (TOO MANY ... DESCRIPTORS, UNSUPPORTED ... TYPE CODE). Supported are identification target descriptors (E4h, a logical unit named by its designator) and
 * block device to block device segment descriptors (02h); inline data is not.
 *
 * <p>Immutable once parsed; parsed and read by the worker thread that runs the command.
 *
 * @param listId      LIST IDENTIFIER (0 to 255)
 * @param listIdUsage LIST ID USAGE: {@link #HOLD_STATUS}, {@link #DISCARD_STATUS} or {@link #NO_LIST_ID}
 */
record CopyParameterList(int listId, int listIdUsage, List<TargetDescriptor> targets, List<Segment> segments) {

    static final int HEADER_LENGTH = 16;
    /** LIST ID USAGE 00b: the copy manager holds the copy status for RECEIVE COPY RESULTS. */
    static final int HOLD_STATUS = 0;
    /** LIST ID USAGE 10b: the copy manager need not hold the status; the list identifier is still unique. */
    static final int DISCARD_STATUS = 2;
    /** LIST ID USAGE 11b: no list identifier (it must be 0); the command's status cannot be asked for. */
    static final int NO_LIST_ID = 3;

    static final int IDENTIFICATION_DESCRIPTOR = 0xE4;
    static final int BLOCK_TO_BLOCK = 0x02;
    static final int TARGET_DESCRIPTOR_LENGTH = 32;
    static final int BLOCK_TO_BLOCK_LENGTH = 28;

    /** Copy manager limits, reported by RECEIVE COPY OPERATING PARAMETERS and the Third-party Copy VPD page. */
    static final int MAX_TARGET_DESCRIPTORS = 8;
    static final int MAX_SEGMENT_DESCRIPTORS = 16;
    /** Target plus segment descriptor bytes (the header not counted). */
    static final int MAX_DESCRIPTOR_LIST_LENGTH = 1024;

    /** Designator types and association of SPC-4 7.8.6 that a target descriptor may name a unit with. */
    static final int DESIGNATOR_NAA = 0x3;
    static final int ASSOCIATION_LOGICAL_UNIT = 0x0;

    /**
     * An identification target descriptor.
     *
     * @param offset          its first byte in the parameter list (for field pointers)
     * @param association     ASSOCIATION of its designation descriptor
     * @param designatorType  DESIGNATOR TYPE of its designation descriptor
     * @param designator      the designator bytes
     * @param diskBlockLength DISK BLOCK LENGTH of its block device parameters
     */
    record TargetDescriptor(int offset, int association, int designatorType, byte[] designator, int diskBlockLength) {
        /** Byte of the DISK BLOCK LENGTH field in the parameter list. */
        int diskBlockLengthOffset() {
            return offset + 29;
        }
    }

    /**
     * A block device to block device segment: {@code blocks} blocks from {@code sourceLba} of target descriptor
     * {@code source} to {@code destinationLba} of target descriptor {@code destination}.
     *
     * @param offset its first byte in the parameter list (for field pointers)
     */
    record Segment(int offset, int source, int destination, int blocks, long sourceLba, long destinationLba) {
    }

    /** Parses a parameter list of at least {@link #HEADER_LENGTH} bytes; errors leave as {@link SenseException}. */
    static CopyParameterList parse(byte[] p) {
        if (p.length < HEADER_LENGTH) {
            throw SenseException.parameterListLengthError();
        }
        int listId = Cdb.u8(p, 0);
        int listIdUsage = (p[1] >>> 3) & 0x03;
        if (listIdUsage == 1) {
            throw SenseException.invalidFieldInParameterList(1, 4); // LIST ID USAGE 01b is reserved
        }
        if (listIdUsage == NO_LIST_ID && listId != 0) {
            throw SenseException.invalidFieldInParameterList(0, -1);
        }
        int targetBytes = Cdb.u16(p, 2);
        long segmentBytes = Cdb.u32(p, 8);
        long inlineBytes = Cdb.u32(p, 12);
        if (targetBytes + segmentBytes > MAX_DESCRIPTOR_LIST_LENGTH
                || HEADER_LENGTH + targetBytes + segmentBytes + inlineBytes > p.length) {
            throw SenseException.parameterListLengthError();
        }
        if (inlineBytes != 0) {
            throw SenseException.invalidFieldInParameterList(12, -1); // MAXIMUM INLINE DATA LENGTH is 0
        }
        List<TargetDescriptor> targets = targets(p, HEADER_LENGTH, HEADER_LENGTH + targetBytes);
        int segmentStart = HEADER_LENGTH + targetBytes;
        List<Segment> segments = segments(p, segmentStart, segmentStart + (int) segmentBytes, targets.size());
        return new CopyParameterList(listId, listIdUsage, List.copyOf(targets), List.copyOf(segments));
    }

    private static List<TargetDescriptor> targets(byte[] p, int start, int end) {
        List<TargetDescriptor> targets = new ArrayList<>();
        for (int at = start; at < end; at += TARGET_DESCRIPTOR_LENGTH) {
            if (targets.size() == MAX_TARGET_DESCRIPTORS) {
                throw SenseException.tooManyTargetDescriptors();
            }
            if (Cdb.u8(p, at) != IDENTIFICATION_DESCRIPTOR) {
                throw SenseException.unsupportedTargetDescriptorType(at);
            }
            if (end - at < TARGET_DESCRIPTOR_LENGTH) {
                throw SenseException.invalidFieldInParameterList(2, -1); // the list length cuts a descriptor
            }
            // Byte 1 holds LU ID TYPE (ignored: SPC-4 lets a copy manager without proxy tokens ignore it), NUL
            // (obsolete) and the PERIPHERAL DEVICE TYPE, which must be a direct-access block device.
            if ((p[at + 1] & 0x1f) != 0) {
                throw SenseException.invalidFieldInParameterList(at + 1, 4);
            }
            int designatorLength = Cdb.u8(p, at + 7);
            if (designatorLength > 20) {
                throw SenseException.invalidFieldInParameterList(at + 7, -1);
            }
            targets.add(new TargetDescriptor(at, (p[at + 5] >>> 4) & 0x03, p[at + 5] & 0x0f,
                    Arrays.copyOfRange(p, at + 8, at + 8 + designatorLength), Cdb.u24(p, at + 29)));
        }
        return targets;
    }

    private static List<Segment> segments(byte[] p, int start, int end, int targetCount) {
        List<Segment> segments = new ArrayList<>();
        int at = start;
        while (at < end) {
            if (segments.size() == MAX_SEGMENT_DESCRIPTORS) {
                throw SenseException.tooManySegmentDescriptors();
            }
            if (end - at < 4) {
                throw SenseException.invalidFieldInParameterList(8, -1); // the list length cuts a descriptor
            }
            if (Cdb.u8(p, at) != BLOCK_TO_BLOCK) {
                throw SenseException.unsupportedSegmentDescriptorType(at);
            }
            if (4 + Cdb.u16(p, at + 2) != BLOCK_TO_BLOCK_LENGTH) {
                throw SenseException.invalidFieldInParameterList(at + 2, -1);
            }
            if (end - at < BLOCK_TO_BLOCK_LENGTH) {
                throw SenseException.invalidFieldInParameterList(8, -1);
            }
            // Byte 1: DC and CAT only matter when source and destination block sizes differ, which the copy
            // manager refuses (see CopyManager), so a segment's count is in blocks of both.
            int source = Cdb.u16(p, at + 4);
            int destination = Cdb.u16(p, at + 6);
            if (source >= targetCount || destination >= targetCount) {
                throw SenseException.unreachableCopyTarget();
            }
            segments.add(new Segment(at, source, destination, Cdb.u16(p, at + 10), Cdb.u64(p, at + 12),
                    Cdb.u64(p, at + 20)));
            at += BLOCK_TO_BLOCK_LENGTH;
        }
        return segments;
    }
}
