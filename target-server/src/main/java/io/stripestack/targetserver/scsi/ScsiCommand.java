package io.stripestack.targetserver.scsi;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * One SCSI command crossing from the transport (iSCSI) to the SCSI layer and back: the transport
 * fills the request side, {@link ScsiCommandRouter#execute} fills the response side.
 *
 * <p>Ownership: the transport owns this object and {@link #dataOut()} (it releases both after the
 * response is sent). The SCSI layer allocates {@link #dataIn()} from {@link #allocator()} and hands
 * its ownership to the transport by setting it; the transport sends and releases it. One thread at a
 * time touches the object: the transport until it calls execute, the worker thread during execute,
 * the transport again after execute returns (execute's return is the happens-before edge).
 */
public final class ScsiCommand {
    /** SAM status codes. */
    public static final int GOOD = 0x00;
    public static final int CHECK_CONDITION = 0x02;
    public static final int CONDITION_MET = 0x04;
    public static final int BUSY = 0x08;
    public static final int RESERVATION_CONFLICT = 0x18;
    public static final int TASK_SET_FULL = 0x28;
    public static final int TASK_ABORTED = 0x40;

    /** Task attributes (iSCSI ATTR field). */
    public static final int ATTR_UNTAGGED = 0;
    public static final int ATTR_SIMPLE = 1;
    public static final int ATTR_ORDERED = 2;
    public static final int ATTR_HEAD_OF_QUEUE = 3;
    public static final int ATTR_ACA = 4;

    // ---- request, set by the transport
    private final String nexus;
    private final long lun;
    private final byte[] cdb;
    private final int expectedTransferLength;
    private final boolean readBit;
    private final boolean writeBit;
    private final int taskAttribute;
    private ByteBuf dataOut;
    private final ByteBufAllocator allocator;

    // ---- response, set by the SCSI layer
    private int status = GOOD;
    private byte[] sense;
    private ByteBuf dataIn;
    private long commandTransferLength = -1;

    /**
     * @param nexus                  the I_T nexus: initiator port name and ISID plus target port; the same
     *                               string for every command of one session (reservations, unit attentions)
     * @param lun                    the LUN number decoded from the 8-byte LUN field
     * @param cdb                    the CDB (6 to 16 bytes, longer with an extended CDB AHS); not copied
     * @param expectedTransferLength the initiator's Expected Data Transfer Length in bytes
     * @param dataOut                every Data-Out byte received for the command (its readable bytes), or
     *                               null when there is none; the SCSI layer reads it and does not release it
     */
    public ScsiCommand(String nexus, long lun, byte[] cdb, int expectedTransferLength, boolean readBit,
            boolean writeBit, int taskAttribute, ByteBuf dataOut, ByteBufAllocator allocator) {
        this.nexus = nexus;
        this.lun = lun;
        this.cdb = cdb;
        this.expectedTransferLength = expectedTransferLength;
        this.readBit = readBit;
        this.writeBit = writeBit;
        this.taskAttribute = taskAttribute;
        this.dataOut = dataOut;
        this.allocator = allocator;
    }

    /**
     * The transport's data phase is over: {@code data} holds every Data-Out byte (or null). Set once,
     * before {@link ScsiCommandRouter#execute}; the transport still owns and releases it.
     */
    public void dataOutReceived(ByteBuf data) {
        this.dataOut = data;
    }

    public String nexus() { return nexus; }
    public long lun() { return lun; }
    public byte[] cdb() { return cdb; }
    public int opcode() { return cdb[0] & 0xff; }
    public int expectedTransferLength() { return expectedTransferLength; }
    public boolean readBit() { return readBit; }
    public boolean writeBit() { return writeBit; }
    public int taskAttribute() { return taskAttribute; }
    public ByteBuf dataOut() { return dataOut; }
    public ByteBufAllocator allocator() { return allocator; }

    public int status() { return status; }
    public byte[] sense() { return sense; }
    public ByteBuf dataIn() { return dataIn; }

    /**
     * Bytes the CDB asked to move (from its transfer/allocation length), or -1 if the command moves no
     * data. The transport compares it with the Expected Data Transfer Length to report residual
     * overflow or underflow.
     */
    public long commandTransferLength() { return commandTransferLength; }

    public void setCommandTransferLength(long bytes) { this.commandTransferLength = bytes; }

    /** Completes with GOOD and optional Data-In (ownership passes to the transport). */
    public void complete(ByteBuf dataIn) {
        this.status = GOOD;
        this.sense = null;
        this.dataIn = dataIn;
    }

    /** Completes with a status that carries no sense data (BUSY, RESERVATION CONFLICT, TASK SET FULL...). */
    public void completeWithStatus(int status) {
        this.status = status;
        this.sense = null;
    }

    /**
     * Completes with CHECK CONDITION, ABORTED COMMAND / DATA PHASE ERROR, without running: the
     * transport could not receive the command's data as it must arrive.
     */
    public void failDataPhase() {
        checkCondition(SenseException.dataPhaseError().toFixedFormat());
    }

    /** Completes with CHECK CONDITION and fixed-format sense data; releases any Data-In set before. */
    public void checkCondition(byte[] fixedFormatSense) {
        if (dataIn != null) {
            dataIn.release();
            dataIn = null;
        }
        this.status = CHECK_CONDITION;
        this.sense = fixedFormatSense;
    }
}
