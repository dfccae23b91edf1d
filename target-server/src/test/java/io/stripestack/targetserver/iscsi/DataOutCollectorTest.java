package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.targetserver.scsi.ScsiCommand;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link DataOutCollector} through its narrow interfaces ({@link Wire}, {@link TaskPipeline}, {@link SessionTasks}),
 * without a connection or a channel: which Data-Out it takes, which it refuses, the R2Ts it sends and when a write
 * waits for write buffer budget.
 */
class DataOutCollectorTest {
    private static final int BURST = 8192;

    private final RecordingWire wire = new RecordingWire();
    private final RecordingPipeline pipeline = new RecordingPipeline();
    private final SequenceNumbers sequence = new SequenceNumbers();
    private final NegotiatedParameters params = new NegotiatedParameters();
    private final List<IscsiTask> granted = new ArrayList<>();
    private final List<IscsiTask> started = new ArrayList<>();
    private DataOutCollector collector;
    private SessionTasks tasks;
    private int nextItt = 1;

    DataOutCollectorTest() {
        params.firstBurstLength = BURST;
        params.maxBurstLength = BURST;
        sequence.start(0, 1, 16);
        session(1 << 20);
    }

    /** A session whose server has {@code budget} bytes of write buffers. */
    private void session(long budget) {
        SessionTasks.Events events = new SessionTasks.Events() {
            @Override
            public void executed(IscsiTask task) {
            }

            @Override
            public void writeBufferGranted(IscsiTask task) {
                granted.add(task);
                collector.bufferGranted(task);
            }

            @Override
            public void copyGranted(IscsiTask copy) {
            }
        };
        tasks = new SessionTasks(null, ImmediateEventExecutor.INSTANCE, new WriteBufferBudget(budget, budget), events);
        collector = new DataOutCollector(wire, sequence, params, tasks, pipeline);
    }

    @AfterEach
    void releaseEverything() {
        for (IscsiTask task : started) {
            task.releaseBuffers();
        }
    }

    private IscsiTask write(int length, boolean finalBit, byte[] immediate) {
        ScsiCommand command = new ScsiCommand("nexus", 0, IscsiTestInitiator.write10(0, length / 512), length, false,
                true, 0, null, UnpooledByteBufAllocator.DEFAULT);
        IscsiTask task = new IscsiTask(tasks, nextItt++, tasks.nextTargetTransferTag(), 0, 1, false, command);
        tasks.add(task);
        started.add(task);
        collector.start(task, finalBit, immediate == null ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(immediate));
        return task;
    }

    private void dataOut(IscsiTask task, int ttt, int offset, byte[] payload, int length, int dataSn, boolean finalBit) {
        ByteBuf h = IscsiTestInitiator.bhs(Bhs.OP_DATA_OUT, finalBit ? 0x80 : 0, length);
        h.setInt(16, task.itt);
        h.setInt(20, ttt);
        h.setInt(36, dataSn);
        h.setInt(40, offset);
        collector.dataOut(new DataOutHeader().wrap(h), Unpooled.wrappedBuffer(payload, offset, length), 0);
    }

    private static byte[] payload(int length) {
        byte[] bytes = new byte[length];
        new Random(length).nextBytes(bytes);
        return bytes;
    }

    @Test
    void unsolicitedDataOutBeyondTheFirstBurstIsRejectedAndTheCommandFails() {
        params.initialR2T = false;
        byte[] payload = payload(4 * BURST);
        IscsiTask task = write(payload.length, false, null);
        assertTrue(task.unsolicitedPending, "InitialR2T=No and no F bit: unsolicited data may follow");

        dataOut(task, Bhs.RESERVED_TAG, 0, payload, BURST + 512, 0, true);

        assertEquals(List.of(Bhs.REJECT_PROTOCOL_ERROR), wire.rejects, "data past FirstBurstLength is refused");
        assertTrue(task.dataPhaseError, "the command is answered DATA PHASE ERROR, never run with that data");
        assertEquals(0, task.dataEnd, "none of its bytes were taken");
    }

