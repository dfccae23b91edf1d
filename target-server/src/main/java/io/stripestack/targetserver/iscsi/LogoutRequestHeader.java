package io.stripestack.targetserver.iscsi;

/** A Logout Request (RFC 7143 section 11.14). */
final class LogoutRequestHeader extends RequestHeader<LogoutRequestHeader> {
    private static final int REASON_CODE = 0x7f;

    int reasonCode() {
        return flags() & REASON_CODE;
    }
}
