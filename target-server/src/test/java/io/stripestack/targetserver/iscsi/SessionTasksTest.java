package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.targetserver.scsi.ScsiCommand;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The session's task table alone: tags, the immediate-command bound, the executing count and stalled writes. */
class SessionTasksTest {
    private final SessionTasks tasks = new SessionTasks(null, ImmediateEventExecutor.INSTANCE,
            new WriteBufferBudget(1 << 20, 1 << 20), null);

    private IscsiTask task(int itt, int ttt, long lun, boolean immediate) {
        ScsiCommand command = new ScsiCommand("nexus", lun, IscsiTestInitiator.write10(0, 1), 512, false, true, 0,
                null, UnpooledByteBufAllocator.DEFAULT);
        IscsiTask task = new IscsiTask(tasks, itt, ttt, lun << 48, 1, immediate, command);
        tasks.add(task);
        return task;
    }

    @Test
    void aTargetTransferTagInUseByACollectingWriteIsNeverHandedOutAgain() {
        IscsiTask write = task(0x10, 1, 0, false);
        assertEquals(2, tasks.nextTargetTransferTag(), "1 is the collecting write's");
        assertSame(write, tasks.byTtt(1));

        tasks.executing(write);
        assertNull(tasks.byTtt(1), "its data phase is over: Data-Out no longer finds it");
        assertSame(write, tasks.byItt(0x10), "task management still does");
        assertEquals(1, tasks.executingCount());
    }

    @Test
    void immediateCommandsAreBoundedAndForgettingOneMakesRoom() {
        IscsiTask first = task(1, Bhs.RESERVED_TAG, 0, true);
        task(2, Bhs.RESERVED_TAG, 0, true);
        task(3, Bhs.RESERVED_TAG, 0, false);
        assertFalse(tasks.immediateRoom(2), "two immediate commands held");

        tasks.forget(first);

        assertTrue(tasks.immediateRoom(2));
        assertFalse(tasks.holds(1));
        assertTrue(tasks.holds(2));
    }

    @Test
    void onLunSelectsTheTasksOfOneLunOrAll() {
        IscsiTask lun0 = task(1, Bhs.RESERVED_TAG, 0, false);
        IscsiTask lun1 = task(2, Bhs.RESERVED_TAG, 1, false);
        assertEquals(List.of(lun1), tasks.onLun(1));
        assertEquals(2, tasks.onLun(-1).size());
        assertTrue(tasks.onLun(-1).contains(lun0));
    }

    @Test
    void aWriteIsStalledOnlyWhenItsInitiatorOwesItData() {
        IscsiTask waitingForBudget = task(1, 1, 0, false);
        waitingForBudget.lastDataOutNanos = 0;
        IscsiTask owing = task(2, 2, 0, false);
        owing.outstandingR2ts = 1;
        owing.lastDataOutNanos = 100;

        assertNull(tasks.stalledWrite(99), "its last R2T is newer than the deadline");
        assertSame(owing, tasks.stalledWrite(100), "an R2T unanswered since the deadline");
    }
}
