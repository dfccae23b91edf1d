package io.stripestack.iscsi.proto;

import java.nio.ByteBuffer;

/**
 * The 48-byte Basic Header Segment of RFC 7143 section 11: opcodes, flag bits, Reject reasons, the offset of
 * every field either side reads or writes, and named reads and writes over a {@link ByteBuffer} (absolute, from
 * index 0), so no other part spells a byte offset. The target reads and writes Netty buffers through its own thin
 * views, which take their offsets from here. Stateless; a header buffer belongs to whichever thread fills or
 * parses it.
 */
public final class Bhs {
    public static final int LENGTH = 48;
    /** The reserved tag 0xffffffff: no task (ITT) or no transfer (TTT). */
    public static final int RESERVED_TAG = 0xffffffff;

    // initiator opcodes
    public static final int OP_NOP_OUT = 0x00;
    public static final int OP_SCSI_COMMAND = 0x01;
    public static final int OP_TASK_MGMT_REQUEST = 0x02;
    public static final int OP_LOGIN_REQUEST = 0x03;
    public static final int OP_TEXT_REQUEST = 0x04;
    public static final int OP_DATA_OUT = 0x05;
    public static final int OP_LOGOUT_REQUEST = 0x06;
    public static final int OP_SNACK_REQUEST = 0x10;
    // target opcodes
    public static final int OP_NOP_IN = 0x20;
    public static final int OP_SCSI_RESPONSE = 0x21;
    public static final int OP_TASK_MGMT_RESPONSE = 0x22;
    public static final int OP_LOGIN_RESPONSE = 0x23;
    public static final int OP_TEXT_RESPONSE = 0x24;
    public static final int OP_DATA_IN = 0x25;
    public static final int OP_LOGOUT_RESPONSE = 0x26;
    public static final int OP_R2T = 0x31;
    public static final int OP_ASYNC_MESSAGE = 0x32;
    public static final int OP_REJECT = 0x3f;

    /** Byte 0 bit 6: the request is for immediate delivery. */
    public static final int IMMEDIATE_BIT = 0x40;
    /** Byte 1 bit 7: F (final PDU of a sequence), or T (transit) in Login PDUs. */
    public static final int FINAL_BIT = 0x80;
    /** Byte 1 bit 6 of Login and Text PDUs: C, the text continues in the next PDU. */
    public static final int CONTINUE_BIT = 0x40;
    // SCSI Command flags (byte 1)
    public static final int COMMAND_READ_BIT = 0x40;
    public static final int COMMAND_WRITE_BIT = 0x20;
    public static final int TASK_ATTRIBUTES_MASK = 0x07;
    public static final int TASK_ATTR_SIMPLE = 0x01;
    // Data-In and SCSI Response flags (byte 1)
    public static final int DATA_IN_STATUS_BIT = 0x01;
    public static final int RESIDUAL_UNDERFLOW_BIT = 0x02;
    public static final int RESIDUAL_OVERFLOW_BIT = 0x04;
    // Login flags (byte 1): T, C, CSG in bits 3-2, NSG in bits 1-0
    public static final int CURRENT_STAGE_SHIFT = 2;
    public static final int STAGE_MASK = 3;
    // the login stages CSG and NSG name (RFC 7143 section 11.12.3); 2 is reserved
    public static final int STAGE_SECURITY = 0;
    public static final int STAGE_OPERATIONAL = 1;
    public static final int STAGE_FULL_FEATURE = 3;

    // Reject reasons (RFC 7143 section 11.17.1)
    public static final int REJECT_DATA_DIGEST_ERROR = 0x02;
    public static final int REJECT_PROTOCOL_ERROR = 0x04;
    public static final int REJECT_COMMAND_NOT_SUPPORTED = 0x05;
    public static final int REJECT_TASK_IN_PROGRESS = 0x07;
    public static final int REJECT_INVALID_PDU_FIELD = 0x09;
    public static final int REJECT_WAITING_FOR_LOGOUT = 0x0c;

