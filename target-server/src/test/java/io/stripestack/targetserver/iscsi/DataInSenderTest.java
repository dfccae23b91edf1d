package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.targetserver.scsi.ScsiCommand;
import java.io.ByteArrayOutputStream;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link DataInSender} over a fake {@link Wire} and {@link TaskPipeline}: a read beyond its session's share of the
 * Data-In budget waits (and the connection stops reading) until the read before it has left the socket, and a
 * read's Data-In is cut at MaxRecvDataSegmentLength with the F bit at every MaxBurstLength.
 */
class DataInSenderTest {
    private static final int SHARE = 4096;

    private final RecordingWire wire = new RecordingWire();
    private final RecordingPipeline pipeline = new RecordingPipeline();
    private final SequenceNumbers sequence = new SequenceNumbers();
    private final NegotiatedParameters params = new NegotiatedParameters();
    private final DataInBudget budget = new DataInBudget(1 << 20, SHARE);
    private final DataInSender sender = new DataInSender(wire, sequence, params, budget, pipeline);
    private final SessionTasks tasks = new SessionTasks(null, ImmediateEventExecutor.INSTANCE,
            new WriteBufferBudget(1 << 20, 1 << 20), null);
    private int nextItt = 1;

    DataInSenderTest() {
        sequence.start(0, 1, 16);
        params.initiatorMaxRecvDataSegmentLength = 1024;
        params.maxBurstLength = 2048;
    }

    private IscsiTask read(int length) {
        ScsiCommand command = new ScsiCommand("nexus", 0, IscsiTestInitiator.read10(0, length / 512), length, true,
                false, 0, null, UnpooledByteBufAllocator.DEFAULT);
        return new IscsiTask(tasks, nextItt++, Bhs.RESERVED_TAG, 0, 1, false, command);
    }

    @Test
    void aReadBeyondItsSessionsShareWaitsUntilTheReadBeforeItHasLeftTheSocket() throws Exception {
        IscsiTask first = read(SHARE);
        IscsiTask second = read(SHARE);
        assertTrue(sender.admit(first));
        assertFalse(sender.admit(second), "the session holds its whole share");
        assertTrue(sender.hasWaiting());
        assertEquals(1, wire.readInterestChanges, "the connection is told to stop reading");

        byte[] data = new byte[SHARE];
        new Random(1).nextBytes(data);
        first.command.complete(Unpooled.wrappedBuffer(data));
        sender.sendResult(first);
        first.releaseBuffers();
        assertEquals(List.of(), pipeline.executed, "the Data-In is queued, not written: its room is still held");

        wire.completeWrites();

        assertEquals(List.of(second), pipeline.executed, "room returned with the last PDU: the waiting read runs");
        assertFalse(sender.hasWaiting());
        sender.release(second);
        assertEquals(0, budget.stats().bytesHeld());
    }

    @Test
    void dataInIsCutAtMaxRecvDataSegmentLengthWithTheFinalBitAtEveryBurstAndTheStatusInTheLast() throws Exception {
        IscsiTask task = read(SHARE);
        assertTrue(sender.admit(task));
        byte[] data = new byte[SHARE];
        new Random(2).nextBytes(data);
        task.command.complete(Unpooled.wrappedBuffer(data));

        sender.sendResult(task);
        task.releaseBuffers();
        wire.completeWrites();

        List<RecordingWire.Written> pdus = wire.withOpcode(Bhs.OP_DATA_IN);
        assertEquals(4, pdus.size(), "4096 bytes in pieces of 1024");
        ByteArrayOutputStream joined = new ByteArrayOutputStream();
        int[] expectedFlags = {0x00, 0x80, 0x00, 0x81};
        for (int k = 0; k < pdus.size(); k++) {
            assertEquals(expectedFlags[k], pdus.get(k).flags() & 0x81, "F at each 2048-byte burst, status in the last");
            assertEquals(k, pdus.get(k).intAt(36), "DataSN");
            assertEquals(k * 1024, pdus.get(k).intAt(40), "buffer offset");
            joined.write(pdus.get(k).data());
        }
        assertArrayEquals(data, joined.toByteArray());
        assertEquals(List.of(), wire.withOpcode(Bhs.OP_SCSI_RESPONSE), "GOOD without sense: no separate response");
        assertEquals(0, budget.stats().bytesHeld(), "the read's room returned once its last PDU was written");
    }
}
