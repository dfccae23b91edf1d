package io.stripestack.targetserver.iscsi;

import io.netty.util.concurrent.Promise;
import io.stripestack.iscsi.proto.Bhs;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * How a session ends gracefully: a logout the initiator asks for (RFC 7143 section 11.14), answered once no
 * command is executing, and a drain the server asks for (an administrative change, a login that must end itself,
 * shutdown), which asks a logged-in initiator to log out (Async Message, section 11.9) and closes the connection
 * once no command is executing and the initiator logged out or half the drain timeout passed. Either way the
 * session stops admitting commands at once; a logout also ends the tasks that never started.
 *
 * <p>Concurrency: owned by the connection's event loop, like its timer; only {@link #drain()} may be called on any
 * thread, and it hops onto the event loop.
 */
final class SessionEnd {
    /** The session's commands as its end sees them; {@link ScsiCommands} in a normal session. */
    interface Commands {
        int executing();

        /** Every later command is rejected. */
        void stopAdmitting();

        /** Every task that has not started ends without an answer. */
        void dropUnstartedForLogout();
    }

    /** A discovery session's: it runs no commands. */
    private static final Commands NONE = new Commands() {
        @Override
        public int executing() {
            return 0;
        }

        @Override
        public void stopAdmitting() {
        }

        @Override
        public void dropUnstartedForLogout() {
        }
    };

    private static final int ASYNC_EVENT_LOGOUT_REQUEST = 1;
    private static final int LOGOUT_CLOSE_SESSION = 0;
    private static final int LOGOUT_CLOSE_CONNECTION = 1;
    private static final int LOGOUT_CONNECTION_RECOVERY_NOT_SUPPORTED = 2;

    private final Wire wire;
    private final SequenceNumbers sequence;
    private final Duration drainTimeout;
    private final LogoutResponseHeader logoutResponseHeader = new LogoutResponseHeader();
    private final AsyncMessageHeader asyncMessageHeader = new AsyncMessageHeader();
    private NegotiatedParameters params;
    private Commands commands = NONE;
    /** A normal session is in its full feature phase: a drain asks its initiator to log out first. */
    private boolean loggedIn;
    private int pendingLogoutItt;
    private boolean logoutPending;
    private boolean draining;
    /** The target asked the initiator to log out and gives it until the drain grace ends. */
    private boolean awaitingRequestedLogout;
    private Promise<Void> drained;

    SessionEnd(Wire wire, SequenceNumbers sequence, Duration drainTimeout) {
        this.wire = wire;
        this.sequence = sequence;
        this.drainTimeout = drainTimeout;
    }

    /** The full feature phase starts; {@code sessionCommands} is null in a discovery session. */
    void started(NegotiatedParameters negotiated, Commands sessionCommands) {
        this.params = negotiated;
        if (sessionCommands != null) {
            this.commands = sessionCommands;
            this.loggedIn = true;
            if (draining) {
                commands.stopAdmitting();
            }
        }
    }

    /** A Logout Request whose CmdSN the window accepted. */
    void logout(LogoutRequestHeader h) {
        sequence.retire(h.immediate());
        int reason = h.reasonCode();
        pendingLogoutItt = h.itt();
        if (reason != LOGOUT_CLOSE_SESSION && reason != LOGOUT_CLOSE_CONNECTION) {
            sendLogoutHeader(LOGOUT_CONNECTION_RECOVERY_NOT_SUPPORTED);
            return;
        }
        logoutPending = true;
        commands.stopAdmitting();
        commands.dropUnstartedForLogout();
        wire.readInterestChanged();
        if (commands.executing() == 0) {
            sendLogoutResponse();
        }
    }

    /** A task was answered: a logout or a drain may have waited for the last one. */
    void taskEnded() {
        if (logoutPending && commands.executing() == 0) {
            sendLogoutResponse();
        }
        completeDrainIfIdle();
    }

    /** The connection closed: a drain waiting for it is over. */
    void connectionClosed() {
        completeDrainIfIdle();
    }

    private void sendLogoutResponse() {
        logoutPending = false;
        sendLogoutHeader(0);
        wire.closeAfterFlush();
    }

    private void sendLogoutHeader(int response) {
        LogoutResponseHeader h = logoutResponseHeader.begin(wire.alloc(), 0)
                .response(response)
                .itt(pendingLogoutItt)
                .time2Wait(params.defaultTime2Wait)
                .time2Retain(params.defaultTime2Retain);
        sequence.stamp(h);
        wire.write(h.toPdu(null));
    }

    /**
     * Graceful close: stops taking commands, asks a logged-in initiator to log out and closes the connection once
     * no command is executing and the initiator logged out or half the drain timeout passed. The promise
     * completes when the connection is closed. Safe from any thread; a second drain (an administrative change and
     * a login that ends itself, or a shutdown) joins the first and completes with it.
     */
    Promise<Void> drain() {
        Promise<Void> promise = wire.executor().newPromise();
        wire.executor().execute(() -> {
            if (drained != null) {
                drained.addListener(f -> promise.trySuccess(null));
                return;
            }
            draining = true;
            drained = promise;
            commands.stopAdmitting();
            if (wire.open() && loggedIn && !wire.closing()) {
                long graceMillis = drainTimeout.toMillis() / 2;
                sendAsyncLogoutRequest((int) Math.max(1, graceMillis / 1000));
                wire.flush();
                awaitingRequestedLogout = true;
                wire.executor().schedule(() -> {
                    awaitingRequestedLogout = false;
                    completeDrainIfIdle();
                }, graceMillis, TimeUnit.MILLISECONDS);
            }
            completeDrainIfIdle();
        });
        return promise;
    }

    private void sendAsyncLogoutRequest(int secondsToLogout) {
        AsyncMessageHeader h = asyncMessageHeader.begin(wire.alloc(), 0)
                .itt(Bhs.RESERVED_TAG)
                .asyncEvent(ASYNC_EVENT_LOGOUT_REQUEST)
                .parameter3(secondsToLogout);
        sequence.stamp(h);
        wire.write(h.toPdu(null));
    }

    private void completeDrainIfIdle() {
        if (!draining) {
            return;
        }
        if (!wire.open()) {
            drained.trySuccess(null);
        } else if (commands.executing() == 0 && !awaitingRequestedLogout) {
            wire.flush();
            wire.close().addListener(f -> drained.trySuccess(null));
        }
    }
}
