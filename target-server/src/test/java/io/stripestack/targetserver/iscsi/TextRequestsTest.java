package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.targetserver.scsi.ScsiTarget;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link TextRequests} over a fake {@link Wire}: SendTargets in pieces of the initiator's MaxRecvDataSegmentLength. */
class TextRequestsTest {
    private static final String A = "iqn.2026-12.io.stripestack:a";
    private static final String B = "iqn.2026-12.io.stripestack:b";

    private final RecordingWire wire = new RecordingWire();
    private final SequenceNumbers sequence = new SequenceNumbers();
    private final NegotiatedParameters params = new NegotiatedParameters();
    private final ServerContext server = new ServerContext(IscsiServerSettings.builder().build(),
            List.of(IscsiTargetDefinition.builder(A, new ScsiTarget(Map.of())).build(),
                    IscsiTargetDefinition.builder(B, new ScsiTarget(Map.of())).build()),
            Runnable::run);
    private final SessionTasks tasks = new SessionTasks(null, ImmediateEventExecutor.INSTANCE, server.writeBuffers, null);
    /** A discovery session: SendTargets=All names every target. */
    private final TextRequests text = new TextRequests(wire, sequence, params, tasks, server, null,
            "iqn.1993-08.org.debian:01:text");

    TextRequestsTest() {
        sequence.start(0, 1, 16);
        params.initiatorMaxRecvDataSegmentLength = 40;
    }

    private void request(int ttt, String keys) {
        byte[] data = keys.getBytes(StandardCharsets.UTF_8);
        ByteBuf h = IscsiTestInitiator.bhs(Bhs.OP_TEXT_REQUEST | Bhs.IMMEDIATE_BIT, 0x80, data.length);
        h.setInt(16, 0x42);
        h.setInt(20, ttt);
        text.request(new TextRequestHeader().wrap(h), Unpooled.wrappedBuffer(data));
    }

    @Test
    void sendTargetsComesInPiecesEachAskedForByItsTargetTransferTag() {
        request(Bhs.RESERVED_TAG, "SendTargets=All\0");
        StringBuilder answer = new StringBuilder();
        for (;;) {
            List<RecordingWire.Written> pieces = wire.withOpcode(Bhs.OP_TEXT_RESPONSE);
            RecordingWire.Written piece = pieces.get(pieces.size() - 1);
            answer.append(new String(piece.data(), StandardCharsets.UTF_8));
            if ((piece.flags() & PduHeader.CONTINUE_BIT) == 0) {
                assertEquals(Bhs.RESERVED_TAG, piece.intAt(20), "the last piece carries no TTT");
                break;
            }
            assertEquals(40, piece.data().length, "a piece is MaxRecvDataSegmentLength long");
            assertNotEquals(Bhs.RESERVED_TAG, piece.intAt(20));
            request(piece.intAt(20), "");
        }
        String portal = "TargetAddress=192.0.2.2:3260," + server.settings.targetPortalGroupTag() + "\0";
        assertEquals("TargetName=" + A + "\0" + portal + "TargetName=" + B + "\0" + portal, answer.toString());
        assertEquals(List.of(), wire.rejects);
    }

    @Test
    void aTargetTransferTagOfNoPendingAnswerIsRejected() {
        request(0x1234, "");
        assertEquals(List.of(Bhs.REJECT_INVALID_PDU_FIELD), wire.rejects);
    }
}
