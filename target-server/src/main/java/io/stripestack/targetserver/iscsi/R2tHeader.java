package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A Ready To Transfer (RFC 7143 section 11.8): asks for one burst of a write's data. */
final class R2tHeader extends ResponseHeader<R2tHeader> {
    private static final int R2T_SN = Bhs.R2T_SN_OFFSET;
    private static final int DESIRED_DATA_TRANSFER_LENGTH = Bhs.DESIRED_DATA_TRANSFER_LENGTH_OFFSET;

    R2tHeader() {
        super(Bhs.OP_R2T);
    }

    R2tHeader lunField(long lunField) {
        setLong(LUN, lunField);
        return this;
    }

    R2tHeader ttt(int ttt) {
        setInt(TTT, ttt);
        return this;
    }

    R2tHeader r2tSn(int r2tSn) {
        setInt(R2T_SN, r2tSn);
        return this;
    }

    R2tHeader bufferOffset(int bufferOffset) {
        setInt(BUFFER_OFFSET, bufferOffset);
        return this;
    }

    R2tHeader desiredDataTransferLength(int length) {
        setInt(DESIRED_DATA_TRANSFER_LENGTH, length);
        return this;
    }
}
