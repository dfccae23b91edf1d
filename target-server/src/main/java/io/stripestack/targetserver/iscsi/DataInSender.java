package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
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
 * initiator that never reads its answers holds its share and no more.
 *
 * <p>Concurrency: owned by the connection's event loop; {@link #budgetReturned} may be called on any
 * thread and hops onto it.
 */
final class DataInSender {
    private final IscsiConnection connection;
    private final ServerContext server;
    private final ChannelHandlerContext ctx;
    private final NegotiatedParameters params;
    /** Data-In bytes this session holds of the server's budget. */
    private long held;
    /** Reads waiting for Data-In room, in arrival order. */
    private final ArrayDeque<IscsiTask> waiting = new ArrayDeque<>();
    private final DataInHeader dataInHeader = new DataInHeader();
    private final ScsiResponseHeader responseHeader = new ScsiResponseHeader();

    DataInSender(IscsiConnection connection, ServerContext server, ChannelHandlerContext ctx, NegotiatedParameters params) {
        this.connection = connection;
        this.server = server;
        this.ctx = ctx;
        this.params = params;
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
        connection.updateAutoRead();
        return false;
    }

    boolean hasWaiting() {
        return !waiting.isEmpty();
    }

    /** Takes a task that never started out of the queue; false if it was not waiting. */
    boolean withdraw(IscsiTask task) {
        boolean removed = waiting.remove(task);
        if (removed) {
            connection.updateAutoRead();
        }
        return removed;
    }

    /** Every read that never started: they end without an answer (logout, connection loss). */
    void dropWaiting() {
        IscsiTask task;
        while ((task = waiting.poll()) != null) {
            connection.dropUnstarted(task);
        }
    }

    private boolean reserve(IscsiTask task) {
        if (!server.dataIn.tryReserve(connection, held, task.expectedTransferLength())) {
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
        server.dataIn.release(bytes);
        startWaiting();
    }

    /** Any thread: the server-wide budget has room again. */
    void budgetReturned() {
        try {
            connection.eventLoop().execute(this::startWaiting);
        } catch (RejectedExecutionException e) {
            // the event loop is shutting down: nothing waits any more
        }
    }

    private void startWaiting() {
        while (!waiting.isEmpty() && ctx.channel().isActive() && reserve(waiting.peek())) {
            connection.execute(waiting.poll());
        }
        connection.updateAutoRead();
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
        SequenceNumbers sequence = connection.sequence();
        int dataSn = 0;
        int offset = 0;
        int segmentLimit = params.initiatorMaxRecvDataSegmentLength;
        while (offset < toSend) {
            int burstLeft = params.maxBurstLength - offset % params.maxBurstLength;
            int length = Math.min(Math.min(segmentLimit, toSend - offset), burstLeft);
            boolean last = offset + length == toSend;
            DataInHeader h = dataInHeader.begin(ctx.alloc(), length)
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
            ChannelPromise promise = last && collapse ? lastWritePromise(task) : ctx.voidPromise();
            ctx.write(h.toPdu(dataIn.retainedSlice(dataIn.readerIndex() + offset, length)), promise);
            offset += length;
        }
        if (collapse) {
            return;
        }
        byte[] sense = cmd.sense();
        ByteBuf senseData = null;
        if (sense != null) {
            senseData = ctx.alloc().buffer(2 + sense.length);
            senseData.writeShort(sense.length);
            senseData.writeBytes(sense);
        }
        ScsiResponseHeader h = responseHeader.begin(ctx.alloc(), senseData == null ? 0 : senseData.readableBytes())
                .status(cmd.status())
                .residual(overflow, residualCount)
                .itt(task.itt)
                .expDataSn(task.reads() ? dataSn : task.r2tSn);
        sequence.stamp(h);
        ctx.write(h.toPdu(senseData), lastWritePromise(task));
    }

    /**
     * The promise of a command's last PDU: once it is written (or the connection failed it), every
     * Data-In of the command has left, so its bytes return to the Data-In budget.
     */
    private ChannelPromise lastWritePromise(IscsiTask task) {
        if (task.dataInHeld == 0) {
            return ctx.voidPromise();
        }
        ChannelPromise promise = ctx.newPromise();
        promise.addListener(written -> release(task));
        return promise;
    }

    /** A SCSI Response with only a status, for a command that is answered without ever becoming a task. */
    void sendStatusOnly(ScsiCommandHeader request, int status) {
        ScsiResponseHeader h = responseHeader.begin(ctx.alloc(), 0)
                .status(status)
                .residual(false, Math.max(request.expectedDataTransferLength(), 0))
                .itt(request.itt());
        connection.sequence().stamp(h);
        ctx.write(h.toPdu(null), ctx.voidPromise());
    }
}
