package io.stripestack.initiator;

import io.stripestack.iscsi.proto.Bhs;
import java.nio.ByteBuffer;

/**
 * The SCSI commands this initiator issues (SBC-4): their operation codes, their names in messages, which of them
 * read data, and how each one's 16-byte CDB is laid into a SCSI Command PDU. Stateless.
 */
final class ScsiCdb {
    static final int TEST_UNIT_READY = 0x00;
    static final int READ_16 = 0x88;
    static final int WRITE_16 = 0x8a;
    static final int SYNCHRONIZE_CACHE_16 = 0x91;
    /** With service action READ CAPACITY(16). */
    static final int SERVICE_ACTION_IN_16 = 0x9e;
    static final int READ_CAPACITY_16_LENGTH = 32;
    /** WRITE(16) byte 1: Force Unit Access, the write is durable on the medium before GOOD (SBC-4 5.40). */
    static final int FUA = 0x08;
    private static final int READ_CAPACITY_16_SERVICE_ACTION = 0x10;

    private ScsiCdb() {
    }

    static boolean readsData(int opcode) {
        return opcode == READ_16 || opcode == SERVICE_ACTION_IN_16;
    }

    /** Writes the CDB into the command header {@code h}, whose CDB bytes are zero; {@code flags} go into byte 1. */
    static void fill(ByteBuffer h, int opcode, int flags, long lba, int length, int blockSize) {
        int cdb = Bhs.CDB_OFFSET;
        h.put(cdb, (byte) opcode);
        h.put(cdb + 1, (byte) flags);
        switch (opcode) {
            case READ_16, WRITE_16 -> {
                h.putLong(cdb + 2, lba);
                h.putInt(cdb + 10, length / blockSize);
            }
            case SERVICE_ACTION_IN_16 -> {
                h.put(cdb + 1, (byte) READ_CAPACITY_16_SERVICE_ACTION);
                h.putInt(cdb + 10, length);
            }
            default -> {
                // SYNCHRONIZE CACHE(16) with LBA 0 and 0 blocks: the whole LUN; TEST UNIT READY: no fields
            }
        }
    }

    static String name(int opcode) {
        return switch (opcode) {
            case READ_16 -> "READ(16)";
            case WRITE_16 -> "WRITE(16)";
            case SYNCHRONIZE_CACHE_16 -> "SYNCHRONIZE CACHE(16)";
            case SERVICE_ACTION_IN_16 -> "READ CAPACITY(16)";
            case TEST_UNIT_READY -> "TEST UNIT READY";
            default -> "opcode 0x" + Integer.toHexString(opcode);
        };
    }
}
