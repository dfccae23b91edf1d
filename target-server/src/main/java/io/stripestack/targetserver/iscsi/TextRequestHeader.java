package io.stripestack.targetserver.iscsi;

/** A Text Request (RFC 7143 section 11.10): a TTT other than the reserved tag asks for the next piece. */
final class TextRequestHeader extends RequestHeader<TextRequestHeader> {
    boolean continues() {
        return (flags() & CONTINUE_BIT) != 0;
    }

    long lunField() {
        return getLong(LUN);
    }

    int ttt() {
        return getInt(TTT);
    }
}
