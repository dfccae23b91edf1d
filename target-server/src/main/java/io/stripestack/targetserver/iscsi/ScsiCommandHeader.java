package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A SCSI Command (RFC 7143 section 11.3), with the Extended CDB AHS if it has one. */
final class ScsiCommandHeader extends RequestHeader<ScsiCommandHeader> {
    private static final int READ_BIT = Bhs.COMMAND_READ_BIT;
    private static final int WRITE_BIT = Bhs.COMMAND_WRITE_BIT;
    private static final int TASK_ATTRIBUTES = Bhs.TASK_ATTRIBUTES_MASK;
    private static final int EXPECTED_DATA_TRANSFER_LENGTH = Bhs.EXPECTED_DATA_TRANSFER_LENGTH_OFFSET;
    private static final int CDB = Bhs.CDB_OFFSET;
    private static final int CDB_LENGTH = Bhs.CDB_LENGTH;
    private static final int AHS_TYPE_EXTENDED_CDB = 1;

    boolean reads() {
        return (flags() & READ_BIT) != 0;
    }

    boolean writes() {
        return (flags() & WRITE_BIT) != 0;
    }

    int taskAttributes() {
        return flags() & TASK_ATTRIBUTES;
    }

    long lunField() {
        return getLong(LUN);
    }

    long lun() {
        return Bhs.decodeLun(lunField());
    }

    /** Signed as on the wire: a negative value (over 2 GiB) is the caller's to refuse. */
    int expectedDataTransferLength() {
        return getInt(EXPECTED_DATA_TRANSFER_LENGTH);
    }

    /** The CDB: 16 bytes from the BHS, more from an Extended CDB AHS; null if the AHS is malformed. */
    byte[] cdb() {
        int ahsEnd = length();
        int offset = Bhs.LENGTH;
        while (offset + 4 <= ahsEnd) {
            int length = getUnsignedShort(offset);
            int type = getByte(offset + 2) & 0xff;
            if (offset + 3 + length > ahsEnd) {
                return null;
            }
            if (type == AHS_TYPE_EXTENDED_CDB && length > 1) {
                // the AHS length counts its reserved byte too
                byte[] cdb = new byte[CDB_LENGTH + length - 1];
                getBytes(CDB, cdb, 0, CDB_LENGTH);
                getBytes(offset + 4, cdb, CDB_LENGTH, length - 1);
                return cdb;
            }
            offset += (3 + length + 3) & ~3;
        }
        byte[] cdb = new byte[CDB_LENGTH];
        getBytes(CDB, cdb, 0, CDB_LENGTH);
        return cdb;
    }
}
