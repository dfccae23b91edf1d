package io.stripestack.targetserver.iscsi;

/** An Asynchronous Message (RFC 7143 section 11.9). */
final class AsyncMessageHeader extends ResponseHeader<AsyncMessageHeader> {
    private static final int ASYNC_EVENT = 36;
    private static final int PARAMETER_3 = 42;

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