    // field offsets; where two PDU types keep different fields at one place, each has its name
    public static final int OPCODE_OFFSET = 0;
    public static final int FLAGS_OFFSET = 1;
    /** SCSI Response, Logout Response: the iSCSI response; Reject: the reason. */
    public static final int RESPONSE_OFFSET = 2;
    /** Login Request: Version-max, then Version-min. */
    public static final int VERSION_MAX_OFFSET = 2;
    public static final int VERSION_MIN_OFFSET = 3;
    /** SCSI Response, Data-In with status: the SCSI status. */
    public static final int STATUS_OFFSET = 3;
    public static final int TOTAL_AHS_LENGTH_OFFSET = 4;
    /** Three bytes. */
    public static final int DATA_SEGMENT_LENGTH_OFFSET = 5;
    /** The 8-byte LUN, in the PDU types that address a logical unit. */
    public static final int LUN_OFFSET = 8;
    /** Login: the 6-byte ISID, then the 2-byte TSIH. */
    public static final int ISID_OFFSET = 8;
    public static final int TSIH_OFFSET = 14;
    public static final int ITT_OFFSET = 16;
    /** The Target Transfer Tag, in the PDU types that carry one. */
    public static final int TTT_OFFSET = 20;
    /** SCSI Command. */
    public static final int EXPECTED_DATA_TRANSFER_LENGTH_OFFSET = 20;
    /** Task Management Request. */
    public static final int REFERENCED_TASK_TAG_OFFSET = 20;
    /** Initiator PDUs. */
    public static final int CMD_SN_OFFSET = 24;
    /** Target PDUs. */
    public static final int STAT_SN_OFFSET = 24;
    /** Initiator PDUs. */
    public static final int EXP_STAT_SN_OFFSET = 28;
    /** Target PDUs. */
    public static final int EXP_CMD_SN_OFFSET = 28;
    public static final int MAX_CMD_SN_OFFSET = 32;
    /** SCSI Command: the CDB, bytes 32 to 47. */
    public static final int CDB_OFFSET = 32;
    public static final int CDB_LENGTH = 16;
    /** Task Management Request. */
    public static final int REF_CMD_SN_OFFSET = 32;
    /** Data-In, Data-Out. */
    public static final int DATA_SN_OFFSET = 36;
    /** R2T. */
    public static final int R2T_SN_OFFSET = 36;
    /** SCSI Response. */
    public static final int EXP_DATA_SN_OFFSET = 36;
    /** Login Response: status class, then status detail. */
    public static final int LOGIN_STATUS_OFFSET = 36;
    public static final int ASYNC_EVENT_OFFSET = 36;
    /** Data-In, Data-Out, R2T. */
    public static final int BUFFER_OFFSET_OFFSET = 40;
    /** Logout Response. */
    public static final int TIME_2_WAIT_OFFSET = 40;
    public static final int TIME_2_RETAIN_OFFSET = 42;
    /** Asynchronous Message. */
    public static final int PARAMETER_3_OFFSET = 42;
    /** SCSI Response, Data-In with status. */
    public static final int RESIDUAL_COUNT_OFFSET = 44;
    /** R2T. */
    public static final int DESIRED_DATA_TRANSFER_LENGTH_OFFSET = 44;

    private Bhs() {
    }

    /** The zero bytes after a data segment of {@code length} bytes, up to the next 4-byte boundary. */
    public static int pad(int length) {
        return (4 - (length & 3)) & 3;
    }

    /** A data segment of {@code length} bytes with its padding. */
    public static int paddedLength(int length) {
        return length + pad(length);
    }

    /** Serial number arithmetic of RFC 1982 for 32-bit sequence numbers: a &lt; b. */
    public static boolean snLessThan(int a, int b) {
        return a != b && (b - a) > 0;
    }

    /**
     * The 8-byte LUN field for a single-level LUN: peripheral addressing below 256, flat space addressing
     * above (SAM-5 4.7), which is what targets expect for these ranges.
     */
    public static long lunField(int lun) {
        return lun < 256 ? (long) lun << 48 : (0x4000L | lun) << 48;
    }

    /**
     * Decodes an 8-byte LUN field (SAM-5 flat or peripheral addressing of the first level) to a LUN number:
     * peripheral (00b) gives byte 1, flat (01b) gives the 14-bit number.
     */
    public static long decodeLun(long lunField) {
        int firstLevel = (int) (lunField >>> 48) & 0xffff;
        int method = firstLevel >>> 14;
        if (method == 1) {
            return firstLevel & 0x3fff;
        }
        return firstLevel & 0xff;
    }

    /** Zeroes the header (reserved fields are zero on the wire) and sets the opcode byte and the flags byte. */
    public static void startRequest(ByteBuffer h, int opcodeByte, int flags) {
        for (int i = 0; i < LENGTH; i++) {
            h.put(i, (byte) 0);
        }
        h.put(OPCODE_OFFSET, (byte) opcodeByte);
        h.put(FLAGS_OFFSET, (byte) flags);
    }

    public static int opcode(ByteBuffer h) {
        return h.get(OPCODE_OFFSET) & 0x3f;
    }

    public static int flags(ByteBuffer h) {
        return h.get(FLAGS_OFFSET) & 0xff;
    }

