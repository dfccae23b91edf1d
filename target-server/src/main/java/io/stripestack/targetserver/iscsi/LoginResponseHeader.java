package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** A Login Response (RFC 7143 section 11.13); ISID and TSIH sit where the request has them. */
final class LoginResponseHeader extends ResponseHeader<LoginResponseHeader> {
    private static final int LOGIN_STATUS = Bhs.LOGIN_STATUS_OFFSET;

    LoginResponseHeader() {
        super(Bhs.OP_LOGIN_RESPONSE);
    }

    /** The stage answered and, when {@code transit}, the one the connection moves on to. */
    LoginResponseHeader stages(int currentStage, boolean transit, int nextStage) {
        flags(currentStage << LoginRequestHeader.CURRENT_STAGE_SHIFT
                | (transit ? LoginRequestHeader.TRANSIT_BIT | nextStage : 0));
        return this;
    }

    LoginResponseHeader isid(long isid) {
        setShort(LoginRequestHeader.ISID, (int) (isid >>> 32));
        setInt(LoginRequestHeader.ISID + 2, (int) isid);
        return this;
    }

    LoginResponseHeader tsih(int tsih) {
        setShort(LoginRequestHeader.TSIH, tsih);
        return this;
    }

    /** Status class and detail as one number, as {@link LoginNegotiator} names them. */
    LoginResponseHeader status(int status) {
        setShort(LOGIN_STATUS, status);
        return this;
    }
}
