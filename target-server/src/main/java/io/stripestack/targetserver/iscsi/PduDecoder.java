package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.iscsi.proto.Crc32cDigest;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Frames the inbound byte stream into {@link IscsiPdu}s: BHS, AHS, optional header digest, data
 * segment, padding, optional data digest. Emits retained slices of the receive buffer (no copy).
 *
 * <p>Malformed input never throws out of this handler:
 * <ul>
 *   <li>a data segment longer than {@link #maxDataSegmentLength} is skipped as it arrives and the
 *       header is emitted as {@link IscsiPdu#malformed} (protocol error), so the connection sends a
 *       Reject and stays usable;</li>
 *   <li>a data digest mismatch emits the header as malformed (data digest error);</li>
 *   <li>a header digest mismatch means the framing cannot be trusted: the connection is closed, as
 *       RFC 7143 section 7.8 allows at ErrorRecoveryLevel 0.</li>
 * </ul>
 * A truncated PDU simply waits for more bytes; the connection's idle and login timers bound that.
 *
 * <p>Concurrency: runs on the channel's event loop only; the digest switches are set by the
 * connection handler on the same event loop when login completes.
 */
final class PduDecoder extends ByteToMessageDecoder {
    private static final Logger log = LoggerFactory.getLogger(PduDecoder.class);
    /** RFC 7143 section 6.2: login and text PDUs in the login phase carry at most 8192 bytes. */
    static final int LOGIN_MAX_DATA_SEGMENT = 8192;

    private final ByteBufDigest digest = new ByteBufDigest();
    private boolean headerDigest;
    private boolean dataDigest;
    private int maxDataSegmentLength = LOGIN_MAX_DATA_SEGMENT;
    private long bytesToSkip;
    private boolean broken;

    void enableDigests(boolean header, boolean data) {
        this.headerDigest = header;
        this.dataDigest = data;
    }

    /** The largest data segment accepted: the MaxRecvDataSegmentLength this target declared. */
    void maxDataSegmentLength(int bytes) {
        this.maxDataSegmentLength = bytes;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (broken) {
            in.skipBytes(in.readableBytes());
            return;
        }
        if (bytesToSkip > 0) {
            int skip = (int) Math.min(bytesToSkip, in.readableBytes());
            in.skipBytes(skip);
            bytesToSkip -= skip;
            if (bytesToSkip > 0) {
                return;
            }
        }
        if (in.readableBytes() < Bhs.LENGTH) {
            return;
        }
        int start = in.readerIndex();
        int headerLength = ByteBufBhs.headerLength(in);
        int dataLength = ByteBufBhs.dataSegmentLength(in);
        int headerDigestLength = headerDigest ? Crc32cDigest.LENGTH : 0;
        int paddedData = dataLength + Bhs.pad(dataLength);
        int dataDigestLength = dataDigest && dataLength > 0 ? Crc32cDigest.LENGTH : 0;
        int headerPart = headerLength + headerDigestLength;
        if (in.readableBytes() < headerPart) {
            return;
        }
        if (headerDigest) {
            int expected = digest.compute(in, start, headerLength, 0);
            if (expected != in.getIntLE(start + headerLength)) {
                log.warn("{}: header digest mismatch, closing the connection (framing lost)", ctx.channel().remoteAddress());
                broken = true;
                in.skipBytes(in.readableBytes());
                ctx.close();
                return;
            }
        }
        if (dataLength > maxDataSegmentLength) {
            log.warn("{}: PDU opcode 0x{} carries {} data bytes, more than the {} declared; rejecting it",
                    ctx.channel().remoteAddress(), Integer.toHexString(ByteBufBhs.opcode(in)),
                    dataLength, maxDataSegmentLength);
            out.add(IscsiPdu.malformed(in.retainedSlice(start, Bhs.LENGTH), Bhs.REJECT_PROTOCOL_ERROR));
            in.readerIndex(start + headerPart);
            bytesToSkip = (long) paddedData + dataDigestLength;
            int skip = (int) Math.min(bytesToSkip, in.readableBytes());
            in.skipBytes(skip);
            bytesToSkip -= skip;
            return;
        }
        int frameLength = headerPart + paddedData + dataDigestLength;
        if (in.readableBytes() < frameLength) {
            return;
        }
        int dataStart = start + headerPart;
        if (dataDigestLength > 0) {
            int expected = digest.compute(in, dataStart, dataLength, paddedData - dataLength);
            if (expected != in.getIntLE(dataStart + paddedData)) {
                out.add(IscsiPdu.malformed(in.retainedSlice(start, Bhs.LENGTH), Bhs.REJECT_DATA_DIGEST_ERROR));
                in.readerIndex(start + frameLength);
                return;
            }
        }
        ByteBuf header = in.retainedSlice(start, headerLength);
        ByteBuf data = dataLength > 0 ? in.retainedSlice(dataStart, dataLength) : null;
        in.readerIndex(start + frameLength);
        out.add(IscsiPdu.of(header, data));
    }
}
