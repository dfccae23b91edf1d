package io.stripestack.initiator;

import io.stripestack.iscsi.proto.Bhs;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/**
 * One ITT slot: the hand-over between the caller that owns a command and {@code iscsi-reader}.
 *
 * <p>Threads. The caller owns the slot from {@link TaskSlots#acquire} to {@link TaskSlots#release}. It sets
 * the buffer fields in {@link #start} and publishes them with the volatile {@code active}; from then on the
 * reader may place Data-In into the buffer (between base and base + length), each segment between
 * {@link #beginPlacement} and {@link #endPlacement}, and never once the command has its status or its error or
 * its owner let it go ({@link #close}): so no byte lands in a buffer its caller already has back. The outcome,
 * the offered R2T, the error and the placement flag are guarded by this slot's monitor: the reader, or a
 * failure, writes them and notifies; the caller waits in {@link #await} and reads them afterwards. The count of
 * bytes received grows under the monitor as each segment ends; the reader alone reads it meanwhile, and the
 * next DataSN is the reader's alone. The header buffers and the granted R2T are the caller's.
 */
final class TaskSlot {
    /** The low ITT bits name the slot; the rest count its commands, so a late PDU for an earlier one misses. */
    static final int SLOT_BITS = 10;
    /** Sense key, ASC or ASCQ when the target sent no sense data. */
    static final int NO_SENSE = -1;

    /** Why {@link #await} returned. */
    enum Wake { COMPLETED, R2T, ERROR, TIMED_OUT }

    final int slot;
    final ByteBuffer commandHeader = ByteBuffer.allocate(Bhs.LENGTH);
    final ByteBuffer dataOutHeader = ByteBuffer.allocate(Bhs.LENGTH);
    private int generation;
    volatile int itt;
    volatile boolean active;
    // set by the owner in start(), read by the reader once active
    ByteBuffer buffer;
    int base;
    int length;
    /** Whether the command reads: only then may Data-In fill {@link #buffer} (a write's buffer is the caller's data). */
    boolean acceptsDataIn;
    // guarded by this
    private boolean done;
    private int response;
    private int status;
    private int senseKey;
    private int asc;
    private int ascq;
    private boolean underflow;
    private int residual;
    private IOException error;
    private boolean r2tOffered;
    private int offeredTtt;
    private int offeredOffset;
    private int offeredLength;
    private boolean placing;
    // the reader's byte accounting of this command's Data-In (received: written under the monitor)
    int received;
    int nextDataSn;
    // the owner's copy of the R2T that await() returned for
    private int grantedTtt;
    private int grantedOffset;
    private int grantedLength;

    TaskSlot(int slot) {
        this.slot = slot;
    }

    static int slotOf(int itt) {
        return itt & ((1 << SLOT_BITS) - 1);
    }

    /** Owner: gives this slot a fresh ITT for the next command. */
    void assignNextItt() {
        generation = (generation + 1) & ((1 << (31 - SLOT_BITS)) - 1);
        itt = generation << SLOT_BITS | slot;
    }

    /**
     * Owner: clears the last outcome and opens the slot to the reader for a command on {@code buffer}, which
     * Data-In may fill only if {@code reads}.
     */
    void start(ByteBuffer buffer, int length, boolean reads) {
        synchronized (this) {
            this.buffer = buffer;
            this.acceptsDataIn = reads;
            this.base = buffer == null ? 0 : buffer.position();
            this.length = length;
            done = false;
            error = null;
            r2tOffered = false;
            senseKey = NO_SENSE;
            asc = NO_SENSE;
            ascq = NO_SENSE;
            status = 0;
            response = 0;
            underflow = false;
            residual = 0;
            received = 0;
            nextDataSn = 0;
        }
        active = true;
    }

    /**
     * Owner: closes the slot to the reader. Returns false when the reader is still placing a segment into the
     * buffer (the command ended without its status: a timeout, or a failure on another thread): the owner then
     * fails the connection, which ends that read, and waits for it in {@link #awaitPlacementEnd}.
     */
    synchronized boolean close() {
        active = false;
        return !placing;
    }

    /** Owner, after a false {@link #close} and with the connection failed: waits until the reader let go. */
    synchronized void awaitPlacementEnd() {
        boolean interrupted = false;
        while (placing) {
            try {
                wait();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Owner, once the reader let go: drops the reference to the caller's buffer. */
    void forgetBuffer() {
        buffer = null;
    }

    /** Reader: may the next Data-In segment go into the buffer? Not once the command ended or was let go. */
    synchronized boolean beginPlacement() {
        if (!active || done || error != null) {
            return false;
        }
        placing = true;
        return true;
    }

    /** Reader: {@code bytes} more are in the buffer (0 when the segment's read failed). */
    synchronized void endPlacement(int bytes) {
        received += bytes;
        placing = false;
        notifyAll();
    }

    /** Owner, once await() returned COMPLETED: how many bytes Data-In brought. */
    int received() {
        return received;
    }

    /** Owner: waits until the command completes or fails, or an R2T asks for data. */
    synchronized Wake await(long deadlineNanos) throws InterruptedException {
        while (!done && !r2tOffered && error == null) {
            long wait = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
            if (wait <= 0) {
                return Wake.TIMED_OUT;
            }
            wait(wait);
        }
        if (error != null) {
            return Wake.ERROR;
        }
        if (done) {
            return Wake.COMPLETED;
        }
        grantedTtt = offeredTtt;
        grantedOffset = offeredOffset;
        grantedLength = offeredLength;
        r2tOffered = false;
        return Wake.R2T;
    }

    /** Reader: the final status; false when the command already had one (or failed), which a target never sends. */
    synchronized boolean complete(int response, int status, boolean underflow, int residual, int senseKey, int asc,
            int ascq) {
        if (done || error != null) {
            return false;
        }
        this.response = response;
        this.status = status;
        this.underflow = underflow;
        this.residual = residual;
        this.senseKey = senseKey;
        this.asc = asc;
        this.ascq = ascq;
        done = true;
        notifyAll();
        return true;
    }

    /** Reader: an R2T; false when one is still unanswered (MaxOutstandingR2T is 1). */
    synchronized boolean offerR2t(int ttt, int offset, int length) {
        if (r2tOffered) {
            return false;
        }
        offeredTtt = ttt;
        offeredOffset = offset;
        offeredLength = length;
        r2tOffered = true;
        notifyAll();
        return true;
    }

    /** Reader: the target rejected this command's PDU. */
    synchronized void reject(IOException e) {
        error = e;
        notifyAll();
    }

    /** Failure path: fails the command if one is waiting here, and wakes the owner either way. */
    synchronized void failIfWaiting(IOException e) {
        if (active && error == null && !done) {
            error = e;
        }
        notifyAll();
    }

    synchronized IOException error() {
        return error;
    }

    // The outcome, for the owner once await() returned COMPLETED (the monitor has published it).

    int response() {
        return response;
    }

    int status() {
        return status;
    }

    int senseKey() {
        return senseKey;
    }

    int asc() {
        return asc;
    }

    int ascq() {
        return ascq;
    }

    boolean underflow() {
        return underflow;
    }

    int residual() {
        return residual;
    }

    // The R2T, for the owner once await() returned R2T.

    int grantedTtt() {
        return grantedTtt;
    }

    int grantedOffset() {
        return grantedOffset;
    }

    int grantedLength() {
        return grantedLength;
    }
}
