package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.iscsi.proto.Crc32cDigest;

/**
 * A header the target writes (RFC 7143 section 11: every target PDU carries StatSN, ExpCmdSN and
 * MaxCmdSN at the same place). {@link #begin} starts each PDU in a new buffer, the setters fill it,
 * {@link #toPdu} hands it over.
 */
abstract class ResponseHeader<V extends ResponseHeader<V>> extends PduHeader<V> {
    private static final int STAT_SN = Bhs.STAT_SN_OFFSET;
    private static final int EXP_CMD_SN = Bhs.EXP_CMD_SN_OFFSET;
    private static final int MAX_CMD_SN = Bhs.MAX_CMD_SN_OFFSET;
    /** The response code (SCSI, Task Management, Logout Response) or reason (Reject). */
    static final int RESPONSE = Bhs.RESPONSE_OFFSET;

    private final int opcode;

    ResponseHeader(int opcode) {
        this.opcode = opcode;
    }

    /**
     * Starts a zeroed header with the F bit set (most target PDUs always have it), in a buffer with
     * room for the header digest the encoder may append.
     */
    final V begin(ByteBufAllocator alloc, int dataSegmentLength) {
        ByteBuf header = alloc.buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        ByteBufBhs.begin(header, opcode, dataSegmentLength);
        V self = wrap(header);
        flags(FINAL_BIT);
        return self;
    }

    /** The PDU of this header and {@code data} (null for none); the view lets go of the header. */
    final IscsiPdu toPdu(ByteBuf data) {
        IscsiPdu pdu = IscsiPdu.of(buffer(), data);
        detach();
        return pdu;
    }

    final V itt(int itt) {
        setInt(ITT, itt);
        return self();
    }

    final void flags(int flags) {
        setByte(FLAGS, flags);
    }

    /** Sets or clears {@code bits} of the flags byte. */
    final V flag(int bits, boolean set) {
        int flags = flags();
        flags(set ? flags | bits : flags & ~bits);
        return self();
    }

    final V statSn(int statSn) {
        setInt(STAT_SN, statSn);
        return self();
    }

    final V expCmdSn(int expCmdSn) {
        setInt(EXP_CMD_SN, expCmdSn);
        return self();
    }

    final V maxCmdSn(int maxCmdSn) {
        setInt(MAX_CMD_SN, maxCmdSn);
        return self();
    }
}
