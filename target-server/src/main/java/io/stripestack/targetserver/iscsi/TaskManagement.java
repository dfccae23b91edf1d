package io.stripestack.targetserver.iscsi;

import io.stripestack.targetserver.scsi.ScsiCommandRouter;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Task management requests of one session (RFC 7143 section 11.5): ABORT TASK, ABORT TASK SET,
 * LOGICAL UNIT RESET, TARGET WARM and COLD RESET. A task that has not started ends at once; one
 * that is executing is marked, and the response waits until every such task has ended. Resets run
 * on the I/O executor (they may wait for the device) and answer on the event loop. It finds the tasks in
 * the session's {@link SessionTasks}, ends the ones that never started through the {@link TaskPipeline}
 * and answers on the {@link Wire}.
 *
 * <p>Concurrency: owned by the connection's event loop, like the tasks it aborts and the
 * {@link PendingTaskManagement}s it keeps count in; a reset runs on the I/O executor and hops back
 * before it answers.
 */
final class TaskManagement {
    private static final Logger log = LoggerFactory.getLogger(TaskManagement.class);

    static final int ABORT_TASK = 1;
    static final int ABORT_TASK_SET = 2;
    static final int LOGICAL_UNIT_RESET = 5;
    static final int TARGET_WARM_RESET = 6;
    static final int TARGET_COLD_RESET = 7;
    static final int TASK_REASSIGN = 8;
    private static final int COMPLETE = 0;
    private static final int TASK_DOES_NOT_EXIST = 1;
    private static final int LUN_DOES_NOT_EXIST = 2;
    private static final int REASSIGNMENT_NOT_SUPPORTED = 4;
    private static final int NOT_SUPPORTED = 5;

    private final Wire wire;
    private final SequenceNumbers sequence;
    private final SessionTasks tasks;
    private final TaskPipeline pipeline;
    private final Executor ioExecutor;
    private final IscsiTargetDefinition target;
    private final String nexus;
    /** TARGET COLD RESET: closes every other session to this target (they may live on other event loops). */
    private final Runnable closeOtherSessionsOfTarget;
    private final TaskManagementResponseHeader responseHeader = new TaskManagementResponseHeader();

    TaskManagement(Wire wire, SequenceNumbers sequence, SessionTasks tasks, TaskPipeline pipeline, Executor ioExecutor,
            IscsiTargetDefinition target, String nexus, Runnable closeOtherSessionsOfTarget) {
        this.wire = wire;
        this.sequence = sequence;
        this.tasks = tasks;
        this.pipeline = pipeline;
        this.ioExecutor = ioExecutor;
        this.target = target;
        this.nexus = nexus;
        this.closeOtherSessionsOfTarget = closeOtherSessionsOfTarget;
    }

    void request(TaskManagementHeader h) {
        sequence.retire(h.immediate());
        int function = h.function();
        int itt = h.itt();
        long lun = h.lun();
        PendingTaskManagement pending = new PendingTaskManagement(itt, function, lun);
        switch (function) {
            case ABORT_TASK: {
                IscsiTask task = tasks.byItt(h.referencedTaskTag());
                if (task == null) {
                    // RFC 7143 section 11.5.1: a RefCmdSN still inside the window names a command not
                    // received yet (complete); below the window the command already finished (no task)
                    boolean notYetReceived = sequence.inWindow(h.refCmdSn());
                    respond(itt, notYetReceived ? COMPLETE : TASK_DOES_NOT_EXIST);
                    return;
                }
                abort(task, pending);
                break;
            }
            case ABORT_TASK_SET:
            case LOGICAL_UNIT_RESET:
                if (!target.router().luns().contains(lun)) {
                    respond(itt, LUN_DOES_NOT_EXIST);
                    return;
                }
                abortAll(pending, lun);
                break;
            case TARGET_WARM_RESET:
            case TARGET_COLD_RESET:
                abortAll(pending, -1);
                break;
            case TASK_REASSIGN:
                respond(itt, REASSIGNMENT_NOT_SUPPORTED);
                return;
            default:
                respond(itt, NOT_SUPPORTED);
                return;
        }
        if (pending.tasksRemaining == 0) {
            finish(pending);
        }
    }

    private void abortAll(PendingTaskManagement pending, long lun) {
        for (IscsiTask task : tasks.onLun(lun)) {
            abort(task, pending);
        }
    }

    /** Aborts a task now if it has not started, or marks it so its end answers {@code pending}. */
    private void abort(IscsiTask task, PendingTaskManagement pending) {
        if (task.aborted) {
            return;
        }
        if (task.state == IscsiTask.State.COLLECTING_DATA || pipeline.withdrawWaiting(task)) {
            pipeline.dropUnstarted(task);
        } else {
            task.aborted = true;
            task.abortWaiter = pending;
            pending.tasksRemaining++;
        }
    }

    /** A task that a request waited for has ended. */
    void taskEnded(PendingTaskManagement pending) {
        if (--pending.tasksRemaining == 0) {
            finish(pending);
        }
    }

    /** Runs the SCSI-side reset off the event loop (it may wait for the device), then answers. */
    private void finish(PendingTaskManagement pending) {
        if (pending.function != LOGICAL_UNIT_RESET && pending.function != TARGET_WARM_RESET
                && pending.function != TARGET_COLD_RESET) {
            respond(pending.itt, COMPLETE);
            wire.flush();
            return;
        }
        ScsiCommandRouter router = target.router();
        try {
            ioExecutor.execute(() -> {
                try {
                    if (pending.function == LOGICAL_UNIT_RESET) {
                        router.lunReset(nexus, pending.lun);
                    } else {
                        router.targetReset(nexus);
                    }
                } finally {
                    wire.executor().execute(() -> {
                        if (wire.open()) {
                            respond(pending.itt, COMPLETE);
                            wire.flush();
                        }
                        if (pending.function == TARGET_COLD_RESET) {
                            closeTargetSessions();
                        }
                    });
                }
            });
        } catch (RejectedExecutionException e) {
            respond(pending.itt, NOT_SUPPORTED);
        }
    }

    /**
     * TARGET COLD RESET (RFC 7143 section 11.5.1): after the response, the target closes every
     * connection of every session to this target, this one included (after its response is flushed).
     */
    private void closeTargetSessions() {
        log.info("{}: TARGET COLD RESET of {}: closing all its sessions", wire.remote(), target.iqn());
        closeOtherSessionsOfTarget.run();
        wire.closeAfterFlush();
    }

    private void respond(int itt, int response) {
        TaskManagementResponseHeader h = responseHeader.begin(wire.alloc(), 0).response(response).itt(itt);
        sequence.stamp(h);
        wire.write(h.toPdu(null));
    }
}
