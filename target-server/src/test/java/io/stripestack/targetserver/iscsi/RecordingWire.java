package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelFutureListener;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ImmediateEventExecutor;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link Wire} without a channel, for a part's test: keeps a copy of every PDU written (in order) and every
 * Reject reason, runs hops at once ({@link ImmediateEventExecutor}), and completes the writes that asked to hear
 * of it only when the test says they reached the socket ({@link #completeWrites}).
 *
 * <p>Concurrency: one test thread.
 */
final class RecordingWire implements Wire {
    /** A PDU the part wrote: its header and data, copied. */
    record Written(byte[] header, byte[] data) {
        int opcode() {
            return header[0] & 0x3f;
        }

        int flags() {
            return header[1] & 0xff;
        }

        int intAt(int offset) {
            return ByteBuffer.wrap(header).getInt(offset);
        }

        int itt() {
            return intAt(16);
        }
    }

    final List<Written> written = new ArrayList<>();
    final List<Integer> rejects = new ArrayList<>();
    private final ArrayDeque<ChannelFutureListener> unfinished = new ArrayDeque<>();
    boolean open = true;
    boolean closed;
    boolean closedAfterFlush;
    int flushes;
    int readInterestChanges;

    @Override
    public ByteBufAllocator alloc() {
        return UnpooledByteBufAllocator.DEFAULT;
    }

    @Override
    public EventExecutor executor() {
        return ImmediateEventExecutor.INSTANCE;
    }

    @Override
    public void write(IscsiPdu pdu) {
        try {
            written.add(new Written(ByteBufUtil.getBytes(pdu.header()), ByteBufUtil.getBytes(pdu.data())));
        } finally {
            pdu.release();
        }
    }

    @Override
    public void write(IscsiPdu pdu, ChannelFutureListener whenWritten) {
        write(pdu);
        unfinished.add(whenWritten);
    }

    /** The PDUs written with a listener reached the socket: their listeners run. */
    void completeWrites() throws Exception {
        for (ChannelFutureListener listener; (listener = unfinished.poll()) != null; ) {
            listener.operationComplete(null);
        }
    }

    @Override
    public void flush() {
        flushes++;
    }

    @Override
    public void reject(ByteBuf rejectedHeader, int reason) {
        rejects.add(reason);
    }

    @Override
    public boolean open() {
        return open;
    }

    @Override
    public SocketAddress remote() {
        return new InetSocketAddress("192.0.2.1", 51000);
    }

    @Override
    public SocketAddress local() {
        return new InetSocketAddress("192.0.2.2", 3260);
    }

    @Override
    public Future<Void> close() {
        closed = true;
        open = false;
        return ImmediateEventExecutor.INSTANCE.newSucceededFuture(null);
    }

    @Override
    public void closeAfterFlush() {
        closedAfterFlush = true;
    }

    @Override
    public boolean closing() {
        return closedAfterFlush;
    }

    @Override
    public void readInterestChanged() {
        readInterestChanges++;
    }

    /** The PDUs written with {@code opcode}, in order. */
    List<Written> withOpcode(int opcode) {
        List<Written> out = new ArrayList<>();
        for (Written w : written) {
            if (w.opcode() == opcode) {
                out.add(w);
            }
        }
        return out;
    }
}
