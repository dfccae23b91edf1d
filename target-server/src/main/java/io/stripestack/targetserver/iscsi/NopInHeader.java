package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A NOP-In (RFC 7143 section 11.19): the answer to a ping, or the target's own ping (a TTT, reserved ITT). */
final class NopInHeader extends ResponseHeader<NopInHeader> {
    NopInHeader() {
        super(Bhs.OP_NOP_IN);
    }

    NopInHeader lunField(long lunField) {
        setLong(LUN, lunField);
        return this;
    }

    NopInHeader ttt(int ttt) {
        setInt(TTT, ttt);
        return this;
    }
}
