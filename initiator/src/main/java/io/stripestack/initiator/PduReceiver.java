package io.stripestack.initiator;

import io.stripestack.iscsi.proto.Bhs;
import java.io.IOException;
import java.nio.ByteBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The receive side, on the {@code iscsi-reader} thread, which alone reads the socket after login: it reads
 * every PDU, places Data-In straight into the waiting caller's buffer, hands R2Ts and final status to the task
 * slots, feeds ExpStatSN and MaxCmdSN to the session sequence and queues NOP-In pings for {@code iscsi-nop}.
 * It never takes sendLock: a sender blocked on a full socket must not stop the reader that would drain the
 * target's side. Its header and scratch buffers are its own.
 *
 * <p>Every byte the target sends is counted before it is stored: no data segment longer than the
 * MaxRecvDataSegmentLength we declared is read (so a header cannot make us allocate or wait for more), a
 * command's Data-In must come in order (DataSN 0, 1, ...; each BufferOffset where the last one ended, as
 * DataPDUInOrder and DataSequenceInOrder are Yes) and stay within its transfer, every answer must name a running
 * command, and an R2T must ask for part of a write within MaxBurstLength. Anything else is an
 * {@link IscsiProtocolException} and fails the connection (error recovery level 0).
 */
final class PduReceiver {
    private static final Logger log = LoggerFactory.getLogger(PduReceiver.class);
    /** Holds sense data and rejected headers; anything larger is a broken target. */
    private static final int SCRATCH_BYTES = 64 << 10;
    private static final int FIXED_SENSE_KEY = 2;
    private static final int FIXED_SENSE_ASC = 12;
    private static final int FIXED_SENSE_ASCQ = 13;

    private final PduChannel pdus;
    private final SessionSequence sequence;
    private final TaskSlots slots;
    private final ConnectionLifecycle lifecycle;
    private final NopResponder nopResponder;
    private final ByteBuffer header = ByteBuffer.allocate(Bhs.LENGTH);
    private final ByteBuffer scratch = ByteBuffer.allocate(SCRATCH_BYTES);
    private final Thread thread = new Thread(this::receive, "iscsi-reader");
    private final int maxRecvDataSegmentLength;
    private final int maxBurstLength;

