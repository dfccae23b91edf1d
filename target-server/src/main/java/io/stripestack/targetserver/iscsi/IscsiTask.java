package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.stripestack.targetserver.scsi.ScsiCommand;
import io.stripestack.targetserver.scsi.ScsiCommandRouter;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One SCSI command of a session, from its SCSI Command PDU to its response: Data-Out collection
 * (immediate, unsolicited, R2T bursts), execution and completion. It is its own Runnable for both
 * hops (worker thread, then back to the event loop), so a command costs no extra allocations.
 *
 * <p>Concurrency: the session's event loop owns every field except while the task is
 * {@link State#EXECUTING}; then only the worker thread touches {@link #command}. The executor
 * hand-off and the event loop's task queue are the happens-before edges both ways. The three
 * write-buffer budget fields ({@link #budgetHeld}, {@link #unsolicitedHeld}, {@link #queuedForBudget})
 * are guarded by the server's {@link WriteBufferBudget} monitor instead: a release on another
 * connection's event loop may grant this task its buffer.
 */
final class IscsiTask implements Runnable {
    private static final Logger log = LoggerFactory.getLogger(IscsiTask.class);

    enum State { COLLECTING_DATA, EXECUTING, DONE }

    /** The session's tasks: the table it is in, and where it runs and comes back. */
    final SessionTasks session;
    final int itt;
    final int targetTransferTag;
    final long lunField;
    final int cmdSn;
    /** Immediate commands use no CmdSN slot, so completing them does not widen the window. */
    final boolean immediate;

    State state = State.COLLECTING_DATA;
    /**
     * Every Data-Out byte, at its buffer offset; null for commands without Data-Out. While the
     * command waits for write buffer budget it holds only the unsolicited part (or nothing).
     */
    ByteBuf dataOut;
    /** Waiting for write buffer budget: no R2T goes out until it is granted. */
    boolean waitingForBudget;
    /** Neither budget nor allowance had room: answered TASK SET FULL once its unsolicited data is in. */
    boolean refusedForBudget;
    /** Holds its whole buffer's bytes of the budget (guarded by the budget's monitor). */
    boolean budgetHeld;
    /** Bytes of the unsolicited allowance it holds (guarded by the budget's monitor). */
    int unsolicitedHeld;
    /** In the budget's queue (guarded by the budget's monitor). */
    boolean queuedForBudget;
    /**
     * Bytes [0, dataEnd) of the buffer arrived, each once and in order (DataPDUInOrder and
     * DataSequenceInOrder are always Yes): only a command whose dataEnd reaches its Expected Data
     * Transfer Length ever runs, so no buffer byte the initiator did not send reaches a LUN.
     */
    int dataEnd;
    /** True until the initiator ended the unsolicited Data-Out sequence (F bit). */
    boolean unsolicitedPending;
    /** Where the next R2T will ask for data; every byte below it has been asked for or sent unsolicited. */
    int nextR2tOffset;
    /** Buffer offset of the first R2T's burst, -1 before it; each later burst follows the one before. */
    int firstR2tOffset = -1;
    int outstandingR2ts;
    /** Ticker time of the command or its latest R2T or Data-Out (a stalled write ends the connection). */
    long lastDataOutNanos;
    int r2tSn;
    /** DataSN the next Data-Out must carry: counts within each sequence (unsolicited burst or R2T). */
    int expectedDataSn;
    /**
     * A Data-Out arrived out of order (DataSN, buffer offset, burst boundary): the command is answered
     * ABORTED COMMAND / DATA PHASE ERROR once its data phase ends, and never executed.
     */
    boolean dataPhaseError;
    /** Bytes this read holds of the Data-In budget, from its dispatch until its last PDU is written. */
    int dataInHeld;
    /** An EXTENDED COPY the {@link CopyGate} let run: its end must be reported there. */
    boolean copyRunning;
    /** Set by task management: the response is suppressed, buffers released. */
    boolean aborted;
    /** Task management requests waiting for this task to end. */
    PendingTaskManagement abortWaiter;
    /** The SCSI command this task carries to the SCSI layer and back; its Data-Out is set when the data phase ends. */
    final ScsiCommand command;

    IscsiTask(SessionTasks session, int itt, int targetTransferTag, long lunField, int cmdSn, boolean immediate,
            ScsiCommand command) {
        this.session = session;
        this.itt = itt;
        this.targetTransferTag = targetTransferTag;
        this.lunField = lunField;
        this.cmdSn = cmdSn;
        this.immediate = immediate;
        this.command = command;
    }

    /** The SCSI command's request side, which this task carries (nothing is kept twice). */
    int expectedTransferLength() {
        return command.expectedTransferLength();
    }

    boolean reads() {
        return command.readBit();
    }

    boolean writes() {
        return command.writeBit();
    }

    long lun() {
        return command.lun();
    }

    /** Nothing more can arrive: no unsolicited burst open, no R2T unanswered, nothing left to ask for. */
    boolean dataPhaseOver() {
        return !unsolicitedPending && outstandingR2ts == 0 && nextR2tOffset >= expectedTransferLength();
    }

    /** The end of the R2T burst that holds {@code offset}: bursts of MaxBurstLength from the first R2T's offset. */
    int burstEnd(int offset, int maxBurstLength) {
        long end = firstR2tOffset + ((long) (offset - firstR2tOffset) / maxBurstLength + 1) * maxBurstLength;
        return (int) Math.min(end, expectedTransferLength());
    }

    /** Runs once on the worker (executes the command), then once on the event loop (completes it). */
    @Override
    public void run() {
        if (state == State.EXECUTING) {
            ScsiCommandRouter router = session.router;
            try {
                router.execute(command);
            } catch (RuntimeException | Error e) {
                // the router promises not to throw; if it does, the initiator still gets an answer
                log.error("SCSI router threw on opcode 0x{} (LUN {}); answering BUSY", Integer.toHexString(command.opcode()), lun(), e);
                command.completeWithStatus(ScsiCommand.BUSY);
            }
            state = State.DONE;
            try {
                session.eventLoop.execute(this);
            } catch (RejectedExecutionException | IllegalStateException e) {
                // the server shut its event loops down after the drain timeout: nobody will answer
                releaseBuffers();
            }
        } else {
            session.executed(this);
        }
    }

    /** Releases Data-Out (and its budget) and any Data-In the SCSI layer produced; idempotent. */
    void releaseBuffers() {
        if (dataOut != null) {
            dataOut.release();
            dataOut = null;
        }
        if (writes() && expectedTransferLength() > 0) {
            session.writeBuffers.release(this);
        }
        if (command.dataIn() != null) {
            ByteBuf dataIn = command.dataIn();
            command.complete(null);
            dataIn.release();
        }
    }
}