    /** SCSI Response and Logout Response: the iSCSI response code. */
    public static int response(ByteBuffer h) {
        return h.get(RESPONSE_OFFSET) & 0xff;
    }

    public static int rejectReason(ByteBuffer h) {
        return h.get(RESPONSE_OFFSET) & 0xff;
    }

    /** SCSI Response, and Data-In with status. */
    public static int scsiStatus(ByteBuffer h) {
        return h.get(STATUS_OFFSET) & 0xff;
    }

    public static int totalAhsBytes(ByteBuffer h) {
        return (h.get(TOTAL_AHS_LENGTH_OFFSET) & 0xff) * 4;
    }

    public static int dataSegmentLength(ByteBuffer h) {
        return h.getInt(TOTAL_AHS_LENGTH_OFFSET) & 0xffffff;
    }

    /** Writes the whole word, so TotalAHSLength is 0: for a sender of no AHS. */
    public static void putDataSegmentLength(ByteBuffer h, int length) {
        h.putInt(TOTAL_AHS_LENGTH_OFFSET, length);
    }

    public static long lun(ByteBuffer h) {
        return h.getLong(LUN_OFFSET);
    }

    public static void putLun(ByteBuffer h, long lunField) {
        h.putLong(LUN_OFFSET, lunField);
    }

    /** Login Request: the ISID in bytes 8-13, and TSIH 0 (a new session) in bytes 14-15. */
    public static void putNewSessionIsid(ByteBuffer h, long isid) {
        h.putLong(ISID_OFFSET, isid << 16);
    }

    public static int itt(ByteBuffer h) {
        return h.getInt(ITT_OFFSET);
    }

    public static void putItt(ByteBuffer h, int itt) {
        h.putInt(ITT_OFFSET, itt);
    }

    /** R2T, NOP-In: the target transfer tag. */
    public static int ttt(ByteBuffer h) {
        return h.getInt(TTT_OFFSET);
    }

    /** Data-Out, NOP-Out: the target transfer tag being answered. */
    public static void putTtt(ByteBuffer h, int ttt) {
        h.putInt(TTT_OFFSET, ttt);
    }

    /** SCSI Command. */
    public static void putExpectedDataTransferLength(ByteBuffer h, int length) {
        h.putInt(EXPECTED_DATA_TRANSFER_LENGTH_OFFSET, length);
    }

    /** Target PDUs. */
    public static int statSn(ByteBuffer h) {
        return h.getInt(STAT_SN_OFFSET);
    }

    /** Initiator PDUs other than Data-Out. */
    public static void putCmdSn(ByteBuffer h, int cmdSn) {
        h.putInt(CMD_SN_OFFSET, cmdSn);
    }

    /** Target PDUs. */
    public static int expCmdSn(ByteBuffer h) {
        return h.getInt(EXP_CMD_SN_OFFSET);
    }

    /** Initiator PDUs. */
    public static void putExpStatSn(ByteBuffer h, int expStatSn) {
        h.putInt(EXP_STAT_SN_OFFSET, expStatSn);
    }

    /** Target PDUs. */
    public static int maxCmdSn(ByteBuffer h) {
        return h.getInt(MAX_CMD_SN_OFFSET);
    }

    public static int loginStatusClass(ByteBuffer h) {
        return h.get(LOGIN_STATUS_OFFSET) & 0xff;
    }

    public static int loginStatusDetail(ByteBuffer h) {
        return h.get(LOGIN_STATUS_OFFSET + 1) & 0xff;
    }

    public static int asyncEvent(ByteBuffer h) {
        return h.get(ASYNC_EVENT_OFFSET) & 0xff;
    }

    /** Data-In, R2T (there: R2TSN). */
    public static int dataSn(ByteBuffer h) {
        return h.getInt(DATA_SN_OFFSET);
    }

    /** Data-Out. */
    public static void putDataSn(ByteBuffer h, int dataSn) {
        h.putInt(DATA_SN_OFFSET, dataSn);
    }

    /** Data-In, R2T. */
    public static int bufferOffset(ByteBuffer h) {
        return h.getInt(BUFFER_OFFSET_OFFSET);
    }

    /** Data-Out. */
    public static void putBufferOffset(ByteBuffer h, int offset) {
        h.putInt(BUFFER_OFFSET_OFFSET, offset);
    }

    /** Data-In with status, SCSI Response. */
    public static int residualCount(ByteBuffer h) {
        return h.getInt(RESIDUAL_COUNT_OFFSET);
    }

    /** R2T. */
    public static int desiredDataTransferLength(ByteBuffer h) {
        return h.getInt(DESIRED_DATA_TRANSFER_LENGTH_OFFSET);
    }
}
