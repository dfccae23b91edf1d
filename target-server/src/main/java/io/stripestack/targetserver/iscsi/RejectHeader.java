package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A Reject (RFC 7143 section 11.17); its data segment is the rejected header. */
final class RejectHeader extends ResponseHeader<RejectHeader> {
    RejectHeader() {
        super(Bhs.OP_REJECT);
    }

    /** One of the {@code Bhs.REJECT_} reasons. */
    RejectHeader reason(int reason) {
        setByte(RESPONSE, reason);
        return this;
    }
}
