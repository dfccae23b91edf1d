package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.ScheduledFuture;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.iscsi.proto.TextKeys;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The login phase of one connection on the wire: joins login requests continued with the C bit,
 * bounds their text, hands whole requests to the {@link LoginNegotiator} and answers them, holds a
 * request that answers a CHAP challenge until the server's {@link AuthFailureThrottle} gives it its
 * turn, and enters the full feature phase through its {@link Session}. A connection that does not
 * finish its login within the login timeout is closed.
 *
 * <p>Concurrency: owned by the connection's event loop, like the connection; its timers run there.
 */
final class LoginPhase {
    /** What the login phase asks of its connection beyond the {@link Wire}. */
    interface Session {
        /** The remote IP address alone (no port): the source the CHAP failure throttle counts. */
        String remoteHost();

        /** Closes at once; later PDUs are ignored. */
        void closeNow();

        /**
         * Takes the slot of a normal session of {@code initiatorName} ({@link ConnectionSlots}); false when that
         * name holds its limit of sessions already. {@code nexus} is the session's I_T nexus (a session holding it
         * now is reinstated, so it does not count).
         */
        boolean takeSessionSlot(String initiatorName, String nexus);

        /** The login succeeded: the session starts and is registered; returns its TSIH for the last login response. */
        int enterFullFeature(LoginNegotiator negotiator, long isid);

        /** The last login response is written: from here on PDUs carry the negotiated digests and sizes. */
        void fullFeatureAnswered();

        /** Ends the new session gracefully (asks for a logout, closes once idle). */
        void endSession();
    }

    private static final Logger log = LoggerFactory.getLogger(LoginPhase.class);

    private final Wire wire;
    private final SequenceNumbers sequence;
    private final ServerContext server;
    private final Session session;
    private final LoginNegotiator negotiator;
    private final LoginRequestHeader requestHeader = new LoginRequestHeader();
    private final LoginResponseHeader responseHeader = new LoginResponseHeader();
    private boolean started;
    private long isid;
    private ByteBuf text;
    /** A request waits for the CHAP failure throttle: nothing else is read meanwhile. */
    private boolean deferred;
    private ScheduledFuture<?> timer;
    /** Closes the connection when it stays silent {@link IscsiServerSettings#loginIdleTimeout()} while logging in. */
    private ScheduledFuture<?> idleTimer;
    /** The latest request received or answer sent: silence is counted from it. */
    private long lastExchangeNanos;

    LoginPhase(Wire wire, SequenceNumbers sequence, ServerContext server, Session session) {
        this.wire = wire;
        this.sequence = sequence;
        this.server = server;
        this.session = session;
        this.negotiator = new LoginNegotiator(server.settings, server::target);
        long timeoutMillis = server.settings.loginTimeout().toMillis();
        timer = wire.executor().schedule(this::timedOut, timeoutMillis, TimeUnit.MILLISECONDS);
        lastExchangeNanos = wire.executor().ticker().nanoTime();
        scheduleIdleCheck(server.settings.loginIdleTimeout().toNanos());
    }

    LoginNegotiator negotiator() {
        return negotiator;
    }

    boolean deferred() {
        return deferred;
    }

