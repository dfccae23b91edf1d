package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.stripestack.iscsi.proto.Bhs;

/**
 * The framing fields of a Basic Header Segment in a Netty buffer, which the decoder needs before it knows a PDU's
 * type, and the start of every header the target writes. The fields of each type are its {@link PduHeader} view's;
 * every offset comes from the shared {@link Bhs}. Stateless; a header starts at its buffer's reader index.
 */
final class ByteBufBhs {
    private ByteBufBhs() {
    }

    static int opcode(ByteBuf header) {
        return header.getByte(header.readerIndex() + Bhs.OPCODE_OFFSET) & 0x3f;
    }

    /** The BHS and its AHS: the header without digest. */
    static int headerLength(ByteBuf header) {
        return Bhs.LENGTH + (header.getByte(header.readerIndex() + Bhs.TOTAL_AHS_LENGTH_OFFSET) & 0xff) * 4;
    }

    static int dataSegmentLength(ByteBuf header) {
        return header.getUnsignedMedium(header.readerIndex() + Bhs.DATA_SEGMENT_LENGTH_OFFSET);
    }

    /** Writes a zeroed 48-byte BHS with the opcode and the data segment length. */
    static void begin(ByteBuf header, int opcode, int dataSegmentLength) {
        int start = header.writerIndex();
        header.writeZero(Bhs.LENGTH);
        header.setByte(start + Bhs.OPCODE_OFFSET, opcode);
        header.setMedium(start + Bhs.DATA_SEGMENT_LENGTH_OFFSET, dataSegmentLength);
    }
}
