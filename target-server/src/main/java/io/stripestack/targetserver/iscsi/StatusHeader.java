package io.stripestack.targetserver.iscsi;

/** What SCSI Response and Data-In share: the SCSI status and the residual (RFC 7143 section 11.4.5). */
abstract class StatusHeader<V extends StatusHeader<V>> extends ResponseHeader<V> {
    private static final int STATUS = 3;
    private static final int RESIDUAL_UNDERFLOW = 0x02;
    private static final int RESIDUAL_OVERFLOW = 0x04;
    private static final int RESIDUAL_COUNT = 44;

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
