package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;

/** An Asynchronous Message (RFC 7143 section 11.9). */
final class AsyncMessageHeader extends ResponseHeader<AsyncMessageHeader> {
    private static final int ASYNC_EVENT = Bhs.ASYNC_EVENT_OFFSET;
    private static final int PARAMETER_3 = Bhs.PARAMETER_3_OFFSET;

    AsyncMessageHeader() {
        super(Bhs.OP_ASYNC_MESSAGE);
    }

    AsyncMessageHeader asyncEvent(int event) {
        setByte(ASYNC_EVENT, event);
        return this;
    }

    /** For the logout request event: the seconds the initiator has to log out. */
    AsyncMessageHeader parameter3(int value) {
        setShort(PARAMETER_3, value);
        return this;
    }
}
