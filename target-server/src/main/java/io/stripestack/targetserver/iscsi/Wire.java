package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFutureListener;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import java.net.SocketAddress;

/**
 * One connection's wire as its parts see it: PDUs out, the event loop they run on, closing, and the read
 * back-pressure. {@link IscsiConnection} implements it over its channel; a part's test implements it with a fake,
 * so a part needs no channel and no connection to run.
 *
 * <p>Concurrency: every method is called on the connection's event loop, which {@link #executor()} is.
 */
interface Wire {
    ByteBufAllocator alloc();

    /** The connection's event loop: hops onto it, timers, and its ticker (the connection's clock). */
    EventExecutor executor();

    /** Queues a PDU for the socket (flushed by {@link #flush} or at the end of the read). */
    void write(IscsiPdu pdu);

    /** Queues a PDU; {@code whenWritten} runs once it has been written to the socket or failed with the connection. */
    void write(IscsiPdu pdu, ChannelFutureListener whenWritten);

    void flush();

    /** Answers a PDU with a Reject carrying {@code reason} and a copy of its 48-byte header. */
    void reject(ByteBuf rejectedHeader, int reason);

    /** Whether the connection is still open. */
    boolean open();

    /** The remote address, for the log. */
    SocketAddress remote();

    /** The local address the initiator reached (the portal SendTargets names when none is configured). */
    SocketAddress local();

    /** Closes now (PDUs not flushed may be lost); the future completes once the connection is closed. */
    Future<Void> close();

    /** A final answer is queued: later PDUs are ignored and the connection closes once it has been written. */
    void closeAfterFlush();

    /** Whether a final answer is on its way out already (later PDUs are ignored). */
    boolean closing();

    /** Whether the socket should be read decides anew: a read started or stopped waiting for the target. */
    void readInterestChanged();
}