    @Test
    void unsolicitedDataWithinTheFirstBurstIsTakenAndTheRestIsAskedForByR2t() throws Exception {
        params.initialR2T = false;
        byte[] payload = payload(2 * BURST);
        IscsiTask task = write(payload.length, false, Arrays.copyOf(payload, 1024));

        dataOut(task, Bhs.RESERVED_TAG, 1024, payload, BURST - 1024, 0, true);
        assertEquals(List.of(), wire.rejects);
        List<RecordingWire.Written> r2ts = wire.withOpcode(Bhs.OP_R2T);
        assertEquals(1, r2ts.size(), "one R2T for the bytes past the first burst");
        assertEquals(BURST, r2ts.get(0).intAt(40), "R2T buffer offset");
        assertEquals(BURST, r2ts.get(0).intAt(44), "R2T desired length");

        dataOut(task, task.targetTransferTag, BURST, payload, BURST, 0, true);
        assertEquals(List.of(task), pipeline.dispatched, "dispatched once its data phase is over");
        assertFalse(task.dataPhaseError);
        assertArrayEquals(payload, ByteBufUtil.getBytes(task.dataOut), "every byte at its offset");
    }

    @Test
    void r2tsGoOutOnlyAsMaxOutstandingR2tAllowsAndSolicitedDataNobodyAskedForIsRejected() {
        params.maxOutstandingR2T = 2;
        byte[] payload = payload(4 * BURST);
        IscsiTask task = write(payload.length, true, null);
        assertEquals(2, wire.withOpcode(Bhs.OP_R2T).size(), "MaxOutstandingR2T=2: two R2Ts at once");

        dataOut(task, task.targetTransferTag, 2 * BURST, payload, BURST, 0, true);
        assertEquals(List.of(Bhs.REJECT_PROTOCOL_ERROR), wire.rejects, "the third burst was not asked for yet");
        assertTrue(task.dataPhaseError);
        assertEquals(List.of(), pipeline.dispatched, "the data phase is not over");
    }

    @Test
    void aDataOutAnsweringAnR2tOpensTheNextOne() {
        byte[] payload = payload(3 * BURST);
        IscsiTask task = write(payload.length, true, null);
        assertEquals(1, wire.withOpcode(Bhs.OP_R2T).size());

        dataOut(task, task.targetTransferTag, 0, payload, BURST / 2, 0, false);
        dataOut(task, task.targetTransferTag, BURST / 2, payload, BURST / 2, 1, true);
        assertEquals(2, wire.withOpcode(Bhs.OP_R2T).size(), "the burst ended: the next R2T");

        dataOut(task, task.targetTransferTag, BURST, payload, BURST, 1, true);
        assertTrue(task.dataPhaseError, "DataSN restarts at 0 in every R2T sequence");
    }

    @Test
    void aWriteThatFindsNoBudgetWaitsWithoutR2tsUntilABufferIsReleased() {
        session(2 * BURST);
        IscsiTask first = write(2 * BURST, true, null);
        assertEquals(1, wire.withOpcode(Bhs.OP_R2T).size());
        IscsiTask second = write(2 * BURST, true, null);
        assertTrue(second.waitingForBudget, "the budget is held by the first write");
        assertNull(second.dataOut);
        assertEquals(1, wire.withOpcode(Bhs.OP_R2T).size(), "no R2T for a write that waits for its buffer");

        first.releaseBuffers();

        assertEquals(List.of(second), granted, "the release grants the waiting write through its session");
        List<RecordingWire.Written> r2ts = wire.withOpcode(Bhs.OP_R2T);
        assertEquals(2, r2ts.size(), "the granted write gets its R2T");
        assertEquals(second.itt, r2ts.get(1).itt());
        assertSame(second, tasks.byTtt(second.targetTransferTag));
    }
}
