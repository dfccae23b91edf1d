package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.targetserver.scsi.ScsiCommand;
import java.util.ArrayDeque;
import java.util.concurrent.RejectedExecutionException;

/**
 * What leaves the target for a command: Data-In (split by the initiator's MaxRecvDataSegmentLength,
 * F bit at every MaxBurstLength), the status (collapsed into the last Data-In for GOOD without
 * sense, else a SCSI Response), and the room reads take in the server's {@link DataInBudget}.
 *
 * <p>A read holds its Expected Data Transfer Length of the budget from its dispatch until its last
 * PDU has been written to the socket (or failed with the connection). A read that finds no room
 * waits here in arrival order, and the connection stops reading its socket while any does: an
 * initiator that never reads its answers holds its share and no more. A read that gets its room goes
 * on through the {@link TaskPipeline}; everything leaves through the {@link Wire}.
 *
 * <p>Concurrency: owned by the connection's event loop (the queue, {@link #held} and the tasks'
 * {@code dataInHeld}); {@link #budgetReturned} may be called on any thread and hops onto it. The
 * budget's own counts are guarded by its monitor.
 */
final class DataInSender {
    private final Wire wire;
    private final SequenceNumbers sequence;
    private final NegotiatedParameters params;
    private final DataInBudget budget;
    private final TaskPipeline pipeline;
    /** Data-In bytes this session holds of the server's budget. */
    private long held;
    /** Reads waiting for Data-In room, in arrival order. */
    private final ArrayDeque<IscsiTask> waiting = new ArrayDeque<>();
    private final DataInHeader dataInHeader = new DataInHeader();
    private final ScsiResponseHeader responseHeader = new ScsiResponseHeader();

    DataInSender(Wire wire, SequenceNumbers sequence, NegotiatedParameters params, DataInBudget budget,
            TaskPipeline pipeline) {
        this.wire = wire;
        this.sequence = sequence;
        this.params = params;
        this.budget = budget;
        this.pipeline = pipeline;
    }

    /** Whether {@code task} may run now; false when it waits for Data-In room (it runs later). */
    boolean admit(IscsiTask task) {
        if (!task.reads() || task.expectedTransferLength() == 0) {
            return true;
        }
        if (waiting.isEmpty() && reserve(task)) {
            return true;
        }
        waiting.add(task);
        wire.readInterestChanged();
        return false;
    }

    boolean hasWaiting() {
        return !waiting.isEmpty();
    }

    /** Takes a task that never started out of the queue; false if it was not waiting. */
    boolean withdraw(IscsiTask task) {
        boolean removed = waiting.remove(task);
        if (removed) {
            wire.readInterestChanged();
        }
        return removed;
    }

    /** Every read that never started: they end without an answer (logout, connection loss). */
    void dropWaiting() {
        IscsiTask task;
        while ((task = waiting.poll()) != null) {
            pipeline.dropUnstarted(task);
        }
    }

    private boolean reserve(IscsiTask task) {
        if (!budget.tryReserve(this, held, task.expectedTransferLength())) {
            return false;
        }
        held += task.expectedTransferLength();
        task.dataInHeld = task.expectedTransferLength();
        return true;
    }

    /** Returns a task's Data-In bytes; then reads waiting here may go. */
    void release(IscsiTask task) {
        int bytes = task.dataInHeld;
        if (bytes == 0) {
            return;
        }
        task.dataInHeld = 0;
        held -= bytes;
        budget.release(bytes);
        startWaiting();
    }

    /** Any thread: the server-wide budget has room again. */
    void budgetReturned() {
        try {
            wire.executor().execute(this::startWaiting);
        } catch (RejectedExecutionException e) {
            // the event loop is shutting down: nothing waits any more
        }
    }

    private void startWaiting() {
        while (!waiting.isEmpty() && wire.open() && reserve(waiting.peek())) {
            pipeline.execute(waiting.poll());
        }
        wire.readInterestChanged();
    }

    /** Sends the command's Data-In and status. */
    void sendResult(IscsiTask task) {
        ScsiCommand cmd = task.command;
        ByteBuf dataIn = cmd.dataIn();
        int edtl = task.expectedTransferLength();
        int toSend = dataIn == null || !task.reads() ? 0 : Math.min(dataIn.readableBytes(), edtl);
        long commandLength = cmd.commandTransferLength();
        if (commandLength >= 0 && task.reads()) {
            toSend = (int) Math.min(toSend, commandLength);
        }
        boolean overflow = commandLength > edtl;
        long residual = 0;
        if (overflow) {
            residual = commandLength - edtl;
        } else {
            long transferred = task.reads() ? toSend : Math.max(commandLength, 0);
            if (transferred < edtl) {
                residual = edtl - transferred;
            }
        }
        int residualCount = (int) Math.min(residual, 0xffffffffL);
        boolean collapse = toSend > 0 && cmd.status() == ScsiCommand.GOOD && cmd.sense() == null;
        int dataSn = 0;
        int offset = 0;
        int segmentLimit = params.initiatorMaxRecvDataSegmentLength;
        while (offset < toSend) {
            int burstLeft = params.maxBurstLength - offset % params.maxBurstLength;
            int length = Math.min(Math.min(segmentLimit, toSend - offset), burstLeft);
            boolean last = offset + length == toSend;
            DataInHeader h = dataInHeader.begin(wire.alloc(), length)
                    .finalBit(last || length == burstLeft)
                    .lunField(task.lunField)
                    .itt(task.itt)
                    .ttt(Bhs.RESERVED_TAG)
                    .dataSn(dataSn++)
                    .bufferOffset(offset);
            if (last && collapse) {
                h.status(cmd.status()).residual(overflow, residualCount);
                sequence.stamp(h);
            } else {
                sequence.stampWindow(h);
            }
            IscsiPdu pdu = h.toPdu(dataIn.retainedSlice(dataIn.readerIndex() + offset, length));
            if (last && collapse) {
                writeLast(task, pdu);
            } else {
                wire.write(pdu);
            }
            offset += length;
        }
        if (collapse) {
            return;
        }
        byte[] sense = cmd.sense();
        ByteBuf senseData = null;
        if (sense != null) {
            senseData = wire.alloc().buffer(2 + sense.length);
            senseData.writeShort(sense.length);
            senseData.writeBytes(sense);
        }
        ScsiResponseHeader h = responseHeader.begin(wire.alloc(), senseData == null ? 0 : senseData.readableBytes())
                .status(cmd.status())
                .residual(overflow, residualCount)
                .itt(task.itt)
                .expDataSn(task.reads() ? dataSn : task.r2tSn);
        sequence.stamp(h);
        writeLast(task, h.toPdu(senseData));
    }

    /**
     * Writes a command's last PDU: once it is written (or the connection failed it), every Data-In of
     * the command has left, so its bytes return to the Data-In budget.
     */
    private void writeLast(IscsiTask task, IscsiPdu pdu) {
        if (task.dataInHeld == 0) {
            wire.write(pdu);
        } else {
            wire.write(pdu, written -> release(task));
        }
    }

    /** A SCSI Response with only a status, for a command that is answered without ever becoming a task. */
    void sendStatusOnly(ScsiCommandHeader request, int status) {
        ScsiResponseHeader h = responseHeader.begin(wire.alloc(), 0)
                .status(status)
                .residual(false, Math.max(request.expectedDataTransferLength(), 0))
                .itt(request.itt());
        sequence.stamp(h);
        wire.write(h.toPdu(null));
    }
}
