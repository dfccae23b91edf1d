package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.MessageToMessageEncoder;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.iscsi.proto.Crc32cDigest;
import java.util.List;

/**
 * Serialises outbound {@link IscsiPdu}s: header (with its digest appended in place when enabled),
 * the data segment passed on as is (zero copy: a Data-In segment is a slice of the SCSI layer's
 * buffer), then one small trailer with padding and data digest.
 *
 * <p>Concurrency: event loop only, like {@link PduDecoder}; digests are switched on by the
 * connection handler after the final login response has been written.
 */
final class PduEncoder extends MessageToMessageEncoder<IscsiPdu> {
    private final ByteBufDigest digest = new ByteBufDigest();
    private boolean headerDigest;
    private boolean dataDigest;

    PduEncoder() {
        super(IscsiPdu.class);
    }

    void enableDigests(boolean header, boolean data) {
        this.headerDigest = header;
        this.dataDigest = data;
    }

    @Override
    protected void encode(ChannelHandlerContext ctx, IscsiPdu pdu, List<Object> out) {
        ByteBuf header = pdu.header();
        ByteBuf data = pdu.data();
        if (headerDigest) {
            int crc = digest.compute(header, header.readerIndex(), header.readableBytes(), 0);
            header.ensureWritable(Crc32cDigest.LENGTH);
            header.writeIntLE(crc);
        }
        out.add(header.retain());
        int dataLength = data.readableBytes();
        if (dataLength == 0) {
            return;
        }
        out.add(data.retain());
        int padding = Bhs.pad(dataLength);
        boolean withDigest = dataDigest;
        if (padding > 0 || withDigest) {
            ByteBuf trailer = ctx.alloc().buffer(padding + Crc32cDigest.LENGTH);
            trailer.writeZero(padding);
            if (withDigest) {
                trailer.writeIntLE(digest.compute(data, data.readerIndex(), dataLength, padding));
            }
            out.add(trailer);
        }
    }
}
