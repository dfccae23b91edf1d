package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The data phase of a connection's writes: takes the write buffer from the server's
 * {@link WriteBufferBudget} (or waits for it, without R2Ts), places immediate, unsolicited and
 * solicited Data-Out, sends R2Ts as MaxOutstandingR2T allows, and hands the task to the connection
 * to run once its data phase is over.
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
 * <p>Concurrency: owned by the connection's event loop; {@link #bufferGranted} may be called on any
 * thread and hops onto it.
 */
final class DataOutCollector {
    private static final Logger log = LoggerFactory.getLogger(DataOutCollector.class);

    private final IscsiConnection connection;
    private final ServerContext server;
    private final ChannelHandlerContext ctx;
    private final NegotiatedParameters params;
    private final R2tHeader r2tHeader = new R2tHeader();

    DataOutCollector(IscsiConnection connection, ServerContext server, ChannelHandlerContext ctx, NegotiatedParameters params) {
        this.connection = connection;
        this.server = server;
        this.ctx = ctx;
        this.params = params;
    }

    /** A write command arrived with {@code immediate} data (possibly none): its data phase starts. */
    void start(IscsiTask task, boolean finalBit, ByteBuf immediate) {
        int edtl = task.expectedTransferLength();
        int immediateLength = immediate.readableBytes();
        int firstBurst = Math.min(params.firstBurstLength, edtl);
        task.unsolicitedPending = !finalBit && !params.initialR2T && immediateLength < firstBurst;
        task.lastDataOutNanos = ctx.executor().ticker().nanoTime();
        task.dataEnd = immediateLength;
        task.nextR2tOffset = immediateLength;
        int unsolicitedLength = task.unsolicitedPending ? firstBurst : immediateLength;
        WriteBufferBudget budget = server.writeBuffers;
        if (budget.tryReserve(task)) {
            task.dataOut = WriteBuffers.allocate(ctx.alloc(), edtl);
        } else if (unsolicitedLength > 0 && !budget.tryHoldUnsolicited(task, unsolicitedLength)) {
            // the initiator may send this data before any R2T: with no room for it, refuse the command
            budget.countRefusal();
            task.refusedForBudget = true;
            log.debug("{}: write ITT 0x{} of {} bytes refused with TASK SET FULL: write buffer budget exhausted",
                    connection.remote(), Integer.toHexString(task.itt), edtl);
        } else {
            task.dataOut = unsolicitedLength > 0 ? WriteBuffers.allocate(ctx.alloc(), unsolicitedLength) : null;
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
            connection.eventLoop().execute(() -> startGranted(task));
        } catch (RejectedExecutionException e) {
            server.writeBuffers.release(task);
        }
    }

    /** Moves the unsolicited data into the whole buffer and starts the R2Ts. */
    private void startGranted(IscsiTask task) {
        if (task.aborted || task.state != IscsiTask.State.COLLECTING_DATA || !ctx.channel().isActive()) {
            // aborted while the grant was on its way: its release may have run before the grant
            server.writeBuffers.release(task);
            return;
        }
        ByteBuf whole = WriteBuffers.allocate(ctx.alloc(), task.expectedTransferLength());
        ByteBuf unsolicited = task.dataOut;
        if (unsolicited != null) {
            whole.setBytes(0, unsolicited, 0, unsolicited.capacity());
            unsolicited.release();
            server.writeBuffers.releaseUnsolicited(task);
        }
        task.dataOut = whole;
        task.waitingForBudget = false;
        proceed(task);
        ctx.flush();
    }

    /** A Data-Out PDU; {@code receivedNanos} is its arrival on the connection's ticker. */
    void dataOut(DataOutHeader h, ByteBuf data, long receivedNanos) {
        int ttt = h.ttt();
        IscsiTask task = ttt == Bhs.RESERVED_TAG ? connection.taskByItt(h.itt()) : connection.taskByTtt(ttt);
        if (task == null || task.state != IscsiTask.State.COLLECTING_DATA) {
            // data for a task that was aborted or already failed: nothing to do
            log.debug("{}: Data-Out for unknown task ITT 0x{} TTT 0x{} dropped", connection.remote(),
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
            connection.sendReject(h.buffer(), Bhs.REJECT_PROTOCOL_ERROR);
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
            log.info("{}: {} (ITT 0x{}, offset {}, length {}); the command will fail", connection.remote(), what,
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
            connection.dispatch(task);
            return;
        }
        if (task.firstR2tOffset < 0) {
            task.firstR2tOffset = task.nextR2tOffset;
        }
        while (task.outstandingR2ts < params.maxOutstandingR2T && task.nextR2tOffset < task.expectedTransferLength()) {
            int length = Math.min(params.maxBurstLength, task.expectedTransferLength() - task.nextR2tOffset);
            R2tHeader h = r2tHeader.begin(ctx.alloc(), 0)
                    .lunField(task.lunField)
                    .itt(task.itt)
                    .ttt(task.targetTransferTag)
                    .r2tSn(task.r2tSn++)
                    .bufferOffset(task.nextR2tOffset)
                    .desiredDataTransferLength(length);
            connection.sequence().stampCurrent(h);
            ctx.write(h.toPdu(null), ctx.voidPromise());
            task.nextR2tOffset += length;
            task.outstandingR2ts++;
            task.lastDataOutNanos = ctx.executor().ticker().nanoTime();
        }
    }

    /**
     * A write whose initiator owes it data (an R2T outstanding, or its unsolicited burst not ended) and whose
     * last R2T, Data-Out or command is older than {@code deadline}, or null. A write waiting only for budget owes
     * nothing: the target is the one to move.
     */
    IscsiTask stalledSince(Iterable<IscsiTask> writes, long deadline) {
        for (IscsiTask task : writes) {
            if ((task.outstandingR2ts > 0 || task.unsolicitedPending) && task.lastDataOutNanos - deadline <= 0) {
                return task;
            }
        }
        return null;
    }
}
