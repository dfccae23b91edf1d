package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.targetserver.scsi.ScsiCommand;
import io.stripestack.targetserver.scsi.ScsiCommandRouter;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link TaskManagement} over a {@link SessionTasks} table, with a fake {@link Wire}, {@link TaskPipeline} and
 * router, no connection and no channel: which tasks each function ends, which it waits for, and when it answers.
 */
class TaskManagementTest {
    private static final int ABORT_TASK = 1;
    private static final int ABORT_TASK_SET = 2;
    private static final int LOGICAL_UNIT_RESET = 5;
    private static final int TARGET_COLD_RESET = 7;
    private static final int COMPLETE = 0;
    private static final int TASK_DOES_NOT_EXIST = 1;
    private static final int LUN_DOES_NOT_EXIST = 2;

    /** A router with LUNs 0 and 1 that records the resets it is asked for. */
    private static final class ResetRecorder implements ScsiCommandRouter {
        final List<String> resets = new ArrayList<>();

        @Override
        public void execute(ScsiCommand command) {
            throw new AssertionError("task management runs no command");
        }

        @Override
        public List<Long> luns() {
            return List.of(0L, 1L);
        }

        @Override
        public void nexusAdded(String nexus) {
        }

        @Override
        public void nexusRemoved(String nexus) {
        }

        @Override
        public void lunReset(String nexus, long lun) {
            resets.add("LUN " + lun + " of " + nexus);
        }

        @Override
        public void targetReset(String nexus) {
            resets.add("target of " + nexus);
        }
    }

    private final RecordingWire wire = new RecordingWire();
    private final RecordingPipeline pipeline = new RecordingPipeline();
    private final SequenceNumbers sequence = new SequenceNumbers();
    private final ResetRecorder router = new ResetRecorder();
    private final SessionTasks tasks = new SessionTasks(router, ImmediateEventExecutor.INSTANCE,
            new WriteBufferBudget(1 << 20, 1 << 20), null);
    private int otherSessionsClosed;
    private final TaskManagement management = new TaskManagement(wire, sequence, tasks, pipeline, Runnable::run,
            IscsiTargetDefinition.builder("iqn.2026-12.io.stripestack:tm", router).build(), "the-nexus",
            () -> otherSessionsClosed++);
    private int nextItt = 0x10;

    TaskManagementTest() {
        sequence.start(0, 1, 16);
    }

    private IscsiTask task(long lun, IscsiTask.State state) {
        ScsiCommand command = new ScsiCommand("the-nexus", lun, IscsiTestInitiator.read10(0, 1), 512, true, false, 0,
                null, UnpooledByteBufAllocator.DEFAULT);
        IscsiTask task = new IscsiTask(tasks, nextItt++, Bhs.RESERVED_TAG, lun << 48, 1, false, command);
        task.state = state;
        tasks.add(task);
        return task;
    }

    private void request(int function, long lun, int referencedTag, int refCmdSn) {
        ByteBuf h = IscsiTestInitiator.bhs(Bhs.OP_TASK_MGMT_REQUEST | Bhs.IMMEDIATE_BIT, 0x80 | function, 0);
        h.setLong(8, lun << 48);
        h.setInt(16, 0x99);
        h.setInt(20, referencedTag);
        h.setInt(24, 1);
        h.setInt(32, refCmdSn);
        management.request(new TaskManagementHeader().wrap(h));
    }

    /** The responses written so far: the response byte of each. */
    private List<Integer> responses() {
        List<Integer> out = new ArrayList<>();
        for (RecordingWire.Written w : wire.withOpcode(Bhs.OP_TASK_MGMT_RESPONSE)) {
            out.add(w.header()[2] & 0xff);
        }
        return out;
    }

    @Test
    void abortTaskSetEndsTheUnstartedTasksOfItsLunAndAnswersOnlyWhenTheExecutingOneEnded() {
        IscsiTask collecting = task(0, IscsiTask.State.COLLECTING_DATA);
        IscsiTask waitingForRoom = task(0, IscsiTask.State.EXECUTING);
        pipeline.waiting.add(waitingForRoom);
        IscsiTask executing = task(0, IscsiTask.State.EXECUTING);
        IscsiTask otherLun = task(1, IscsiTask.State.EXECUTING);

        request(ABORT_TASK_SET, 0, Bhs.RESERVED_TAG, 0);

        assertEquals(List.of(collecting, waitingForRoom), pipeline.dropped, "tasks that never ran end at once");
        assertTrue(executing.aborted, "the executing task is marked: its answer is suppressed");
        assertFalse(otherLun.aborted, "LUN 1 is not touched");
        assertEquals(List.of(), responses(), "the response waits for the executing task");

        management.taskEnded(executing.abortWaiter);

        assertEquals(List.of(COMPLETE), responses());
    }

    @Test
    void logicalUnitResetResetsTheLunAfterItsTasksEndedAndRefusesAnUnknownLun() {
        IscsiTask executing = task(1, IscsiTask.State.EXECUTING);

        request(LOGICAL_UNIT_RESET, 1, Bhs.RESERVED_TAG, 0);
        assertEquals(List.of(), router.resets, "no reset while a task of the LUN still runs");
        management.taskEnded(executing.abortWaiter);
        assertEquals(List.of("LUN 1 of the-nexus"), router.resets);
        assertEquals(List.of(COMPLETE), responses());

        request(LOGICAL_UNIT_RESET, 7, Bhs.RESERVED_TAG, 0);
        assertEquals(List.of(COMPLETE, LUN_DOES_NOT_EXIST), responses());
    }

    @Test
    void abortTaskOfAnUnknownTagAnswersByWhereItsCmdSnLies() {
        IscsiTask collecting = task(0, IscsiTask.State.COLLECTING_DATA);

        request(ABORT_TASK, 0, collecting.itt, 1);
        assertEquals(List.of(collecting), pipeline.dropped);
        assertSame(collecting, pipeline.dropped.get(0));

        request(ABORT_TASK, 0, 0x7777, 5);   // inside the window [1, 16]: not received yet
        request(ABORT_TASK, 0, 0x7777, 0);   // below it: finished already
        assertEquals(List.of(COMPLETE, COMPLETE, TASK_DOES_NOT_EXIST), responses());
    }

    @Test
    void targetColdResetClosesTheOtherSessionsAndThisOneAfterItsResponse() {
        request(TARGET_COLD_RESET, 0, Bhs.RESERVED_TAG, 0);

        assertEquals(List.of("target of the-nexus"), router.resets);
        assertEquals(List.of(COMPLETE), responses());
        assertEquals(1, otherSessionsClosed);
        assertTrue(wire.closedAfterFlush);
    }
}
