package io.stripestack.targetserver.iscsi;

/** A Logout Response (RFC 7143 section 11.15). */
final class LogoutResponseHeader extends ResponseHeader<LogoutResponseHeader> {
    private static final int TIME_2_WAIT = 40;
    private static final int TIME_2_RETAIN = 42;

    LogoutResponseHeader() {
        super(Bhs.OP_LOGOUT_RESPONSE);
    }

    LogoutResponseHeader response(int response) {
        setByte(RESPONSE, response);
        return this;
    }

    LogoutResponseHeader time2Wait(int seconds) {
        setShort(TIME_2_WAIT, seconds);
        return this;
    }

    LogoutResponseHeader time2Retain(int seconds) {
        setShort(TIME_2_RETAIN, seconds);
        return this;
    }
}
