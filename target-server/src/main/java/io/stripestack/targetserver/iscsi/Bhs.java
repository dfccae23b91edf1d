package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;

/**
 * The 48-byte Basic Header Segment of RFC 7143 section 11.2: opcodes, Reject reasons and the
 * framing fields the decoder needs before it knows a PDU's type. The fields of each type are its
 * {@link PduHeader} view's. Stateless; a header starts at its buffer's reader index.
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

    private static final int OFF_TOTAL_AHS_LENGTH = 4;
    private static final int OFF_DATA_SEGMENT_LENGTH = 5;

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
        return header.getByte(header.readerIndex()) & 0x3f;
    }

    /** The BHS and its AHS: the header without digest. */
    static int headerLength(ByteBuf header) {
        return LENGTH + (header.getByte(header.readerIndex() + OFF_TOTAL_AHS_LENGTH) & 0xff) * 4;
    }

    static int dataSegmentLength(ByteBuf header) {
        return header.getUnsignedMedium(header.readerIndex() + OFF_DATA_SEGMENT_LENGTH);
    }

    /** Writes a zeroed 48-byte BHS with the opcode and the data segment length. */
    static void begin(ByteBuf header, int opcode, int dataSegmentLength) {
        int start = header.writerIndex();
        header.writeZero(LENGTH);
        header.setByte(start, opcode);
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
