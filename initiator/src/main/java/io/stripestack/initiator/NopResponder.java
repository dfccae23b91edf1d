package io.stripestack.initiator;

import io.stripestack.iscsi.proto.Bhs;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers the target's NOP-In pings with NOP-Out on its own thread, {@code iscsi-nop}, because
 * {@code iscsi-reader} must never wait for sendLock. The reader queues each ping; the queue is bounded, so a
 * target pinging faster than the answers go out loses some answers, with a warning. The header buffer is this
 * thread's alone; sending takes sendLock inside {@link PduChannel#send}.
 */
final class NopResponder {
    private static final Logger log = LoggerFactory.getLogger(NopResponder.class);

    private record Ping(int ttt, long lun, byte[] data) {
    }

    private final PduChannel pdus;
    private final SessionSequence sequence;
    private final ConnectionLifecycle lifecycle;
    private final BlockingQueue<Ping> pings = new ArrayBlockingQueue<>(16);
    private final ByteBuffer header = ByteBuffer.allocate(Bhs.LENGTH);
    private final Thread thread = new Thread(this::answerPings, "iscsi-nop");

    NopResponder(PduChannel pdus, SessionSequence sequence, ConnectionLifecycle lifecycle) {
        this.pdus = pdus;
        this.sequence = sequence;
        this.lifecycle = lifecycle;
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    void interrupt() {
        thread.interrupt();
    }

    /** Reader thread: queues the answer to a ping. */
    void answerLater(int ttt, long lun, byte[] data) {
        if (!pings.offer(new Ping(ttt, lun, data))) {
            log.warn("{}: too many unanswered NOP-In pings; dropping one", lifecycle.description());
        }
    }

    private void answerPings() {
        try {
            while (!lifecycle.isEndExpected()) {
                Ping ping = pings.take();
                Bhs.startRequest(header, Bhs.OP_NOP_OUT | Bhs.IMMEDIATE_BIT, Bhs.FINAL_BIT);
                Bhs.putDataSegmentLength(header, ping.data().length);
                Bhs.putLun(header, ping.lun());
                Bhs.putItt(header, Bhs.RESERVED_TAG);
                Bhs.putTtt(header, ping.ttt());
                Bhs.putCmdSn(header, sequence.nextCmdSn());
                Bhs.putExpStatSn(header, sequence.expStatSn());
                pdus.send(header, ByteBuffer.wrap(ping.data()), 0, ping.data().length);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            lifecycle.fail(e);
        }
    }
}
