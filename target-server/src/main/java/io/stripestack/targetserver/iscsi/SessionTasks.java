package io.stripestack.targetserver.iscsi;

import io.netty.util.collection.IntObjectHashMap;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.targetserver.scsi.ScsiCommandRouter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * The one owner of a session's tasks: the table by Initiator Task Tag and, for writes still collecting Data-Out,
 * by Target Transfer Tag; the Target Transfer Tags it hands out; the count of immediate commands (which the CmdSN
 * window does not bound) and of executing ones. It is also the session as its tasks and the server-wide gates
 * see it: the router and event loop a task runs with, where a buffer or copy granted on another thread goes
 * ({@link Events}), and the session's share of the write buffer budget.
 *
 * <p>Concurrency: the table, tags and counts are owned by the connection's event loop. {@link #writeBufferHeld}
 * and {@link #unsolicitedHeld} are guarded by the {@link WriteBufferBudget} monitor. {@link #writeBufferGranted}
 * and {@link #copyGranted} are called on any thread and only forward to {@link Events}, which hop onto the event
 * loop.
 */
final class SessionTasks {
    /** What the session does when its tasks come back: implemented by the connection. */
    interface Events {
        /** On the event loop: the task ran (or was answered without running) and must be answered. */
        void executed(IscsiTask task);

        /** Any thread: the write buffer budget granted a queued write its buffer. */
        void writeBufferGranted(IscsiTask task);

        /** Any thread: the copy gate lets a waiting EXTENDED COPY run. */
        void copyGranted(IscsiTask copy);
    }

    /** The session's target's router; null in a discovery session, which has no tasks. */
    final ScsiCommandRouter router;
    /** The connection's event loop, where a task comes back after it ran. */
    final Executor eventLoop;
    final WriteBufferBudget writeBuffers;
    private final Events events;
    /** Write buffer bytes this session holds (guarded by the {@link WriteBufferBudget} monitor). */
    long writeBufferHeld;
    /** Bytes of the unsolicited allowance this session holds (guarded likewise). */
    long unsolicitedHeld;

    private final IntObjectHashMap<IscsiTask> byItt = new IntObjectHashMap<>();
    private final IntObjectHashMap<IscsiTask> byTtt = new IntObjectHashMap<>();
    private int lastTtt;
    /** Immediate commands in the table: the CmdSN window does not bound them, this count does. */
    private int immediates;
    private int executing;

    SessionTasks(ScsiCommandRouter router, Executor eventLoop, WriteBufferBudget writeBuffers, Events events) {
        this.router = router;
        this.eventLoop = eventLoop;
        this.writeBuffers = writeBuffers;
        this.events = events;
    }

    boolean holds(int itt) {
        return byItt.containsKey(itt);
    }

    IscsiTask byItt(int itt) {
        return byItt.get(itt);
    }

    /** The write whose Data-Out carries {@code ttt}, while it collects data. */
    IscsiTask byTtt(int ttt) {
        return byTtt.get(ttt);
    }

    /** Whether another immediate command may become a task: as many as {@code limit} (the CmdSN window), no more. */
    boolean immediateRoom(int limit) {
        return immediates < limit;
    }

    /** A new task; a write that expects Data-Out is found by its Target Transfer Tag too until its data phase ends. */
    void add(IscsiTask task) {
        byItt.put(task.itt, task);
        if (task.immediate) {
            immediates++;
        }
        if (task.targetTransferTag != Bhs.RESERVED_TAG) {
            byTtt.put(task.targetTransferTag, task);
        }
    }

    /** A Target Transfer Tag no collecting write carries, never the reserved one. */
    int nextTargetTransferTag() {
        do {
            lastTtt++;
        } while (lastTtt == Bhs.RESERVED_TAG || byTtt.containsKey(lastTtt));
        return lastTtt;
    }

    /** The task's data phase is over and it starts executing: no more Data-Out finds it. */
    void executing(IscsiTask task) {
        if (task.targetTransferTag != Bhs.RESERVED_TAG) {
            byTtt.remove(task.targetTransferTag);
        }
        task.state = IscsiTask.State.EXECUTING;
        executing++;
    }

    /** An executing task came back (or one dispatched never started): it no longer counts as executing. */
    void stoppedExecuting() {
        executing--;
    }

    /** Commands dispatched and not answered yet. */
    int executingCount() {
        return executing;
    }

    /** Takes the task out of the table. */
    void forget(IscsiTask task) {
        if (byItt.remove(task.itt) != null && task.immediate) {
            immediates--;
        }
        if (task.targetTransferTag != Bhs.RESERVED_TAG) {
            byTtt.remove(task.targetTransferTag);
        }
    }

    /** Every task, copied, so the caller may end them as it goes. */
    List<IscsiTask> snapshot() {
        return new ArrayList<>(byItt.values());
    }

    /** The tasks addressed to logical unit {@code lun}, or every task when it is negative (task management). */
    List<IscsiTask> onLun(long lun) {
        List<IscsiTask> matching = new ArrayList<>();
        for (IscsiTask task : byItt.values()) {
            if (lun < 0 || task.lun() == lun) {
                matching.add(task);
            }
        }
        return matching;
    }

    /**
     * A write whose initiator owes it data (an R2T outstanding, or its unsolicited burst not ended) and whose
     * last R2T, Data-Out or command is older than {@code deadline}, or null. A write waiting only for budget owes
     * nothing: the target is the one to move.
     */
    IscsiTask stalledWrite(long deadline) {
        for (IscsiTask task : byTtt.values()) {
            if ((task.outstandingR2ts > 0 || task.unsolicitedPending) && task.lastDataOutNanos - deadline <= 0) {
                return task;
            }
        }
        return null;
    }

    void executed(IscsiTask task) {
        events.executed(task);
    }

    void writeBufferGranted(IscsiTask task) {
        events.writeBufferGranted(task);
    }

    void copyGranted(IscsiTask copy) {
        events.copyGranted(copy);
    }
}
