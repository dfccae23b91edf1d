package io.stripestack.initiator;

import java.nio.ByteBuffer;

/**
 * The 48-byte Basic Header Segment of RFC 7143 section 11: opcodes, flag bits and named reads and writes of
 * the fields this initiator uses, so no other part spells a byte offset. Stateless; a header buffer belongs to
 * whichever thread fills or parses it.
 */
final class Bhs {
    static final int LENGTH = 48;
    /** The reserved tag 0xffffffff: no task (ITT) or no transfer (TTT). */
    static final int NO_TAG = 0xffffffff;
    static final int IMMEDIATE = 0x40;
    /** Byte 1 bit 7: F (final PDU of a sequence), or T (transit) in Login PDUs. */
    static final int FINAL = 0x80;

    // initiator opcodes
    static final int OP_NOP_OUT = 0x00;
    static final int OP_SCSI_COMMAND = 0x01;
    static final int OP_LOGIN = 0x03;
    static final int OP_DATA_OUT = 0x05;
    static final int OP_LOGOUT = 0x06;
    // target opcodes
    static final int OP_NOP_IN = 0x20;
    static final int OP_SCSI_RESPONSE = 0x21;
    static final int OP_TMF_RESPONSE = 0x22;
    static final int OP_LOGIN_RESPONSE = 0x23;
    static final int OP_DATA_IN = 0x25;
    static final int OP_LOGOUT_RESPONSE = 0x26;
    static final int OP_R2T = 0x31;
    static final int OP_ASYNC = 0x32;
    static final int OP_REJECT = 0x3f;

    // SCSI Command flags (byte 1)
    static final int COMMAND_READ = 0x40;
    static final int COMMAND_WRITE = 0x20;
    static final int TASK_ATTR_SIMPLE = 0x01;
    // Data-In and SCSI Response flags (byte 1)
    static final int DATA_IN_HAS_STATUS = 0x01;
    static final int RESIDUAL_UNDERFLOW = 0x02;

    /** The SCSI Command PDU carries its CDB from here to byte 47. */
    static final int CDB_OFFSET = 32;

    private Bhs() {
    }

    /** Zeroes the header (reserved fields are zero on the wire) and sets the opcode byte and the flags byte. */
    static void startRequest(ByteBuffer h, int opcodeByte, int flags) {
        for (int i = 0; i < LENGTH; i++) {
            h.put(i, (byte) 0);
        }
        h.put(0, (byte) opcodeByte);
        h.put(1, (byte) flags);
    }

    /**
     * The 8-byte LUN field for a single-level LUN: peripheral addressing below 256, flat space addressing
     * above (SAM-5 4.7), which is what targets expect for these ranges.
     */
    static long lunField(int lun) {
        return lun < 256 ? (long) lun << 48 : (0x4000L | lun) << 48;
    }

    static int opcode(ByteBuffer h) {
        return h.get(0) & 0x3f;
    }

    static int flags(ByteBuffer h) {
        return h.get(1) & 0xff;
    }

    /** SCSI Response and Logout Response: the iSCSI response code. */
    static int response(ByteBuffer h) {
        return h.get(2) & 0xff;
    }

    static int rejectReason(ByteBuffer h) {
        return h.get(2) & 0xff;
    }

    /** SCSI Response, and Data-In with status. */
    static int scsiStatus(ByteBuffer h) {
        return h.get(3) & 0xff;
    }

    static int totalAhsBytes(ByteBuffer h) {
        return (h.get(4) & 0xff) * 4;
    }

    static int dataSegmentLength(ByteBuffer h) {
        return h.getInt(4) & 0xffffff;
    }

    /** Writes the whole word, so TotalAHSLength is 0: this initiator sends no AHS. */
    static void putDataSegmentLength(ByteBuffer h, int length) {
        h.putInt(4, length);
    }

    static long lun(ByteBuffer h) {
        return h.getLong(8);
    }

    static void putLun(ByteBuffer h, long lunField) {
        h.putLong(8, lunField);
    }

    /** Login Request: the ISID in bytes 8-13, and TSIH 0 (a new session) in bytes 14-15. */
    static void putNewSessionIsid(ByteBuffer h, long isid) {
        h.putLong(8, isid << 16);
    }

    static int itt(ByteBuffer h) {
        return h.getInt(16);
    }

    static void putItt(ByteBuffer h, int itt) {
        h.putInt(16, itt);
    }

    /** R2T, NOP-In: the target transfer tag. */
    static int ttt(ByteBuffer h) {
        return h.getInt(20);
    }

    /** Data-Out, NOP-Out: the target transfer tag being answered. */
    static void putTtt(ByteBuffer h, int ttt) {
        h.putInt(20, ttt);
    }

    /** SCSI Command. */
    static void putExpectedDataTransferLength(ByteBuffer h, int length) {
        h.putInt(20, length);
    }

    /** Target PDUs. */
    static int statSn(ByteBuffer h) {
        return h.getInt(24);
    }

    /** Initiator PDUs other than Data-Out. */
    static void putCmdSn(ByteBuffer h, int cmdSn) {
        h.putInt(24, cmdSn);
    }

    /** Target PDUs. */
    static int expCmdSn(ByteBuffer h) {
        return h.getInt(28);
    }

    /** Initiator PDUs. */
    static void putExpStatSn(ByteBuffer h, int expStatSn) {
        h.putInt(28, expStatSn);
    }

    /** Target PDUs. */
    static int maxCmdSn(ByteBuffer h) {
        return h.getInt(32);
    }

    static int loginStatusClass(ByteBuffer h) {
        return h.get(36) & 0xff;
    }

    static int loginStatusDetail(ByteBuffer h) {
        return h.get(37) & 0xff;
    }

    static int asyncEvent(ByteBuffer h) {
        return h.get(36) & 0xff;
    }

    /** Data-In, R2T (there: R2TSN). */
    static int dataSn(ByteBuffer h) {
        return h.getInt(36);
    }

    /** Data-Out. */
    static void putDataSn(ByteBuffer h, int dataSn) {
        h.putInt(36, dataSn);
    }

    /** Data-In, R2T. */
    static int bufferOffset(ByteBuffer h) {
        return h.getInt(40);
    }

    /** Data-Out. */
    static void putBufferOffset(ByteBuffer h, int offset) {
        h.putInt(40, offset);
    }

    /** Data-In with status, SCSI Response. */
    static int residualCount(ByteBuffer h) {
        return h.getInt(44);
    }

    /** R2T. */
    static int desiredDataTransferLength(ByteBuffer h) {
        return h.getInt(44);
    }
}
