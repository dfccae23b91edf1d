package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** What SCSI Response and Data-In share: the SCSI status and the residual (RFC 7143 section 11.4.5). */
abstract class StatusHeader<V extends StatusHeader<V>> extends ResponseHeader<V> {
    private static final int STATUS = Bhs.STATUS_OFFSET;
    private static final int RESIDUAL_UNDERFLOW = Bhs.RESIDUAL_UNDERFLOW_BIT;
    private static final int RESIDUAL_OVERFLOW = Bhs.RESIDUAL_OVERFLOW_BIT;
    private static final int RESIDUAL_COUNT = Bhs.RESIDUAL_COUNT_OFFSET;

    StatusHeader(int opcode) {
        super(opcode);
    }

    V status(int status) {
        setByte(STATUS, status);
        return self();
    }

    /** {@code count} bytes more ({@code overflow}) or fewer than the initiator expected; 0 for none. */
    final V residual(boolean overflow, int count) {
        if (count != 0) {
            flag(overflow ? RESIDUAL_OVERFLOW : RESIDUAL_UNDERFLOW, true);
        }
        setInt(RESIDUAL_COUNT, count);
        return self();
    }
}