    PduReceiver(PduChannel pdus, SessionSequence sequence, TaskSlots slots, ConnectionLifecycle lifecycle,
            NopResponder nopResponder, int maxRecvDataSegmentLength, int maxBurstLength) {
        this.maxRecvDataSegmentLength = maxRecvDataSegmentLength;
        this.maxBurstLength = maxBurstLength;
        this.pdus = pdus;
        this.sequence = sequence;
        this.slots = slots;
        this.lifecycle = lifecycle;
        this.nopResponder = nopResponder;
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    void interrupt() {
        thread.interrupt();
    }

    private void receive() {
        try {
            while (!lifecycle.isEndExpected()) {
                pdus.readHeader(header);
                int dsl = Bhs.dataSegmentLength(header);
                int itt = Bhs.itt(header);
                int op = Bhs.opcode(header);
                if (dsl > maxRecvDataSegmentLength) {
                    throw new IscsiProtocolException("a PDU (opcode 0x" + Integer.toHexString(op) + ") with a "
                            + dsl + "-byte data segment, more than the " + maxRecvDataSegmentLength
                            + " bytes we declared as MaxRecvDataSegmentLength");
                }
                switch (op) {
                    case Bhs.OP_DATA_IN -> dataIn(header, dsl, itt);
                    case Bhs.OP_SCSI_RESPONSE -> scsiResponse(header, dsl, itt);
                    case Bhs.OP_R2T -> r2t(header, dsl, itt);
                    case Bhs.OP_NOP_IN -> nopIn(header, dsl, itt);
                    case Bhs.OP_LOGOUT_RESPONSE -> logoutResponse(header, dsl, itt);
                    case Bhs.OP_REJECT -> reject(header, dsl);
                    case Bhs.OP_ASYNC_MESSAGE -> asyncMessage(header, dsl);
                    case Bhs.OP_TASK_MGMT_RESPONSE -> pdus.discard(dsl);
                    default -> throw new IscsiProtocolException("unexpected PDU opcode 0x" + Integer.toHexString(op));
                }
            }
        } catch (IOException | RuntimeException e) {
            if (!lifecycle.isEndExpected()) {
                lifecycle.fail(e instanceof IOException io ? io : new IOException(e.toString(), e));
            }
        }
    }

    private void updateWindow(ByteBuffer h) {
        sequence.updateWindow(Bhs.expCmdSn(h), Bhs.maxCmdSn(h));
    }

    private void dataIn(ByteBuffer h, int dsl, int itt) throws IOException {
        int flags = Bhs.flags(h);
        updateWindow(h);
        TaskSlot t = running(itt, "Data-In");
        if (dsl > 0) {
            if (!t.acceptsDataIn) {
                throw new IscsiProtocolException("Data-In with " + dsl + " bytes for ITT 0x"
                        + Integer.toHexString(itt) + ", a command that reads nothing: the target may not write into"
                        + " the data being sent");
            }
            int offset = Bhs.bufferOffset(h);
            if (offset != t.received) {
                throw new IscsiProtocolException("Data-In at byte " + offset + " of ITT 0x" + Integer.toHexString(itt)
                        + " where byte " + t.received + " was due (a gap or an overlap in the transfer)");
            }
            if (dsl > t.length - t.received) {
                throw new IscsiProtocolException("Data-In for bytes " + offset + "+" + dsl + " beyond the "
                        + t.length + "-byte transfer of ITT 0x" + Integer.toHexString(itt));
            }
        }
        if (Bhs.dataSn(h) != t.nextDataSn) {
            throw new IscsiProtocolException("Data-In with DataSN " + Bhs.dataSn(h) + " for ITT 0x"
                    + Integer.toHexString(itt) + " where " + t.nextDataSn + " was due");
        }
        if (dsl > 0) {
            if (!t.beginPlacement()) {
                throw new IscsiProtocolException("Data-In for ITT 0x" + Integer.toHexString(itt)
                        + " after that command ended");
            }
            int placed = 0;
            try {
                ByteBuffer b = t.buffer;
                b.limit(t.base + t.received + dsl).position(t.base + t.received);
                pdus.readSegment(b);
                placed = dsl;
            } finally {
                t.endPlacement(placed);
            }
        }
        t.nextDataSn++;
        if ((flags & Bhs.DATA_IN_STATUS_BIT) != 0) {
            sequence.advanceStatSn(Bhs.statSn(h));
            complete(t, itt, 0, Bhs.scsiStatus(h), (flags & Bhs.RESIDUAL_UNDERFLOW_BIT) != 0, Bhs.residualCount(h),
                    TaskSlot.NO_SENSE, TaskSlot.NO_SENSE, TaskSlot.NO_SENSE);
        }
    }

    /** The slot of the running command {@code itt} names; with error recovery level 0 nothing else is answered. */
    private TaskSlot running(int itt, String what) throws IscsiProtocolException {
        TaskSlot t = slots.forItt(itt);
        if (t == null) {
            throw new IscsiProtocolException(what + " for ITT 0x" + Integer.toHexString(itt)
                    + ", which names no running command");
        }
        return t;
    }

    private static void complete(TaskSlot t, int itt, int response, int status, boolean underflow, int residual,
            int senseKey, int asc, int ascq) throws IscsiProtocolException {
        if (!t.complete(response, status, underflow, residual, senseKey, asc, ascq)) {
            throw new IscsiProtocolException("a second status for ITT 0x" + Integer.toHexString(itt));
        }
    }

    private void scsiResponse(ByteBuffer h, int dsl, int itt) throws IOException {
        sequence.advanceStatSn(Bhs.statSn(h));
        updateWindow(h);
        int senseLength = 0;
        if (dsl > 0) {
            readIntoScratch(dsl, "SCSI Response");
            senseLength = Math.min(scratch.getShort(0) & 0xffff, dsl - 2);
        }
        TaskSlot t = running(itt, "SCSI Response");
        // The sense data follows its 2-byte length. Descriptor format (0x72, 0x73) keeps the key, ASC and ASCQ
        // in bytes 1 to 3; fixed format in bytes 2, 12 and 13.
        int senseKey = TaskSlot.NO_SENSE;
        int asc = TaskSlot.NO_SENSE;
        int ascq = TaskSlot.NO_SENSE;
        if (senseLength >= 3) {
            int code = senseByte(0) & 0x7f;
            if (code == 0x72 || code == 0x73) {
                senseKey = senseByte(1) & 0x0f;
                asc = senseByte(2);
                ascq = senseLength > 3 ? senseByte(3) : TaskSlot.NO_SENSE;
            } else {
                senseKey = senseByte(FIXED_SENSE_KEY) & 0x0f;
                asc = senseLength > FIXED_SENSE_ASC ? senseByte(FIXED_SENSE_ASC) : TaskSlot.NO_SENSE;
                ascq = senseLength > FIXED_SENSE_ASCQ ? senseByte(FIXED_SENSE_ASCQ) : TaskSlot.NO_SENSE;
            }
        }
        complete(t, itt, Bhs.response(h), Bhs.scsiStatus(h), (Bhs.flags(h) & Bhs.RESIDUAL_UNDERFLOW_BIT) != 0,
                Bhs.residualCount(h), senseKey, asc, ascq);
    }

    private int senseByte(int index) {
        return scratch.get(2 + index) & 0xff;
    }

    private void r2t(ByteBuffer h, int dsl, int itt) throws IOException {
        updateWindow(h);
        pdus.discard(dsl);
        TaskSlot t = running(itt, "R2T");
        int offset = Bhs.bufferOffset(h);
        int length = Bhs.desiredDataTransferLength(h);
        if (t.acceptsDataIn || offset < 0 || length <= 0 || length > maxBurstLength
                || (long) offset + length > t.length) {
            throw new IscsiProtocolException("R2T for bytes " + offset + "+" + length + " of ITT 0x"
                    + Integer.toHexString(itt) + ", outside its " + t.length + "-byte " + (t.acceptsDataIn ? "read"
                    : "write") + " or beyond MaxBurstLength " + maxBurstLength);
        }
        if (!t.offerR2t(Bhs.ttt(h), offset, length)) {
            throw new IscsiProtocolException("a second R2T arrived for ITT 0x" + Integer.toHexString(itt)
                    + " although MaxOutstandingR2T is 1");
        }
    }

    private void nopIn(ByteBuffer h, int dsl, int itt) throws IOException {
        updateWindow(h);
        int ttt = Bhs.ttt(h);
        if (itt != Bhs.RESERVED_TAG) {
            sequence.advanceStatSn(Bhs.statSn(h)); // an answer to a ping of ours (we send none), advance anyway
        }
        byte[] data = new byte[dsl];
        pdus.readSegment(ByteBuffer.wrap(data));
        if (ttt != Bhs.RESERVED_TAG) {
            nopResponder.answerLater(ttt, Bhs.lun(h), data);
        }
    }

    private void logoutResponse(ByteBuffer h, int dsl, int itt) throws IOException {
        sequence.advanceStatSn(Bhs.statSn(h));
        pdus.discard(dsl);
        TaskSlot t = running(itt, "Logout Response");
        int response = Bhs.response(h);
        if (response == 0) {
            lifecycle.expectEnd(); // the target closes the connection next
        }
        complete(t, itt, response, 0, false, 0, TaskSlot.NO_SENSE, TaskSlot.NO_SENSE, TaskSlot.NO_SENSE);
    }

    private void reject(ByteBuffer h, int dsl) throws IOException {
        sequence.advanceStatSn(Bhs.statSn(h));
        updateWindow(h);
        readIntoScratch(dsl, "Reject PDU");
        int reason = Bhs.rejectReason(h);
        if (dsl >= Bhs.LENGTH) {
            TaskSlot t = slots.forItt(Bhs.itt(scratch)); // the data segment is the rejected PDU's header
            if (t != null) {
                t.reject(new IOException("the target rejected the PDU (reason 0x" + Integer.toHexString(reason) + ")"));
                return;
            }
        }
        log.warn("{}: the target rejected a PDU (reason 0x{})", lifecycle.description(), Integer.toHexString(reason));
    }

    private void asyncMessage(ByteBuffer h, int dsl) throws IOException {
        sequence.advanceStatSn(Bhs.statSn(h));
        updateWindow(h);
        pdus.discard(dsl);
        int event = Bhs.asyncEvent(h);
        if (event == 1 || event == 2 || event == 3) {
            log.warn("{}: the target asks to end the {} (async event {})", lifecycle.description(),
                    event == 1 ? "session (logout request)" : "connection", event);
        }
    }

    private void readIntoScratch(int dsl, String what) throws IOException {
        if (dsl > scratch.capacity()) {
            throw new IOException(what + " with a " + dsl + "-byte data segment");
        }
        pdus.readPadded(scratch, dsl);
    }
}
