package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ResourceLeakDetector;
import io.stripestack.iscsi.proto.Bhs;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** PduDecoder and PduEncoder without sockets: framing, padding, digests and hostile input. */
class IscsiPduCodecTest {

    @BeforeAll
    static void paranoidLeakDetection() {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
    }

    private static ByteBuf pdu(int opcode, byte[] data, int ahsWords) {
        ByteBuf b = Unpooled.buffer();
        b.writeZero(Bhs.LENGTH + ahsWords * 4);
        b.setByte(0, opcode);
        b.setByte(1, 0x80);
        b.setByte(4, ahsWords);
        b.setMedium(5, data.length);
        b.setInt(16, 0x1234);
        b.writeBytes(data);
        b.writeZero(Bhs.pad(data.length));
        return b;
    }

    @Test
    void crc32cMatchesRfc7143AppendixBVectors() {
        ByteBufDigest crc = new ByteBufDigest();
        // 32 bytes of zeros -> aa 36 91 8a on the wire; 32 bytes of 0xff -> 43 ab a8 62
        ByteBuf zeros = Unpooled.wrappedBuffer(new byte[32]);
        assertEquals(0x8a9136aa, crc.compute(zeros, 0, 32, 0));
        byte[] ones = new byte[32];
        java.util.Arrays.fill(ones, (byte) 0xff);
        assertEquals(0x62a8ab43, crc.compute(Unpooled.wrappedBuffer(ones), 0, 32, 0));
        byte[] incrementing = new byte[32];
        for (int i = 0; i < 32; i++) {
            incrementing[i] = (byte) i;
        }
        assertEquals(0x46dd794e, crc.compute(Unpooled.wrappedBuffer(incrementing), 0, 32, 0));
    }

    @Test
    void decoderFramesPdusDeliveredOneByteAtATime() {
        EmbeddedChannel ch = new EmbeddedChannel(new PduDecoder());
        byte[] data = "abcde".getBytes(StandardCharsets.US_ASCII);
        ByteBuf wire = Unpooled.buffer();
        wire.writeBytes(pdu(Bhs.OP_NOP_OUT, data, 1));
        wire.writeBytes(pdu(Bhs.OP_NOP_OUT, new byte[0], 0));
        while (wire.isReadable()) {
            ch.writeInbound(wire.readRetainedSlice(1));
        }
        wire.release();
        IscsiPdu first = ch.readInbound();
        assertEquals(52, first.header().readableBytes(), "BHS + one AHS word");
        assertEquals("abcde", first.data().toString(StandardCharsets.US_ASCII), "padding stripped");
        assertEquals(0x1234, new NopOutHeader().wrap(first.header()).itt());
        first.release();
        IscsiPdu second = ch.readInbound();
        assertFalse(second.data().isReadable());
        second.release();
        assertNull(ch.readInbound());
        assertFalse(ch.finish());
    }

    @Test
    void truncatedPduWaitsAndLeaksNothingWhenTheConnectionDrops() {
        EmbeddedChannel ch = new EmbeddedChannel(new PduDecoder());
        ByteBuf full = pdu(Bhs.OP_SCSI_COMMAND, new byte[100], 0);
        ch.writeInbound(full.readRetainedSlice(60));
        full.release();
        assertNull(ch.readInbound());
        assertFalse(ch.finishAndReleaseAll());
    }

    @Test
    void oversizedDataSegmentIsSkippedAndReportedThenFramingResumes() {
        PduDecoder decoder = new PduDecoder();
        EmbeddedChannel ch = new EmbeddedChannel(decoder);
        ByteBuf big = pdu(Bhs.OP_DATA_OUT, new byte[PduDecoder.LOGIN_MAX_DATA_SEGMENT + 1], 0);
        ch.writeInbound(big.readRetainedSlice(3000));
        ch.writeInbound(big.readRetainedSlice(big.readableBytes()));
        big.release();
        ch.writeInbound(pdu(Bhs.OP_NOP_OUT, new byte[4], 0));
        IscsiPdu rejected = ch.readInbound();
        assertEquals(Bhs.REJECT_PROTOCOL_ERROR, rejected.rejectReason());
        assertEquals(Bhs.OP_DATA_OUT, rejected.opcode());
        rejected.release();
        IscsiPdu next = ch.readInbound();
        assertEquals(0, next.rejectReason());
        assertEquals(Bhs.OP_NOP_OUT, next.opcode());
        next.release();
        assertFalse(ch.finish());
    }

