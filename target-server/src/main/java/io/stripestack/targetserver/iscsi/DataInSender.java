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
    private static final int DATA_IN_STATUS = 0x01;
    private static final int RESIDUAL_UNDERFLOW = 0x02;
    private static final int RESIDUAL_OVERFLOW = 0x04;

    private final IscsiConnection connection;
    private final ServerContext server;
    private final ChannelHandlerContext ctx;
    private final NegotiatedParameters params;
    /** Data-In bytes this session holds of the server's budget. */
    private long held;
    /** Reads waiting for Data-In room, in arrival order. */
    private final ArrayDeque<IscsiTask> waiting = new ArrayDeque<>();

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
        int residualFlags = 0;
        long residual = 0;
        if (commandLength > edtl) {
            residualFlags = RESIDUAL_OVERFLOW;
            residual = commandLength - edtl;
        } else {
            long transferred = task.reads() ? toSend : Math.max(commandLength, 0);
            if (transferred < edtl) {
                residualFlags = RESIDUAL_UNDERFLOW;
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
            int flags = last || length == burstLeft ? Bhs.FINAL_BIT : 0;
            if (last && collapse) {
                flags |= DATA_IN_STATUS | residualFlags;
            }
            ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
            Bhs.begin(h, Bhs.OP_DATA_IN, flags, length);
            h.setLong(Bhs.OFF_LUN, task.lunField);
            h.setInt(Bhs.OFF_ITT, task.itt);
            h.setInt(Bhs.OFF_TTT, Bhs.RESERVED_TAG);
            if ((flags & DATA_IN_STATUS) != 0) {
                h.setByte(Bhs.OFF_STATUS, cmd.status());
                sequence.stamp(h);
                h.setInt(Bhs.OFF_RESIDUAL, residualCount);
            } else {
                sequence.stampWindow(h);
            }
            h.setInt(Bhs.OFF_DATA_SN, dataSn++);
            h.setInt(Bhs.OFF_BUFFER_OFFSET, offset);
            ChannelPromise promise = last && collapse ? lastWritePromise(task) : ctx.voidPromise();
            ctx.write(IscsiPdu.of(h, dataIn.retainedSlice(dataIn.readerIndex() + offset, length)), promise);
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
        ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        Bhs.begin(h, Bhs.OP_SCSI_RESPONSE, Bhs.FINAL_BIT | residualFlags, senseData == null ? 0 : senseData.readableBytes());
        h.setByte(Bhs.OFF_STATUS, cmd.status());
        h.setInt(Bhs.OFF_ITT, task.itt);
        sequence.stamp(h);
        h.setInt(Bhs.OFF_DATA_SN, task.reads() ? dataSn : task.r2tSn);
        h.setInt(Bhs.OFF_RESIDUAL, residualCount);
        ctx.write(IscsiPdu.of(h, senseData), lastWritePromise(task));
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
    void sendStatusOnly(ByteBuf request, int status) {
        ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        int edtl = request.getInt(Bhs.OFF_EXPECTED_LENGTH);
        Bhs.begin(h, Bhs.OP_SCSI_RESPONSE, Bhs.FINAL_BIT | (edtl > 0 ? RESIDUAL_UNDERFLOW : 0), 0);
        h.setByte(Bhs.OFF_STATUS, status);
        h.setInt(Bhs.OFF_ITT, Bhs.itt(request));
        connection.sequence().stamp(h);
        h.setInt(Bhs.OFF_RESIDUAL, Math.max(edtl, 0));
        ctx.write(IscsiPdu.of(h, null), ctx.voidPromise());
    }
}
