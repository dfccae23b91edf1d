package io.stripestack.initiator;

import java.io.IOException;

/** The target refused the login (status class and detail from the Login Response) or the exchange broke off. */
public final class IscsiLoginException extends IOException {
    private final int statusClass;
    private final int statusDetail;

    public IscsiLoginException(String message, int statusClass, int statusDetail) {
        super(message);
        this.statusClass = statusClass;
        this.statusDetail = statusDetail;
    }

    /** 0 success, 1 redirection, 2 initiator error (e.g. authentication), 3 target error; -1 when no response. */
    public int statusClass() {
        return statusClass;
    }

    public int statusDetail() {
        return statusDetail;
    }
}
