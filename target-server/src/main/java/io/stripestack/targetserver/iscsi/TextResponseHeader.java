package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A Text Response (RFC 7143 section 11.11). */
final class TextResponseHeader extends ResponseHeader<TextResponseHeader> {
    TextResponseHeader() {
        super(Bhs.OP_TEXT_RESPONSE);
    }

    /** More text follows in the next response: C bit instead of F. */
    TextResponseHeader continues() {
        flags(CONTINUE_BIT);
        return this;
    }

    TextResponseHeader lunField(long lunField) {
        setLong(LUN, lunField);
        return this;
    }

    TextResponseHeader ttt(int ttt) {
        setInt(TTT, ttt);
        return this;
    }
}
