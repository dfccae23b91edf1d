package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;

/**
 * The 48-byte Basic Header Segment of RFC 7143 section 11.2: opcodes, field offsets and the few
 * reads and writes every PDU type shares. Stateless; fields are big-endian as on the wire.
 */
final class Bhs {
    static final int LENGTH = 48;
    static final int RESERVED_TAG = 0xffffffff;

    // initiator opcodes
    static final int OP_NOP_OUT = 0x00;
    static final int OP_SCSI_COMMAND = 0x01;
    static final int OP_TASK_MGMT_REQUEST = 0x02;
    static final int OP_LOGIN_REQUEST = 0x03;
    static final int OP_TEXT_REQUEST = 0x04;
    static final int OP_DATA_OUT = 0x05;
    static final int OP_LOGOUT_REQUEST = 0x06;
    static final int OP_SNACK_REQUEST = 0x10;
    // target opcodes
    static final int OP_NOP_IN = 0x20;
    static final int OP_SCSI_RESPONSE = 0x21;
    static final int OP_TASK_MGMT_RESPONSE = 0x22;
    static final int OP_LOGIN_RESPONSE = 0x23;
    static final int OP_TEXT_RESPONSE = 0x24;
    static final int OP_DATA_IN = 0x25;
    static final int OP_LOGOUT_RESPONSE = 0x26;
    static final int OP_R2T = 0x31;
    static final int OP_ASYNC_MESSAGE = 0x32;
    static final int OP_REJECT = 0x3f;

    static final int IMMEDIATE_BIT = 0x40;
    static final int FINAL_BIT = 0x80;

    // field offsets shared by most PDUs
    static final int OFF_FLAGS = 1;
    static final int OFF_TOTAL_AHS_LENGTH = 4;
    static final int OFF_DATA_SEGMENT_LENGTH = 5;
    static final int OFF_LUN = 8;
    static final int OFF_ITT = 16;
    static final int OFF_TTT = 20;
    /** SCSI Command: Expected Data Transfer Length (the same word as a Data PDU's TTT). */
    static final int OFF_EXPECTED_LENGTH = 20;
    static final int OFF_CMD_SN = 24;
    static final int OFF_STAT_SN = 24;
    static final int OFF_EXP_STAT_SN = 28;
    static final int OFF_EXP_CMD_SN = 28;
    static final int OFF_MAX_CMD_SN = 32;
    static final int OFF_DATA_SN = 36;
    static final int OFF_BUFFER_OFFSET = 40;
    static final int OFF_RESIDUAL = 44;

    // fields of one PDU type each (RFC 7143 section 11)
    /** Responses: the response code (Task Management, Logout) or reject reason (Reject). */
    static final int OFF_RESPONSE = 2;
    /** SCSI Response and Data-In with status: the SCSI status. */
    static final int OFF_STATUS = 3;
    /** Login Request: Version-min. */
    static final int OFF_VERSION_MIN = 3;
    /** Login Request/Response: the ISID, 6 bytes. */
    static final int OFF_ISID = 8;
    static final int ISID_LENGTH = 6;
    /** Login Request/Response: the TSIH. */
    static final int OFF_TSIH = 14;
    /** Task Management Request: Referenced Task Tag and RefCmdSN. */
    static final int OFF_REFERENCED_TASK_TAG = 20;
    static final int OFF_REF_CMD_SN = 32;
    /** SCSI Command: the CDB's first 16 bytes. */
    static final int OFF_CDB = 32;
    /** Login Response: status class and detail. */
    static final int OFF_LOGIN_STATUS = 36;
    /** Async Message: the event code. */
    static final int OFF_ASYNC_EVENT = 36;
    /** Logout Response: Time2Wait and Time2Retain; Async Message: Parameter3 (its Time2Wait). */
    static final int OFF_TIME_2_WAIT = 40;
    static final int OFF_TIME_2_RETAIN = 42;
    static final int OFF_ASYNC_PARAMETER3 = 42;

    // Reject reasons (RFC 7143 11.17.1)
    static final int REJECT_DATA_DIGEST_ERROR = 0x02;
    static final int REJECT_PROTOCOL_ERROR = 0x04;
    static final int REJECT_COMMAND_NOT_SUPPORTED = 0x05;
    static final int REJECT_TASK_IN_PROGRESS = 0x07;
    static final int REJECT_INVALID_PDU_FIELD = 0x09;
    static final int REJECT_WAITING_FOR_LOGOUT = 0x0c;

    private Bhs() {
    }

    static int opcode(ByteBuf header) {
        return header.getByte(0) & 0x3f;
    }

    static boolean immediate(ByteBuf header) {
        return (header.getByte(0) & IMMEDIATE_BIT) != 0;
    }

    static int flags(ByteBuf header) {
        return header.getByte(OFF_FLAGS) & 0xff;
    }

    static boolean finalBit(ByteBuf header) {
        return (flags(header) & FINAL_BIT) != 0;
    }

    static int itt(ByteBuf header) {
        return header.getInt(OFF_ITT);
    }

    static int ttt(ByteBuf header) {
        return header.getInt(OFF_TTT);
    }

    static int cmdSn(ByteBuf header) {
        return header.getInt(OFF_CMD_SN);
    }

    static long lunField(ByteBuf header) {
        return header.getLong(OFF_LUN);
    }

    /**
     * Decodes the 8-byte LUN field (SAM-5 flat or peripheral addressing of the first level) to a
     * LUN number: peripheral (00b) gives byte 1, flat (01b) gives the 14-bit number.
     */
    static long decodeLun(long lunField) {
        int firstLevel = (int) (lunField >>> 48) & 0xffff;
        int method = firstLevel >>> 14;
        if (method == 1) {
            return firstLevel & 0x3fff;
        }
        return firstLevel & 0xff;
    }

    /** Writes a zeroed 48-byte BHS with opcode, flags and the data segment length. */
    static void begin(ByteBuf header, int opcode, int flags, int dataSegmentLength) {
        int start = header.writerIndex();
        header.writeZero(LENGTH);
        header.setByte(start, opcode);
        header.setByte(start + OFF_FLAGS, flags);
        header.setMedium(start + OFF_DATA_SEGMENT_LENGTH, dataSegmentLength);
    }

    /** Serial number arithmetic of RFC 1982 for 32-bit sequence numbers: a &lt; b. */
    static boolean snLessThan(int a, int b) {
        return a != b && (b - a) > 0;
    }

    static int pad(int length) {
        return (4 - (length & 3)) & 3;
    }
}
