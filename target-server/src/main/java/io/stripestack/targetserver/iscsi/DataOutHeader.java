package io.stripestack.targetserver.iscsi;

/** A SCSI Data-Out (RFC 7143 section 11.7): unsolicited when its TTT is the reserved tag. */
final class DataOutHeader extends PduHeader<DataOutHeader> {
    int ttt() {
        return getInt(TTT);
    }

    int dataSn() {
        return getInt(DATA_SN);
    }

    int bufferOffset() {
        return getInt(BUFFER_OFFSET);
    }
}
