package io.stripestack.initiator;

import io.stripestack.iscsi.proto.Bhs;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task from its request PDU to its answer (RFC 7143 sections 11.3-11.8, 11.14): SCSI commands with
 * immediate data, unsolicited Data-Out and R2T-driven Data-Out, and Logout, which is a task like any other.
 *
 * <p>Threads. Runs on the calling threads, any number at once, each in its own task slot. Under sendLock a
 * caller takes its CmdSN and sends its command with the immediate data and the unsolicited Data-Out, so CmdSN
 * order is wire order; then it waits on its slot and answers each R2T with a Data-Out sequence, again under
 * sendLock so a sequence goes out uninterleaved. Data-Out is sent straight from the caller's buffer with the
 * slot's own header, so a command allocates nothing. {@code blockSize} is set once at login, before any
 * READ(16) or WRITE(16) can be issued.
 */
final class CommandPath {
    private static final Logger log = LoggerFactory.getLogger(CommandPath.class);
    /** A new nexus sees a power-on UNIT ATTENTION; a LUN change may raise another. Retried this often. */
    private static final int UNIT_ATTENTION_RETRIES = 4;

    private final String description;
    private final Duration timeout;
    private final long lunField;
    private final IscsiInitiator.Negotiated negotiated;
    private final PduChannel pdus;
    private final ReentrantLock sendLock;
    private final SessionSequence sequence;
    private final TaskSlots slots;
    private final ConnectionLifecycle lifecycle;
    private int blockSize;

    CommandPath(Duration timeout, int lun, IscsiInitiator.Negotiated negotiated, PduChannel pdus,
            SessionSequence sequence, TaskSlots slots, ConnectionLifecycle lifecycle) {
        this.description = lifecycle.description();
        this.timeout = timeout;
        this.lunField = Bhs.lunField(lun);
        this.negotiated = negotiated;
        this.pdus = pdus;
        this.sendLock = pdus.sendLock();
        this.sequence = sequence;
        this.slots = slots;
        this.lifecycle = lifecycle;
    }

    /** The block size READ(16) and WRITE(16) count in, from the READ CAPACITY(16) at login. */
    void useBlockSize(int blockSize) {
        this.blockSize = blockSize;
    }

    IscsiInitiator.Capacity readCapacity16() throws IOException {
        ByteBuffer data = ByteBuffer.allocate(ScsiCdb.READ_CAPACITY_16_LENGTH);
        execute(ScsiCdb.SERVICE_ACTION_IN_16, 0, data);
        return new IscsiInitiator.Capacity(data.getLong(0) + 1, data.getInt(8));
    }

    /** Runs the command, retrying it after a UNIT ATTENTION a few times. */
    void execute(int opcode, long lba, ByteBuffer data) throws IOException {
        execute(opcode, 0, lba, data);
    }

    /** As {@link #execute(int, long, ByteBuffer)} with CDB byte 1 flags ({@link ScsiCdb#FUA}). */
    void execute(int opcode, int cdbFlags, long lba, ByteBuffer data) throws IOException {
        for (int attempt = 0; ; attempt++) {
            try {
                executeOnce(opcode, cdbFlags, lba, data);
                return;
            } catch (ScsiCommandException e) {
                if (e.senseKey() != ScsiCommandException.SENSE_UNIT_ATTENTION || attempt >= UNIT_ATTENTION_RETRIES) {
                    throw e;
                }
                log.debug("{}: {}; retrying", description, e.getMessage());
            }
        }
    }

