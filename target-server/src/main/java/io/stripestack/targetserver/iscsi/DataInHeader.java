package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A SCSI Data-In (RFC 7143 section 11.7). */
final class DataInHeader extends StatusHeader<DataInHeader> {
    private static final int STATUS_BIT = Bhs.DATA_IN_STATUS_BIT;

    DataInHeader() {
        super(Bhs.OP_DATA_IN);
    }

    /** The status collapsed into this Data-In: only the last one of a command may carry it. */
    @Override
    DataInHeader status(int status) {
        flag(STATUS_BIT, true);
        return super.status(status);
    }

    /** The F bit: the end of a burst (MaxBurstLength) or of the command's data. */
    DataInHeader finalBit(boolean set) {
        return flag(FINAL_BIT, set);
    }

    DataInHeader lunField(long lunField) {
        setLong(LUN, lunField);
        return this;
    }

    DataInHeader ttt(int ttt) {
        setInt(TTT, ttt);
        return this;
    }

    DataInHeader dataSn(int dataSn) {
        setInt(DATA_SN, dataSn);
        return this;
    }

    DataInHeader bufferOffset(int bufferOffset) {
        setInt(BUFFER_OFFSET, bufferOffset);
        return this;
    }
}
