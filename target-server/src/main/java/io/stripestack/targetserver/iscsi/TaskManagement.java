package io.stripestack.targetserver.iscsi;

import io.netty.channel.ChannelHandlerContext;
import io.stripestack.targetserver.scsi.ScsiCommandRouter;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Task management requests of one session (RFC 7143 section 11.5): ABORT TASK, ABORT TASK SET,
 * LOGICAL UNIT RESET, TARGET WARM and COLD RESET. A task that has not started ends at once; one
 * that is executing is marked, and the response waits until every such task has ended. Resets run
 * on the I/O executor (they may wait for the device) and answer on the event loop.
 *
 * <p>Concurrency: owned by the connection's event loop.
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

    private final IscsiConnection connection;
    private final ServerContext server;
    private final ChannelHandlerContext ctx;
    private final IscsiTargetDefinition target;
    private final String nexus;
    private final TaskManagementResponseHeader responseHeader = new TaskManagementResponseHeader();

    TaskManagement(IscsiConnection connection, ServerContext server, ChannelHandlerContext ctx,
            IscsiTargetDefinition target, String nexus) {
        this.connection = connection;
        this.server = server;
        this.ctx = ctx;
        this.target = target;
        this.nexus = nexus;
    }

    void request(TaskManagementHeader h) {
        connection.sequence().retire(h.immediate());
        int function = h.function();
        int itt = h.itt();
        long lun = h.lun();
        PendingTaskManagement pending = new PendingTaskManagement(itt, function, lun);
        switch (function) {
            case ABORT_TASK: {
                IscsiTask task = connection.taskByItt(h.referencedTaskTag());
                if (task == null) {
                    // RFC 7143 section 11.5.1: a RefCmdSN still inside the window names a command not
                    // received yet (complete); below the window the command already finished (no task)
                    boolean notYetReceived = connection.sequence().inWindow(h.refCmdSn());
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
        for (IscsiTask task : connection.tasksSnapshot()) {
            if (lun < 0 || task.lun() == lun) {
                abort(task, pending);
            }
        }
    }

    /** Aborts a task now if it has not started, or marks it so its end answers {@code pending}. */
    private void abort(IscsiTask task, PendingTaskManagement pending) {
        if (task.aborted) {
            return;
        }
        if (task.state == IscsiTask.State.COLLECTING_DATA || connection.dataIn().withdraw(task)
                || server.copies.withdraw(task)) {
            connection.dropUnstarted(task);
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
            ctx.flush();
            return;
        }
        ScsiCommandRouter router = target.router();
        try {
            server.ioExecutor.execute(() -> {
                try {
                    if (pending.function == LOGICAL_UNIT_RESET) {
                        router.lunReset(nexus, pending.lun);
                    } else {
                        router.targetReset(nexus);
                    }
                } finally {
                    connection.eventLoop().execute(() -> {
                        if (ctx.channel().isActive()) {
                            respond(pending.itt, COMPLETE);
                            ctx.flush();
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
        log.info("{}: TARGET COLD RESET of {}: closing all its sessions", connection.remote(), target.iqn());
        for (IscsiConnection other : server.sessions.connections()) {
            if (other != connection && other.target() == target) {
                other.closeFromAnyThread();
            }
        }
        connection.closeAfterFlush();
    }

    private void respond(int itt, int response) {
        TaskManagementResponseHeader h = responseHeader.begin(ctx.alloc(), 0).response(response).itt(itt);
        connection.sequence().stamp(h);
        ctx.write(h.toPdu(null), ctx.voidPromise());
    }
}