    private void executeOnce(int opcode, int cdbFlags, long lba, ByteBuffer data) throws IOException {
        lifecycle.ensureOpen();
        boolean read = ScsiCdb.readsData(opcode);
        int length = data == null ? 0 : data.remaining();
        if ((opcode == ScsiCdb.READ_16 || opcode == ScsiCdb.WRITE_16) && length % blockSize != 0) {
            throw new IllegalArgumentException(length + " bytes is not a multiple of the " + blockSize + "-byte block");
        }
        TaskSlot t = slots.acquire();
        boolean completed = false;
        try {
            t.start(data, length, read);
            boolean write = !read && data != null;
            int immediate = 0;
            int unsolicitedEnd = 0;
            if (write) {
                immediate = negotiated.immediateData()
                        ? Math.min(length, Math.min(negotiated.firstBurstLength(), negotiated.targetMaxRecvDataSegmentLength()))
                        : 0;
                unsolicitedEnd = negotiated.initialR2T() ? immediate : Math.min(length, negotiated.firstBurstLength());
            }
            boolean moreUnsolicited = unsolicitedEnd > immediate;
            ByteBuffer h = t.commandHeader;
            Bhs.startRequest(h, Bhs.OP_SCSI_COMMAND, (moreUnsolicited ? 0 : Bhs.FINAL_BIT)
                    | (read && length > 0 ? Bhs.COMMAND_READ_BIT : 0) | (write ? Bhs.COMMAND_WRITE_BIT : 0)
                    | Bhs.TASK_ATTR_SIMPLE);
            Bhs.putDataSegmentLength(h, immediate);
            Bhs.putLun(h, lunField);
            Bhs.putItt(h, t.itt);
            Bhs.putExpectedDataTransferLength(h, length);
            ScsiCdb.fill(h, opcode, cdbFlags, lba, length, blockSize);
            sendLock.lock();
            try {
                Bhs.putCmdSn(h, sequence.takeCmdSn(timeout, lifecycle));
                Bhs.putExpStatSn(h, sequence.expStatSn());
                pdus.send(h, data, t.base, immediate);
                if (moreUnsolicited) {
                    sendDataOut(t, Bhs.RESERVED_TAG, immediate, unsolicitedEnd - immediate);
                }
            } finally {
                sendLock.unlock();
            }
            String name = ScsiCdb.name(opcode);
            awaitCompletion(t, name);
            if (t.response() != 0) {
                throw new IOException(description + ": " + name + ": the target reported a service"
                        + " failure (iSCSI response 0x" + Integer.toHexString(t.response()) + ")");
            }
            if (t.status() != 0) {
                throw new ScsiCommandException(description + ": " + name + " at LBA " + lba, t.status(),
                        t.senseKey(), t.asc(), t.ascq());
            }
            if (read) {
                checkReadCount(t, opcode, lba, length);
            }
            completed = true;
        } finally {
            release(t);
            if (data != null) {
                // A read that failed (a UNIT ATTENTION to retry) leaves the buffer as it was given, so the retry
                // asks for the whole length again instead of for the nothing that would remain; and it leaves
                // zeros, not the part the target sent over whatever the buffer held before.
                data.limit(t.base + length);
                if (read && !completed) {
                    zero(data, t.base, length);
                }
                data.position(read && completed ? t.base + length : t.base);
            }
        }
    }

    /**
     * A read with GOOD status must have brought every byte asked for, or said how many it did not (underflow and
     * residual): a byte it did not bring is whatever the buffer held before, perhaps another tenant's data. An
     * honest short READ(16) fails the command; a short transfer the target does not own up to is a protocol
     * error. Shorter answers are normal for the other reads (READ CAPACITY), whose buffers start zeroed.
     */
    private void checkReadCount(TaskSlot t, int opcode, long lba, int length) throws IOException {
        int received = t.received();
        if (received == length) {
            return;
        }
        boolean owned = t.underflow() && t.residual() == length - received;
        if (!owned) {
            throw new IscsiProtocolException(description + ": " + ScsiCdb.name(opcode) + " at LBA " + lba
                    + " brought " + received + " of " + length + " bytes with GOOD status but " + (t.underflow()
                    ? "a residual of " + t.residual() : "no residual"));
        }
        if (opcode == ScsiCdb.READ_16) {
            throw new IOException(description + ": READ(16) at LBA " + lba + " returned " + received + " of "
                    + length + " bytes");
        }
    }

