package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A SCSI Response (RFC 7143 section 11.4); response code 0, Command Completed at Target. */
final class ScsiResponseHeader extends StatusHeader<ScsiResponseHeader> {
    private static final int EXP_DATA_SN = Bhs.EXP_DATA_SN_OFFSET;

    ScsiResponseHeader() {
        super(Bhs.OP_SCSI_RESPONSE);
    }

    /** The number of Data-In (read) or R2T (write) PDUs the command had. */
    ScsiResponseHeader expDataSn(int expDataSn) {
        setInt(EXP_DATA_SN, expDataSn);
        return this;
    }
}
