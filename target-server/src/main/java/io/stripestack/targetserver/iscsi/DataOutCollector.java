package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.stripestack.iscsi.proto.Bhs;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The data phase of a connection's writes: takes the write buffer from the server's
 * {@link WriteBufferBudget} (or waits for it, without R2Ts), places immediate, unsolicited and
 * solicited Data-Out, sends R2Ts as MaxOutstandingR2T allows, and hands the task to the
 * {@link TaskPipeline} to run once its data phase is over. It finds a write's task in the session's
 * {@link SessionTasks} by its tags and writes R2Ts and Rejects to the {@link Wire}.
 *
 * <p>Every byte is accounted for: a write runs only when bytes [0, EDTL) arrived once each and in
 * order (DataPDUInOrder and DataSequenceInOrder are always Yes), each R2T burst closed by its F bit
 * at its end and each Data-Out carrying the DataSN due. Anything else is a data phase error: the
 * phase runs to its end and the command is answered ABORTED COMMAND / DATA PHASE ERROR, never run,
 * so no byte the initiator did not send, and no byte of the pooled buffer's earlier owner, reaches a
 * LUN. The buffer is zeroed when taken besides ({@link WriteBuffers}).
 *
 * <p>Budget: a write whose buffer does not fit waits; only its unsolicited data (bounded by
 * FirstBurstLength) is taken at once, and when even that has no room the command is answered TASK
 * SET FULL after its unsolicited data (RFC 7143 section 11.4: the response waits for the Data-Out
 * with the F bit).
 *
 * <p>Concurrency: owned by the connection's event loop, like the task fields it writes;
 * {@link #bufferGranted} may be called on any thread and hops onto it. The budget's own fields of a task
 * are the budget's (its monitor).
 */
final class DataOutCollector {
    private static final Logger log = LoggerFactory.getLogger(DataOutCollector.class);

    private final Wire wire;
    private final SequenceNumbers sequence;
    private final NegotiatedParameters params;
    private final SessionTasks tasks;
    private final WriteBufferBudget budget;
    private final TaskPipeline pipeline;
    private final R2tHeader r2tHeader = new R2tHeader();

    DataOutCollector(Wire wire, SequenceNumbers sequence, NegotiatedParameters params, SessionTasks tasks,
            TaskPipeline pipeline) {
        this.wire = wire;
        this.sequence = sequence;
        this.params = params;
        this.tasks = tasks;
        this.budget = tasks.writeBuffers;
        this.pipeline = pipeline;
    }

    /** A write command arrived with {@code immediate} data (possibly none): its data phase starts. */
    void start(IscsiTask task, boolean finalBit, ByteBuf immediate) {
        int edtl = task.expectedTransferLength();
        int immediateLength = immediate.readableBytes();
        int firstBurst = Math.min(params.firstBurstLength, edtl);
        task.unsolicitedPending = !finalBit && !params.initialR2T && immediateLength < firstBurst;
        task.lastDataOutNanos = wire.executor().ticker().nanoTime();
        task.dataEnd = immediateLength;
        task.nextR2tOffset = immediateLength;
        int unsolicitedLength = task.unsolicitedPending ? firstBurst : immediateLength;
        if (budget.tryReserve(task)) {
            task.dataOut = WriteBuffers.allocate(wire.alloc(), edtl);
        } else if (unsolicitedLength > 0 && !budget.tryHoldUnsolicited(task, unsolicitedLength)) {
            // the initiator may send this data before any R2T: with no room for it, refuse the command
            budget.countRefusal();
            task.refusedForBudget = true;
            log.debug("{}: write ITT 0x{} of {} bytes refused with TASK SET FULL: write buffer budget exhausted",
                    wire.remote(), Integer.toHexString(task.itt), edtl);
        } else {
            task.dataOut = unsolicitedLength > 0 ? WriteBuffers.allocate(wire.alloc(), unsolicitedLength) : null;
            // a write carried whole by its unsolicited data needs nothing more from the budget
            task.waitingForBudget = unsolicitedLength < edtl;
        }
        if (task.dataOut != null && immediateLength > 0) {
            task.dataOut.setBytes(0, immediate, immediate.readerIndex(), immediateLength);
        }
        if (task.waitingForBudget && budget.reserveOrQueue(task)) {
            startGranted(task);
        } else {
            proceed(task);
        }
    }

    /** Any thread: the budget granted a queued task its buffer; the write continues on the event loop. */
    void bufferGranted(IscsiTask task) {
        try {
            wire.executor().execute(() -> startGranted(task));
        } catch (RejectedExecutionException e) {
            budget.release(task);
        }
    }

    /** Moves the unsolicited data into the whole buffer and starts the R2Ts. */
    private void startGranted(IscsiTask task) {
        if (task.aborted || task.state != IscsiTask.State.COLLECTING_DATA || !wire.open()) {
            // aborted while the grant was on its way: its release may have run before the grant
            budget.release(task);
            return;
        }
        ByteBuf whole = WriteBuffers.allocate(wire.alloc(), task.expectedTransferLength());
        ByteBuf unsolicited = task.dataOut;
        if (unsolicited != null) {
            whole.setBytes(0, unsolicited, 0, unsolicited.capacity());
            unsolicited.release();
            budget.releaseUnsolicited(task);
        }
        task.dataOut = whole;
        task.waitingForBudget = false;
        proceed(task);
        wire.flush();
    }

    /** A Data-Out PDU; {@code receivedNanos} is its arrival on the connection's ticker. */
    void dataOut(DataOutHeader h, ByteBuf data, long receivedNanos) {
        int ttt = h.ttt();
        IscsiTask task = ttt == Bhs.RESERVED_TAG ? tasks.byItt(h.itt()) : tasks.byTtt(ttt);
        if (task == null || task.state != IscsiTask.State.COLLECTING_DATA) {
            // data for a task that was aborted or already failed: nothing to do
            log.debug("{}: Data-Out for unknown task ITT 0x{} TTT 0x{} dropped", wire.remote(),
                    Integer.toHexString(h.itt()), Integer.toHexString(ttt));
            return;
        }
        int offset = h.bufferOffset();
        int length = data.readableBytes();
        int end = offset + length;
        boolean unsolicited = ttt == Bhs.RESERVED_TAG;
        boolean finalBit = h.isFinal();
        if (task.itt != h.itt() || offset < 0 || (long) offset + length > task.expectedTransferLength()
                || unsolicited && (!task.unsolicitedPending || end > params.firstBurstLength)
                || !unsolicited && (task.outstandingR2ts == 0 || end > task.nextR2tOffset)) {
            // outside the buffer, unsolicited beyond the first burst, or solicited data no R2T asked for
            dataPhaseError(task, "Data-Out outside what the command allows", offset, length);
            wire.reject(h.buffer(), Bhs.REJECT_PROTOCOL_ERROR);
            return;
        }
        if (h.dataSn() != task.expectedDataSn) {
            // ErrorRecoveryLevel 0 cannot ask for the PDU again: the command fails, the session lives on
            dataPhaseError(task, "Data-Out DataSN " + h.dataSn() + " where " + task.expectedDataSn
                    + " was due", offset, length);
        }
        if (offset != task.dataEnd) {
            dataPhaseError(task, "Data-Out out of order: " + task.dataEnd + " was due", offset, length);
        } else if (!unsolicited && finalBit != (end == task.burstEnd(offset, params.maxBurstLength))) {
            dataPhaseError(task, "Data-Out F bit not at the end of its R2T burst", offset, length);
        }
        if (!task.dataPhaseError) {
            if (task.dataOut != null) {
                // a command refused TASK SET FULL has no buffer: its unsolicited data is only counted
                task.dataOut.setBytes(offset, data, data.readerIndex(), length);
            }
            task.dataEnd = end;
        }
        task.lastDataOutNanos = receivedNanos;
        task.expectedDataSn++;
        if (finalBit) {
            task.expectedDataSn = 0;
            if (unsolicited) {
                task.unsolicitedPending = false;
                task.nextR2tOffset = Math.max(task.nextR2tOffset, end);
            } else {
                task.outstandingR2ts--;
            }
        }
        proceed(task);
    }

    /**
     * The command's data did not arrive exactly as negotiated. ErrorRecoveryLevel 0 cannot ask for it
     * again: the data phase runs to its end and the command is answered DATA PHASE ERROR, never run.
     */
    void dataPhaseError(IscsiTask task, String what, int offset, int length) {
        if (!task.dataPhaseError) {
            log.info("{}: {} (ITT 0x{}, offset {}, length {}); the command will fail", wire.remote(), what,
                    Integer.toHexString(task.itt), offset, length);
            task.dataPhaseError = true;
        }
    }

    /** Issues R2Ts while the window allows, or hands the command on once its data phase is over. */
    private void proceed(IscsiTask task) {
        if (task.unsolicitedPending || task.waitingForBudget) {
            return;
        }
        if (task.refusedForBudget || task.dataPhaseOver()) {
            pipeline.dispatch(task);
            return;
        }
        if (task.firstR2tOffset < 0) {
            task.firstR2tOffset = task.nextR2tOffset;
        }
        while (task.outstandingR2ts < params.maxOutstandingR2T && task.nextR2tOffset < task.expectedTransferLength()) {
            int length = Math.min(params.maxBurstLength, task.expectedTransferLength() - task.nextR2tOffset);
            R2tHeader h = r2tHeader.begin(wire.alloc(), 0)
                    .lunField(task.lunField)
                    .itt(task.itt)
                    .ttt(task.targetTransferTag)
                    .r2tSn(task.r2tSn++)
                    .bufferOffset(task.nextR2tOffset)
                    .desiredDataTransferLength(length);
            sequence.stampCurrent(h);
            wire.write(h.toPdu(null));
            task.nextR2tOffset += length;
            task.outstandingR2ts++;
            task.lastDataOutNanos = wire.executor().ticker().nanoTime();
        }
    }
}