    private static void zero(ByteBuffer data, int from, int length) {
        for (int i = from, end = from + length; i < end; i++) {
            data.put(i, (byte) 0);
        }
    }

    /**
     * Takes the slot back from the reader and frees it. A command that ended without its status (a timeout, or
     * a failure seen by another thread) may still be receiving a segment into the caller's buffer: the
     * connection is failed, which ends that read, before the caller gets its buffer back.
     */
    private void release(TaskSlot t) {
        if (!t.close()) {
            lifecycle.fail("a command ended while Data-In for it was still arriving; connection closed");
            t.awaitPlacementEnd();
        }
        slots.release(t);
    }

    /** Sends Logout (reason: close the session) and waits for the target's answer. */
    void logout() throws IOException {
        lifecycle.ensureOpen();
        TaskSlot t = slots.acquire();
        try {
            t.start(null, 0, false);
            ByteBuffer h = t.commandHeader;
            // reason code 0: close the session
            Bhs.startRequest(h, Bhs.OP_LOGOUT_REQUEST | Bhs.IMMEDIATE_BIT, Bhs.FINAL_BIT);
            Bhs.putItt(h, t.itt);
            sendLock.lock();
            try {
                Bhs.putCmdSn(h, sequence.nextCmdSn());
                Bhs.putExpStatSn(h, sequence.expStatSn());
                pdus.send(h, null, 0, 0);
            } finally {
                sendLock.unlock();
            }
            awaitCompletion(t, "Logout");
            if (t.response() != 0) {
                throw new IOException(description + ": logout refused (response " + t.response() + ")");
            }
        } finally {
            release(t);
        }
    }

    /** Waits for the task's status, sending Data-Out for each R2T on the way. */
    private void awaitCompletion(TaskSlot t, String what) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (;;) {
            TaskSlot.Wake wake;
            try {
                wake = t.await(deadline);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw lifecycle.fail(new InterruptedIOException(description + ": interrupted waiting for " + what));
            }
            switch (wake) {
                case COMPLETED -> {
                    return;
                }
                case ERROR -> {
                    IOException error = t.error();
                    throw new IOException(description + ": " + what + ": " + error.getMessage(), error);
                }
                case TIMED_OUT -> throw lifecycle.fail("no answer to " + what + " within " + timeout.toSeconds()
                        + " s; connection closed");
                case R2T -> answerR2t(t);
            }
        }
    }

    /** The reader checked the R2T against the write ({@link PduReceiver}). */
    private void answerR2t(TaskSlot t) throws IOException {
        sendDataOut(t, t.grantedTtt(), t.grantedOffset(), t.grantedLength());
    }

    /** Sends bytes {@code [offset, offset + length)} of the task's buffer as one Data-Out sequence. */
    private void sendDataOut(TaskSlot t, int ttt, int offset, int length) throws IOException {
        ByteBuffer h = t.dataOutHeader;
        int pduMax = negotiated.targetMaxRecvDataSegmentLength();
        sendLock.lock();
        try {
            int dataSn = 0;
            for (int sent = 0; sent < length; dataSn++) {
                int n = Math.min(pduMax, length - sent);
                Bhs.startRequest(h, Bhs.OP_DATA_OUT, sent + n == length ? Bhs.FINAL_BIT : 0);
                Bhs.putDataSegmentLength(h, n);
                Bhs.putLun(h, lunField);
                Bhs.putItt(h, t.itt);
                Bhs.putTtt(h, ttt);
                Bhs.putExpStatSn(h, sequence.expStatSn());
                Bhs.putDataSn(h, dataSn);
                Bhs.putBufferOffset(h, offset + sent);
                pdus.send(h, t.buffer, t.base + offset + sent, n);
                sent += n;
            }
        } finally {
            sendLock.unlock();
        }
    }
}