    /** The login ended (full feature phase, or the connection closed): its timer and text go. */
    void end() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
        if (idleTimer != null) {
            idleTimer.cancel(false);
            idleTimer = null;
        }
        if (text != null) {
            text.release();
            text = null;
        }
    }

    private void timedOut() {
        if (timer != null) {
            log.info("{}: login not completed within {}; closing", wire.remote(), server.settings.loginTimeout());
            wire.close();
        }
    }

    private void scheduleIdleCheck(long delayNanos) {
        idleTimer = wire.executor().schedule(this::checkIdle, delayNanos, TimeUnit.NANOSECONDS);
    }

    /**
     * A connection that says nothing while logging in only holds a slot: it is closed long before the login
     * timeout. Silence counts from the latest request or answer; one whose request waits for the CHAP failure
     * throttle is waiting for the target, not idle.
     */
    private void checkIdle() {
        if (idleTimer == null) {
            return;
        }
        long timeout = server.settings.loginIdleTimeout().toNanos();
        long silent = wire.executor().ticker().nanoTime() - lastExchangeNanos;
        if (deferred || silent < timeout) {
            scheduleIdleCheck(deferred ? timeout : timeout - silent);
            return;
        }
        log.debug("{}: silent for {} while logging in; closing", wire.remote(),
                server.settings.loginIdleTimeout());
        wire.close();
    }

    void onPdu(IscsiPdu pdu) {
        lastExchangeNanos = wire.executor().ticker().nanoTime();
        // read as a login request even when it is none: the refusal echoes its ITT and ISID
        LoginRequestHeader h = requestHeader.wrap(pdu.header());
        if (deferred) {
            // the initiator must wait for the answer to its request before it sends another
            session.closeNow();
            return;
        }
        if (pdu.rejectReason() != 0 || pdu.opcode() != Bhs.OP_LOGIN_REQUEST) {
            // RFC 7143 section 6.1: anything but a Login Request during login ends the connection; in
            // the middle of CHAP it is a failed authentication, which the failure throttle counts
            log.info("{}: opcode 0x{} during login; rejecting the login", wire.remote(),
                    Integer.toHexString(pdu.opcode()));
            boolean inChap = negotiator.awaitsChapResponse();
            if (inChap) {
                chapVerdict(true, false);
            }
            refuse(h, inChap ? LoginNegotiator.STATUS_AUTHENTICATION_FAILURE : LoginNegotiator.STATUS_INVALID_DURING_LOGIN,
                    0, null);
            return;
        }
        int currentStage = h.currentStage();
        if (!started) {
            // first request of the connection: sequence numbers start here
            started = true;
            isid = h.isid();
            sequence.start(h.expStatSn(), h.cmdSn(), server.settings.queueDepth());
        }
        if (h.tsih() != 0) {
            // adding a connection to an existing session (a TSIH) needs MaxConnections > 1
            refuse(h, LoginNegotiator.STATUS_SESSION_DOES_NOT_EXIST, currentStage, null);
            return;
        }
        ByteBuf data = pdu.data();
        if (data.isReadable()) {
            if (text == null) {
                text = wire.alloc().heapBuffer(data.readableBytes());
            }
            if (text.readableBytes() + data.readableBytes() > TextKeys.MAX_LOGIN_TEXT_BYTES) {
                refuse(h, LoginNegotiator.STATUS_INITIATOR_ERROR, currentStage, "request text over 64 KiB");
                return;
            }
            text.writeBytes(data, data.readerIndex(), data.readableBytes());
        }
        if (h.continues()) {
            // the initiator's text continues in the next request: acknowledge with an empty response
            respond(h, LoginNegotiator.STATUS_SUCCESS, currentStage, false, 0, null, 0);
            return;
        }
        Set<String> repeated = new HashSet<>();
        Map<String, String> keys = text == null ? Map.of() : TextKeys.parse(text.nioBuffer(), repeated);
        if (text != null) {
            text.release();
            text = null;
        }
        if (!repeated.isEmpty()) {
            // RFC 7143 section 6.2: a key declared twice is a negotiation error
            refuse(h, negotiator.awaitsChapResponse() ? LoginNegotiator.STATUS_AUTHENTICATION_FAILURE
                    : LoginNegotiator.STATUS_INITIATOR_ERROR, currentStage, "key declared twice: " + repeated);
            return;
        }
        process(h, keys);
    }

    /**
     * Answers one whole login request. A request that answers a CHAP challenge first claims its
     * turn from the server's failure throttle, and waits (reading nothing) while its source address
     * is penalized for recent failures (a penalty of its initiator name alone never holds it).
     */
    private void process(LoginRequestHeader h, Map<String, String> keys) {
        int currentStage = h.currentStage();
        boolean verifiesChap = negotiator.awaitsChapResponse();
        if (verifiesChap) {
            long wait = server.authFailures.tryClaim(session.remoteHost(), System.nanoTime());
            if (wait > 0) {
                defer(h.copyBhs(), keys, wait);
                return;
            }
        }
        LoginNegotiator.Step step = negotiator.process(currentStage, h.transit(), h.nextStage(), h.versionMin(), keys);
        if (verifiesChap) {
            chapVerdict(step.failed() || negotiator.chapAuthenticated(), negotiator.chapAuthenticated());
        }
        if (step.failed()) {
            refuse(h, step.status, currentStage, null);
            return;
        }
        if (TextKeys.encodedLength(step.keys) > PduDecoder.LOGIN_MAX_DATA_SEGMENT) {
            // the answer must fit the 8192 bytes an initiator takes during login: only a request
            // stuffed with keys nobody knows produces more
            refuse(h, LoginNegotiator.STATUS_INITIATOR_ERROR, currentStage, "answer would exceed 8192 bytes");
            return;
        }
        int tsih = 0;
        if (step.enteredFullFeature()) {
            int changed = definitionChangedStatus();
            if (changed != LoginNegotiator.STATUS_SUCCESS) {
                refuse(h, changed, currentStage, "the target's access settings changed during the login");
                return;
            }
            if (negotiator.target() != null && !session.takeSessionSlot(negotiator.initiatorName(),
                    SessionRegistry.nexus(negotiator.initiatorName(), isid, negotiator.target(), server.settings))) {
                refuse(h, LoginNegotiator.STATUS_OUT_OF_RESOURCES, currentStage, "its initiator name holds "
                        + server.settings.maxSessionsPerInitiator()
                        + " sessions already (server.max_sessions_per_initiator)");
                return;
            }
            end();
            tsih = session.enterFullFeature(negotiator, isid);
        }
        respond(h, LoginNegotiator.STATUS_SUCCESS, currentStage, step.transit, step.nextStage, step.keys, tsih);
        if (step.enteredFullFeature()) {
            session.fullFeatureAnswered();
            if (definitionChangedStatus() != LoginNegotiator.STATUS_SUCCESS) {
                // changed between the check and the registration: the change may have ended the target's
                // sessions before this one was registered, so it ends itself
                log.info("{}: the access settings of {} changed as {} logged in; ending the session",
                        wire.remote(), negotiator.target().iqn(), negotiator.initiatorName());
                session.endSession();
            }
        }
    }

    /**
     * Success, or the status that refuses the login, when the target's definition (ACL, CHAP) was replaced or
     * removed since the login looked it up: the login was checked, and CHAP verified, against the old one, whose
     * secret is zeroed once replaced. An administrative change ends the sessions registered when it is made; a
     * login must not slip past it. Any replacement counts, even one that leaves this initiator's access as it
     * was (another initiator's ACL): an initiator still allowed gets "service unavailable" and logs in again.
     */
    private int definitionChangedStatus() {
        IscsiTargetDefinition looked = negotiator.target();
        if (looked == null) {
            return LoginNegotiator.STATUS_SUCCESS;   // discovery
        }
        IscsiTargetDefinition current = server.target(looked.iqn());
        if (current == looked) {
            return LoginNegotiator.STATUS_SUCCESS;
        }
        if (current == null) {
            return LoginNegotiator.STATUS_NOT_FOUND;
        }
        return current.allows(negotiator.initiatorName()) ? LoginNegotiator.STATUS_SERVICE_UNAVAILABLE
                : LoginNegotiator.STATUS_AUTHORIZATION_FAILURE;
    }

    private void defer(ByteBuf header, Map<String, String> keys, long waitNanos) {
        deferred = true;
        wire.readInterestChanged();
        wire.executor().schedule(() -> {
            deferred = false;
            try {
                if (wire.open() && !wire.closing()) {
                    wire.readInterestChanged();
                    process(requestHeader.wrap(header), keys);
                    wire.flush();
                }
            } finally {
                header.release();
            }
        }, waitNanos, TimeUnit.NANOSECONDS);
    }

    private void chapVerdict(boolean verified, boolean succeeded) {
        server.authFailures.verdict(session.remoteHost(), initiatorName(), verified, succeeded, System.nanoTime());
    }

    private String initiatorName() {
        return String.valueOf(negotiator.initiatorName());
    }

    private void refuse(LoginRequestHeader h, int status, int currentStage, String why) {
        log.info("{}: login of {} refused with status 0x{}{}", wire.remote(), negotiator.initiatorName(),
                String.format("%04x", status), why == null ? "" : " (" + why + ")");
        respond(h, status, currentStage, false, 0, null, 0);
        wire.closeAfterFlush();
    }

    private void respond(LoginRequestHeader request, int status, int currentStage, boolean transit, int nextStage,
            Map<String, String> keys, int tsih) {
        ByteBuf data = null;
        if (keys != null && !keys.isEmpty()) {
            data = Unpooled.wrappedBuffer(TextKeys.encode(keys));
        }
        LoginResponseHeader h = responseHeader.begin(wire.alloc(), data == null ? 0 : data.readableBytes())
                .stages(currentStage, transit, nextStage)
                .isid(request.isid())
                .tsih(tsih)
                .itt(request.itt())
                .status(status);
        sequence.stamp(h);
        wire.write(h.toPdu(data));
        lastExchangeNanos = wire.executor().ticker().nanoTime();
    }
}
