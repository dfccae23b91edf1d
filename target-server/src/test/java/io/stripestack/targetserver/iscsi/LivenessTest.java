package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.stripestack.iscsi.proto.Bhs;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link Liveness} answering NOP-Outs over a fake {@link Wire}. */
class LivenessTest {
    private final RecordingWire wire = new RecordingWire();
    private final SequenceNumbers sequence = new SequenceNumbers();
    private final NegotiatedParameters params = new NegotiatedParameters();
    private final Liveness liveness = new Liveness(wire, sequence, Duration.ZERO);

    LivenessTest() {
        sequence.start(0, 1, 16);
        params.initiatorMaxRecvDataSegmentLength = 512;
        liveness.start(params, new SessionTasks(null, ImmediateEventExecutor.INSTANCE,
                new WriteBufferBudget(1 << 20, 1 << 20), null));
    }

    private void nopOut(int itt, byte[] data) {
        ByteBuf h = IscsiTestInitiator.bhs(Bhs.OP_NOP_OUT | Bhs.IMMEDIATE_BIT, 0x80, data.length);
        h.setInt(16, itt);
        h.setInt(20, Bhs.RESERVED_TAG);
        liveness.nopOut(new NopOutHeader().wrap(h), Unpooled.wrappedBuffer(data));
    }

    @Test
    void aPingIsEchoedUpToTheInitiatorsMaxRecvDataSegmentLength() {
        byte[] ping = new byte[1000];
        ping[0] = 7;
        nopOut(5, ping);

        List<RecordingWire.Written> answers = wire.withOpcode(Bhs.OP_NOP_IN);
        assertEquals(1, answers.size());
        assertEquals(5, answers.get(0).itt());
        assertEquals(Bhs.RESERVED_TAG, answers.get(0).intAt(20), "an answer carries no TTT");
        assertEquals(512, answers.get(0).data().length, "echo cut at MaxRecvDataSegmentLength");
        assertEquals(7, answers.get(0).data()[0]);
    }

    @Test
    void aNopOutWithTheReservedTagWantsNoAnswer() {
        nopOut(Bhs.RESERVED_TAG, new byte[0]);
        assertEquals(List.of(), wire.written);
    }
}