    @Test
    void digestsAreVerifiedDataErrorsReportedHeaderErrorsClose() {
        PduDecoder decoder = new PduDecoder();
        decoder.enableDigests(true, true);
        EmbeddedChannel ch = new EmbeddedChannel(decoder);
        ByteBufDigest crc = new ByteBufDigest();
        byte[] data = "digest".getBytes(StandardCharsets.US_ASCII);
        ByteBuf good = withDigests(crc, data, false);
        ch.writeInbound(good);
        IscsiPdu ok = ch.readInbound();
        assertEquals(0, ok.rejectReason());
        assertEquals("digest", ok.data().toString(StandardCharsets.US_ASCII));
        ok.release();

        ch.writeInbound(withDigests(crc, data, true));
        IscsiPdu bad = ch.readInbound();
        assertEquals(Bhs.REJECT_DATA_DIGEST_ERROR, bad.rejectReason());
        bad.release();

        ByteBuf corruptHeader = withDigests(crc, data, false);
        corruptHeader.setByte(20, 0x55);
        ch.writeInbound(corruptHeader);
        assertNull(ch.readInbound());
        assertFalse(ch.isActive(), "header digest error closes the connection");
        ch.finishAndReleaseAll();
    }

    private static ByteBuf withDigests(ByteBufDigest crc, byte[] data, boolean corruptData) {
        ByteBuf header = pdu(Bhs.OP_NOP_OUT, new byte[0], 0);
        header.setMedium(5, data.length);
        ByteBuf wire = Unpooled.buffer();
        wire.writeBytes(header);
        header.release();
        wire.writeIntLE(crc.compute(wire, 0, Bhs.LENGTH, 0));
        int dataStart = wire.writerIndex();
        wire.writeBytes(data).writeZero(Bhs.pad(data.length));
        int digest = crc.compute(wire, dataStart, data.length, Bhs.pad(data.length));
        wire.writeIntLE(corruptData ? ~digest : digest);
        return wire;
    }

    @Test
    void garbageNeverThrowsOutOfTheDecoder() {
        Random random = new Random(42);
        for (int round = 0; round < 50; round++) {
            EmbeddedChannel ch = new EmbeddedChannel(new PduDecoder());
            byte[] junk = new byte[random.nextInt(20000)];
            random.nextBytes(junk);
            ch.writeInbound(Unpooled.wrappedBuffer(junk));
            for (Object o; (o = ch.readInbound()) != null; ) {
                ((IscsiPdu) o).release();
            }
            ch.checkException();
            ch.finishAndReleaseAll();
        }
    }

    @Test
    void oneHeaderViewReadsEachPduWhereItsReaderIndexStands() {
        ByteBuf wire = Unpooled.buffer();
        wire.writeBytes(pdu(Bhs.OP_DATA_OUT, new byte[0], 0));
        wire.writeBytes(pdu(Bhs.OP_DATA_OUT, new byte[0], 0));
        wire.setInt(Bhs.LENGTH + 16, 0x5678);
        wire.setInt(Bhs.LENGTH + 40, 4096);
        DataOutHeader view = new DataOutHeader();
        assertEquals(0x1234, view.wrap(wire).itt());
        wire.skipBytes(Bhs.LENGTH);
        assertEquals(0x5678, view.wrap(wire).itt(), "re-pointed at the second PDU");
        assertEquals(4096, view.bufferOffset());
        assertTrue(view.isFinal());
        wire.release();
    }

    @Test
    void responseHeadersWriteTheirFieldsAtTheRfcOffsets() {
        IscsiPdu pdu = new DataInHeader().begin(UnpooledByteBufAllocator.DEFAULT, 0)
                .status(0x02).residual(false, 7).itt(9).dataSn(3).bufferOffset(512)
                .toPdu(null);
        ByteBuf h = pdu.header();
        assertEquals(Bhs.OP_DATA_IN, pdu.opcode());
        assertEquals(0x80 | 0x02 | 0x01, h.getByte(1) & 0xff, "F, U and S bits");
        assertEquals(0x02, h.getByte(3), "status");
        assertEquals(9, h.getInt(16));
        assertEquals(3, h.getInt(36));
        assertEquals(512, h.getInt(40));
        assertEquals(7, h.getInt(44), "residual count");
        pdu.release();
    }

    @Test
    void encoderPadsAndAppendsLittleEndianDigestsWithoutCopyingData() {
        PduEncoder encoder = new PduEncoder();
        encoder.enableDigests(true, true);
        EmbeddedChannel ch = new EmbeddedChannel(encoder);
        ByteBuf data = Unpooled.directBuffer().writeBytes("hello".getBytes(StandardCharsets.US_ASCII));
        ch.writeOutbound(new DataInHeader().begin(UnpooledByteBufAllocator.DEFAULT, 5).toPdu(data));
        ByteBuf h = ch.readOutbound();
        assertEquals(52, h.readableBytes());
        ByteBufDigest crc = new ByteBufDigest();
        assertEquals(crc.compute(h, 0, 48, 0), h.getIntLE(48));
        ByteBuf d = ch.readOutbound();
        assertTrue(d == data || d.unwrap() == data, "data segment passed on, not copied");
        ByteBuf trailer = ch.readOutbound();
        assertEquals("000000", ByteBufUtil.hexDump(trailer, 0, 3), "three pad bytes");
        assertEquals(crc.compute(d, d.readerIndex(), 5, 3), trailer.getIntLE(3));
        h.release();
        d.release();
        trailer.release();
        assertFalse(ch.finish());
    }
}
