package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.ScheduledFuture;
import io.stripestack.iscsi.proto.Bhs;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NOP-Out and NOP-In of the full feature phase, and whether the initiator is still there: answers a NOP-Out
 * that asks for it (echoing at most the initiator's MaxRecvDataSegmentLength of its data), pings an initiator
 * silent for a whole NOP-In interval and closes the connection when it stays silent another one. It also closes
 * the connection of a write that got none of the data due for a whole interval (an R2T unanswered, or an
 * unsolicited burst left open): that write holds write buffer budget other sessions may wait for, and
 * ErrorRecoveryLevel 0 has no other way to end it.
 *
 * <p>Concurrency: owned by the connection's event loop; its timer runs there too.
 */
final class Liveness {
    private static final Logger log = LoggerFactory.getLogger(Liveness.class);

    private final Wire wire;
    private final SequenceNumbers sequence;
    private final Duration interval;
    private final NopInHeader nopInHeader = new NopInHeader();
    private NegotiatedParameters params;
    private SessionTasks tasks;
    private long lastReceiveNanos;
    private boolean pingOutstanding;
    private ScheduledFuture<?> timer;

    /** Counts silence from now; checks nothing before {@link #start}. */
    Liveness(Wire wire, SequenceNumbers sequence, Duration interval) {
        this.wire = wire;
        this.sequence = sequence;
        this.interval = interval;
        this.lastReceiveNanos = now();
    }

    /** A PDU arrived: the initiator is there. Returns the time of arrival on the connection's ticker. */
    long received() {
        lastReceiveNanos = now();
        pingOutstanding = false;
        return lastReceiveNanos;
    }

    /** The full feature phase starts: checks every interval (none when the interval is zero). */
    void start(NegotiatedParameters negotiated, SessionTasks sessionTasks) {
        this.params = negotiated;
        this.tasks = sessionTasks;
        long millis = interval.toMillis();
        if (millis > 0) {
            timer = wire.executor().scheduleAtFixedRate(this::check, millis, millis, TimeUnit.MILLISECONDS);
        }
    }

    /** The connection closed. */
    void stop() {
        if (timer != null) {
            timer.cancel(false);
        }
    }

    /** A NOP-Out whose CmdSN the window accepted; {@code data} is its ping data. */
    void nopOut(NopOutHeader h, ByteBuf data) {
        sequence.retire(h.immediate());
        int itt = h.itt();
        if (itt == Bhs.RESERVED_TAG) {
            return; // an answer to our ping, or a ping that wants no answer
        }
        ByteBuf echo = data.isReadable()
                ? data.retainedSlice(data.readerIndex(), Math.min(data.readableBytes(), params.initiatorMaxRecvDataSegmentLength))
                : null;
        sendNopIn(itt, Bhs.RESERVED_TAG, h.lunField(), echo, true);
    }

    private void sendNopIn(int itt, int ttt, long lunField, ByteBuf data, boolean answer) {
        NopInHeader h = nopInHeader.begin(wire.alloc(), data == null ? 0 : data.readableBytes())
                .lunField(lunField)
                .itt(itt)
                .ttt(ttt);
        if (answer) {
            sequence.stamp(h);
        } else {
            sequence.stampCurrent(h);
        }
        wire.write(h.toPdu(data));
    }

    private void check() {
        long now = now();
        long intervalNanos = interval.toNanos();
        IscsiTask stalled = tasks.stalledWrite(now - intervalNanos);
        if (stalled != null) {
            log.info("{}: write ITT 0x{} ({} bytes) got none of the Data-Out due within {}; closing", wire.remote(),
                    Integer.toHexString(stalled.itt), stalled.expectedTransferLength(), interval);
            wire.close();
            return;
        }
        long idle = now - lastReceiveNanos;
        if (idle < intervalNanos) {
            return;
        }
        if (pingOutstanding) {
            log.info("{}: no answer to NOP-In within {}; closing", wire.remote(), interval);
            wire.close();
            return;
        }
        pingOutstanding = true;
        sendNopIn(Bhs.RESERVED_TAG, tasks.nextTargetTransferTag(), 0, null, false);
        wire.flush();
    }

    private long now() {
        return wire.executor().ticker().nanoTime();
    }
}
