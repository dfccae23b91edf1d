package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.targetserver.scsi.CopyLimits;
import io.stripestack.targetserver.scsi.ScsiCommand;
import java.util.concurrent.RejectedExecutionException;

/**
 * The SCSI side of a normal session: admits SCSI Command PDUs as {@link IscsiTask}s into the session's
 * {@link SessionTasks}, hands writes to their {@link DataOutCollector}, runs each task on the server's I/O executor
 * once its data phase is over (EXTENDED COPY only when the {@link CopyGate} lets it, a read only when the
 * {@link DataInSender} has room for its Data-In) and answers it when it comes back. It builds the session's
 * Data-Out, Data-In and task management parts and is the {@link TaskPipeline} they hand tasks back through.
 *
 * <p>Admission keeps the bounds of RFC 7143 and of the server: a tag in use is rejected, immediate commands are
 * bounded by the queue depth (TASK SET FULL beyond it), a write may announce at most {@link #MAX_WRITE_TRANSFER}
 * bytes and immediate data only as negotiated; once the session ends ({@link SessionEnd}: logout, drain) every
 * new command is rejected "waiting for logout".
 *
 * <p>Concurrency: owned by the connection's event loop, like the parts it builds and the task table. A task runs
 * on an I/O worker and comes back through the event loop's queue; {@link #writeBufferGranted} and
 * {@link #copyGranted} are called on any thread and hop onto the event loop.
 */
final class ScsiCommands implements TaskPipeline, SessionTasks.Events, SessionEnd.Commands {
    /** Largest Expected Data Transfer Length buffered for a write; above it the command is rejected. */
    static final int MAX_WRITE_TRANSFER = 64 << 20;

    private final Wire wire;
    private final SequenceNumbers sequence;
    private final NegotiatedParameters params;
    private final ServerContext server;
    private final String nexus;
    /** Runs after every answered task: a logout or drain may be waiting for the last one. */
    private final Runnable taskEnded;
    private final SessionTasks tasks;
    private final DataOutCollector dataOut;
    private final DataInSender dataIn;
    private final TaskManagement taskManagement;
    private boolean admitting = true;

    ScsiCommands(Wire wire, SequenceNumbers sequence, NegotiatedParameters params, ServerContext server,
            IscsiTargetDefinition target, String nexus, Runnable closeOtherSessionsOfTarget, Runnable taskEnded) {
        this.wire = wire;
        this.sequence = sequence;
        this.params = params;
        this.server = server;
        this.nexus = nexus;
        this.taskEnded = taskEnded;
        this.tasks = new SessionTasks(target.router(), wire.executor(), server.writeBuffers, this);
        this.dataOut = new DataOutCollector(wire, sequence, params, tasks, this);
        this.dataIn = new DataInSender(wire, sequence, params, server.dataIn, this);
        this.taskManagement = new TaskManagement(wire, sequence, tasks, this, server.ioExecutor, target, nexus,
                closeOtherSessionsOfTarget);
    }

    SessionTasks tasks() {
        return tasks;
    }

    DataOutCollector dataOut() {
        return dataOut;
    }

    TaskManagement taskManagement() {
        return taskManagement;
    }

    /** Whether a read waits for Data-In room (the connection reads nothing meanwhile). */
    boolean readsWaiting() {
        return dataIn.hasWaiting();
    }

    @Override
    public int executing() {
        return tasks.executingCount();
    }

    /** The session ends (logout, drain): every later command is rejected. */
    @Override
    public void stopAdmitting() {
        admitting = false;
    }

    /** A SCSI Command PDU whose CmdSN the window accepted, with its immediate data (possibly none). */
    void command(ScsiCommandHeader h, ByteBuf data) {
        boolean immediate = h.immediate();
        int itt = h.itt();
        int edtl = h.expectedDataTransferLength();
        boolean readBit = h.reads();
        boolean writeBit = h.writes();
        int immediateLength = data.readableBytes();
        if (!admitting) {
            sequence.retire(immediate);
            wire.reject(h.buffer(), Bhs.REJECT_WAITING_FOR_LOGOUT);
            return;
        }
        if (tasks.holds(itt)) {
            sequence.retire(immediate);
            wire.reject(h.buffer(), Bhs.REJECT_TASK_IN_PROGRESS);
            return;
        }
        if (immediate && !tasks.immediateRoom(server.settings.queueDepth())) {
            // the CmdSN window does not bound immediate commands: as many as the window holds, no more
            dataIn.sendStatusOnly(h, ScsiCommand.TASK_SET_FULL);
            return;
        }
        if (edtl < 0 || writeBit && edtl > MAX_WRITE_TRANSFER
                || immediateLength > 0 && (!writeBit || !params.immediateData || immediateLength > edtl
                        || immediateLength > params.firstBurstLength)) {
            sequence.retire(immediate);
            wire.reject(h.buffer(), immediateLength > 0 ? Bhs.REJECT_PROTOCOL_ERROR : Bhs.REJECT_INVALID_PDU_FIELD);
            return;
        }
        byte[] cdb = h.cdb();
        if (cdb == null) {
            sequence.retire(immediate);
            wire.reject(h.buffer(), Bhs.REJECT_INVALID_PDU_FIELD);
            return;
        }
        boolean expectsData = writeBit && edtl > 0;
        int ttt = expectsData ? tasks.nextTargetTransferTag() : Bhs.RESERVED_TAG;
        ScsiCommand command = new ScsiCommand(nexus, h.lun(), cdb, edtl, readBit, writeBit, h.taskAttributes(),
                null, wire.alloc());
        IscsiTask task = new IscsiTask(tasks, itt, ttt, h.lunField(), h.cmdSn(), immediate, command);
        tasks.add(task);
        if (expectsData) {
            dataOut.start(task, h.isFinal(), data);
        } else {
            dispatch(task);
        }
    }

