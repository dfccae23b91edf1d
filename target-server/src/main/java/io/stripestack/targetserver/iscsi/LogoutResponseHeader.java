package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A Logout Response (RFC 7143 section 11.15). */
final class LogoutResponseHeader extends ResponseHeader<LogoutResponseHeader> {
    private static final int TIME_2_WAIT = Bhs.TIME_2_WAIT_OFFSET;
    private static final int TIME_2_RETAIN = Bhs.TIME_2_RETAIN_OFFSET;

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
