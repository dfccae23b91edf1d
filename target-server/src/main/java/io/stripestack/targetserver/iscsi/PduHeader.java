package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.stripestack.iscsi.proto.Bhs;

/**
 * A typed view of one PDU's Basic Header Segment (RFC 7143 section 11): each subclass names the
 * fields of one PDU type, so a field's offset is written down in exactly one place. The words
 * several PDU types keep at the same place with the same meaning (LUN, Target Transfer Tag, the data
 * words) are declared here once; {@link Bhs} holds the framing fields the decoder needs before it
 * knows the type.
 *
 * <p>A view is a flyweight that neither owns nor retains its buffer: a connection keeps one
 * instance per PDU type and re-points it at each PDU ({@link #wrap}, or {@code begin} for a header
 * the target writes), so reading or writing a header allocates nothing. A view is valid until it is
 * re-pointed; like the connection that keeps it, it is used by the connection's event loop only.
 * Offsets count from the reader index the header buffer had when wrapped.
 */
abstract class PduHeader<V extends PduHeader<V>> {
    static final int FLAGS = Bhs.FLAGS_OFFSET;
    static final int ITT = Bhs.ITT_OFFSET;
    /** The 8-byte LUN, in the PDU types that address a logical unit. */
    static final int LUN = Bhs.LUN_OFFSET;
    /** The Target Transfer Tag, in the PDU types that carry one. */
    static final int TTT = Bhs.TTT_OFFSET;
    /** DataSN of Data-In and Data-Out. */
    static final int DATA_SN = Bhs.DATA_SN_OFFSET;
    /** Buffer Offset of Data-In, Data-Out and R2T. */
    static final int BUFFER_OFFSET = Bhs.BUFFER_OFFSET_OFFSET;

    static final int FINAL_BIT = Bhs.FINAL_BIT;
    /** The C bit of Login and Text PDUs: the text continues in the next PDU. */
    static final int CONTINUE_BIT = Bhs.CONTINUE_BIT;

    private ByteBuf bhs;
    private int start;

    /** Points this view at the header in {@code header}, from its reader index on. */
    final V wrap(ByteBuf header) {
        bhs = header;
        start = header.readerIndex();
        return self();
    }

    /** The buffer this view reads, for a Reject, which returns the whole header to the initiator. */
    final ByteBuf buffer() {
        return bhs;
    }

    /** A copy of the 48 bytes, for a header that must outlive its PDU. */
    final ByteBuf copyBhs() {
        return bhs.copy(start, Bhs.LENGTH);
    }

    /** Lets go of the buffer once it belongs to someone else, so a stale view fails loudly. */
    final void detach() {
        bhs = null;
    }

    final boolean immediate() {
        return (getByte(0) & Bhs.IMMEDIATE_BIT) != 0;
    }

    final boolean isFinal() {
        return (flags() & FINAL_BIT) != 0;
    }

    final int itt() {
        return getInt(ITT);
    }

    /** The flags byte, unsigned: what its bits mean depends on the PDU type. */
    final int flags() {
        return getByte(FLAGS) & 0xff;
    }

    @SuppressWarnings("unchecked")
    final V self() {
        return (V) this;
    }

    /** The header's length as framed: the BHS and any AHS, without digest. */
    final int length() {
        return bhs.readableBytes();
    }

    final int getByte(int offset) {
        return bhs.getByte(start + offset);
    }

    final int getUnsignedShort(int offset) {
        return bhs.getUnsignedShort(start + offset);
    }

    final int getInt(int offset) {
        return bhs.getInt(start + offset);
    }

    final long getLong(int offset) {
        return bhs.getLong(start + offset);
    }

    final void getBytes(int offset, byte[] to, int toIndex, int length) {
        bhs.getBytes(start + offset, to, toIndex, length);
    }

    final void setByte(int offset, int value) {
        bhs.setByte(start + offset, value);
    }

    final void setShort(int offset, int value) {
        bhs.setShort(start + offset, value);
    }

    final void setInt(int offset, int value) {
        bhs.setInt(start + offset, value);
    }

    final void setLong(int offset, long value) {
        bhs.setLong(start + offset, value);
    }
}
