package io.stripestack.targetserver.iscsi;

/** A NOP-Out (RFC 7143 section 11.18): a ping to answer, or, with the reserved ITT, none. */
final class NopOutHeader extends RequestHeader<NopOutHeader> {
    long lunField() {
        return getLong(LUN);
    }
}
