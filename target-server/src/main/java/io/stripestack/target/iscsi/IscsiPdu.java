package io.stripestack.target.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.AbstractReferenceCounted;

/**
 * One iSCSI PDU in either direction: the header (48-byte BHS plus any AHS, digests and padding
 * stripped) and the data segment (without padding or digest; empty when there is none).
 *
 * <p>Ownership: reference counted as a whole (so Netty releases it if a write fails); the PDU owns one
 * reference of each buffer and releases both when its own count drops to zero. Inbound PDUs come from {@link PduDecoder}; their buffers are slices of the receive buffer.
 * Outbound PDUs are written to the channel and released by {@link PduEncoder}. A PDU is touched by
 * one thread at a time (the connection's event loop).
 */
final class IscsiPdu extends AbstractReferenceCounted {
    private final ByteBuf header;
    private final ByteBuf data;
    private final int rejectReason;

    private IscsiPdu(ByteBuf header, ByteBuf data, int rejectReason) {
        this.header = header;
        this.data = data;
        this.rejectReason = rejectReason;
    }

    /** A well-formed PDU; {@code data} may be null for none. Takes ownership of both buffers. */
    static IscsiPdu of(ByteBuf header, ByteBuf data) {
        return new IscsiPdu(header, data == null ? Unpooled.EMPTY_BUFFER : data, 0);
    }

    /**
     * A PDU the decoder could frame but must not be processed: the connection answers it with a
     * Reject carrying {@code reason} and this header.
     */
    static IscsiPdu malformed(ByteBuf header, int reason) {
        return new IscsiPdu(header, Unpooled.EMPTY_BUFFER, reason);
    }

    ByteBuf header() {
        return header;
    }

    ByteBuf data() {
        return data;
    }

    /** 0 for a PDU to process, otherwise the Reject reason the decoder found. */
    int rejectReason() {
        return rejectReason;
    }

    int opcode() {
        return Bhs.opcode(header);
    }

    @Override
    protected void deallocate() {
        header.release();
        data.release();
    }

    @Override
    public IscsiPdu touch(Object hint) {
        header.touch(hint);
        data.touch(hint);
        return this;
    }
}