    @Override
    public void dispatch(IscsiTask task) {
        task.command.dataOutReceived(task.dataOut);
        tasks.executing(task);
        if (task.dataOut != null && task.dataEnd != task.expectedTransferLength()) {
            dataOut.dataPhaseError(task, "write data incomplete at the end of its data phase", task.dataEnd, 0);
        }
        if (task.dataPhaseError || task.refusedForBudget) {
            if (task.dataPhaseError) {
                // the data cannot be trusted: never executed, answered ABORTED COMMAND / DATA PHASE ERROR
                task.command.failDataPhase();
            } else {
                task.command.completeWithStatus(ScsiCommand.TASK_SET_FULL);
            }
            task.state = IscsiTask.State.DONE;
            executed(task);
            return;
        }
        if (CopyLimits.isCopy(task.command)) {
            if (!server.copies.tryStart(task)) {
                return; // waits for copyGranted, holding no worker
            }
            task.copyRunning = true;
        }
        if (dataIn.admit(task)) {
            execute(task);
        }
    }

    @Override
    public void writeBufferGranted(IscsiTask task) {
        dataOut.bufferGranted(task);
    }

    /** Any thread: the copy gate lets a waiting EXTENDED COPY run; it runs on the event loop's hand-off. */
    @Override
    public void copyGranted(IscsiTask copy) {
        try {
            wire.executor().execute(() -> {
                copy.copyRunning = true;
                if (copy.aborted || !wire.open()) {
                    // aborted as the grant crossed its withdrawal: it ends without running
                    copy.command.completeWithStatus(ScsiCommand.TASK_ABORTED);
                    copy.state = IscsiTask.State.DONE;
                    executed(copy);
                } else {
                    execute(copy);
                }
            });
        } catch (RejectedExecutionException e) {
            server.copies.ended(copy);
        }
    }

    @Override
    public void execute(IscsiTask task) {
        try {
            server.ioExecutor.execute(task);
        } catch (RejectedExecutionException e) {
            task.command.completeWithStatus(ScsiCommand.BUSY);
            task.state = IscsiTask.State.DONE;
            executed(task);
        }
    }

    /** Back on the event loop after execution: answer, release, return the CmdSN slot. */
    @Override
    public void executed(IscsiTask task) {
        tasks.stoppedExecuting();
        if (task.copyRunning) {
            task.copyRunning = false;
            server.copies.ended(task);
        }
        tasks.forget(task);
        sequence.retire(task.immediate);
        if (task.aborted || !wire.open()) {
            task.releaseBuffers();
            dataIn.release(task);
        } else {
            dataIn.sendResult(task);
            task.releaseBuffers();
            wire.flush();
        }
        if (task.abortWaiter != null) {
            taskManagement.taskEnded(task.abortWaiter);
        }
        taskEnded.run();
    }

    @Override
    public boolean withdrawWaiting(IscsiTask task) {
        return dataIn.withdraw(task) || server.copies.withdraw(task);
    }

    /** A read waiting for Data-In room was dispatched already: it stops counting as executing. */
    @Override
    public void dropUnstarted(IscsiTask task) {
        task.aborted = true;
        if (task.state == IscsiTask.State.EXECUTING) {
            tasks.stoppedExecuting();
        }
        tasks.forget(task);
        sequence.retire(task.immediate);
        task.releaseBuffers();
    }

    /**
     * Logout: every task that has not started ends without an answer. Reads waiting for Data-In room and writes
     * still waiting for Data-Out can never complete now; copies waiting for their turn need not.
     */
    @Override
    public void dropUnstartedForLogout() {
        dataIn.dropWaiting();
        for (IscsiTask task : tasks.snapshot()) {
            if (task.state == IscsiTask.State.COLLECTING_DATA) {
                dropUnstarted(task);
            }
        }
        dropWaitingCopies();
    }

    /**
     * The connection closed: nothing is answered any more. Tasks that never started end; executing ones are
     * marked aborted and release what they hold when they come back; writes collecting data release theirs now.
     */
    void connectionLost() {
        dataIn.dropWaiting();
        server.dataIn.forget(dataIn);
        dropWaitingCopies();
        for (IscsiTask task : tasks.snapshot()) {
            task.aborted = true;
            if (task.state == IscsiTask.State.COLLECTING_DATA) {
                tasks.forget(task);
                task.releaseBuffers();
            }
        }
    }

    private void dropWaitingCopies() {
        for (IscsiTask copy : server.copies.withdrawAll(tasks)) {
            dropUnstarted(copy);
        }
    }
}
