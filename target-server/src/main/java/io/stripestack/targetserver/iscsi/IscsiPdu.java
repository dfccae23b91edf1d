package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.AbstractReferenceCounted;
import io.netty.util.Recycler;

/**
 * One iSCSI PDU in either direction: the header (48-byte BHS plus any AHS, digests and padding
 * stripped) and the data segment (without padding or digest; empty when there is none).
 *
 * <p>Ownership: reference counted as a whole (so Netty releases it if a write fails); the PDU owns one
 * reference of each buffer and releases both when its own count drops to zero. Instances are pooled
 * (Netty's {@link Recycler}), so moving a PDU through the pipeline allocates nothing on the I/O path.
 * Inbound PDUs come from {@link PduDecoder}; their buffers are slices of the receive buffer.
 * Outbound PDUs are written to the channel and released by {@link PduEncoder}. A PDU is touched by
 * one thread at a time (the connection's event loop).
 */
final class IscsiPdu extends AbstractReferenceCounted {
    private static final Recycler<IscsiPdu> POOL = new Recycler<>() {
        @Override
        protected IscsiPdu newObject(Handle<IscsiPdu> handle) {
            return new IscsiPdu(handle);
        }
    };

    private final Recycler.Handle<IscsiPdu> handle;
    private ByteBuf header;
    private ByteBuf data;
    private int rejectReason;

    private IscsiPdu(Recycler.Handle<IscsiPdu> handle) {
        this.handle = handle;
    }

    private static IscsiPdu obtain(ByteBuf header, ByteBuf data, int rejectReason) {
        IscsiPdu pdu = POOL.get();
        pdu.setRefCnt(1);
        pdu.header = header;
        pdu.data = data == null ? Unpooled.EMPTY_BUFFER : data;
        pdu.rejectReason = rejectReason;
        return pdu;
    }

    /** A well-formed PDU; {@code data} may be null for none. Takes ownership of both buffers. */
    static IscsiPdu of(ByteBuf header, ByteBuf data) {
        return obtain(header, data, 0);
    }

    /**
     * A PDU the decoder could frame but must not be processed: the connection answers it with a
     * Reject carrying {@code reason} and this header.
     */
    static IscsiPdu malformed(ByteBuf header, int reason) {
        return obtain(header, null, reason);
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
        return ByteBufBhs.opcode(header);
    }

    @Override
    protected void deallocate() {
        header.release();
        data.release();
        header = null;
        data = null;
        handle.recycle(this);
    }

    @Override
    public IscsiPdu touch(Object hint) {
        header.touch(hint);
        data.touch(hint);
        return this;
    }
}
