package io.stripestack.target.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import io.stripestack.target.scsi.ScsiCommand;
import io.stripestack.target.scsi.ScsiCommandRouter;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One iSCSI connection and, with MaxConnections 1, its session: login phase, then the full feature
 * phase (SCSI commands with Data-Out collection and R2T, Data-In and responses, CmdSN window,
 * NOP-In/Out, task management, text, logout, Reject).
 *
 * <p>Concurrency: every field is owned by the channel's event loop. SCSI commands run on the
 * server's I/O executor ({@link IscsiTask}) and come back to the event loop to answer; nothing here
 * blocks. Other threads only call {@link #drain()}, {@link #closeForReinstatement()} and
 * {@link #writeBufferGranted}, which hop onto the event loop.
 *
 * <p>Write buffers come from the server's {@link WriteBufferBudget}: a write command whose buffer
 * does not fit waits, without R2Ts, until a finished or aborted command returns budget; only its
 * unsolicited data (bounded by FirstBurstLength) is taken at once, and when even that has no room
 * the command is answered TASK SET FULL (after its unsolicited data, RFC 7143 section 11.4: the
 * response waits for the Data-Out with the F bit). Task management, logout and connection loss
 * treat a waiting command like any command still collecting data: dropped, its budget returned.
 */
final class IscsiConnection extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(IscsiConnection.class);

    private static final int TMF_ABORT_TASK = 1;
    private static final int TMF_ABORT_TASK_SET = 2;
    private static final int TMF_LOGICAL_UNIT_RESET = 5;
    private static final int TMF_TARGET_WARM_RESET = 6;
    private static final int TMF_TARGET_COLD_RESET = 7;
    private static final int TMF_TASK_REASSIGN = 8;
    private static final int TMF_COMPLETE = 0;
    private static final int TMF_TASK_DOES_NOT_EXIST = 1;
    private static final int TMF_LUN_DOES_NOT_EXIST = 2;
    private static final int TMF_REASSIGNMENT_NOT_SUPPORTED = 4;
    private static final int TMF_NOT_SUPPORTED = 5;
    private static final int ASYNC_EVENT_LOGOUT_REQUEST = 1;
    private static final int LOGOUT_CLOSE_SESSION = 0;
    private static final int LOGOUT_CLOSE_CONNECTION = 1;
    private static final int LOGOUT_CONNECTION_RECOVERY_NOT_SUPPORTED = 2;
    /** Largest Expected Data Transfer Length buffered for a write; above it the command is rejected. */
    static final int MAX_WRITE_TRANSFER = 64 << 20;
    private static final int DATA_IN_STATUS = 0x01;
    /** Fixed-format sense: ABORTED COMMAND, DATA PHASE ERROR (4Bh/00h). */
    private static final byte[] DATA_PHASE_ERROR_SENSE = {0x70, 0, 0x0b, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x4b, 0, 0, 0, 0, 0};
    private static final int RESIDUAL_UNDERFLOW = 0x02;
    private static final int RESIDUAL_OVERFLOW = 0x04;

    private final ServerContext server;
    private final PduDecoder decoder;
    private final PduEncoder encoder;
    private ChannelHandlerContext ctx;

    // ---- login phase
    private LoginNegotiator login;
    private boolean loginStarted;
    /** A final answer (failed login, logout) is on its way out: later PDUs are ignored. */
    private boolean closing;
    private ByteBuf loginText;
    private long isid;
    private boolean fullFeature;
    private ScheduledFuture<?> loginTimer;
    /** A login request waits for the CHAP failure throttle: nothing else is read meanwhile. */
    private boolean loginDeferred;

    // ---- session
    private NegotiatedParameters params;
    private IscsiTargetDefinition target;
    private String nexus;
    private boolean registered;
    private int tsih;
    private int statSn;
    private int expCmdSn;
    private int maxCmdSn;
    private final IntObjectHashMap<IscsiTask> tasksByItt = new IntObjectHashMap<>();
    private final IntObjectHashMap<IscsiTask> tasksByTtt = new IntObjectHashMap<>();
    private int lastTtt;
    private int executing;
    /** Immediate commands in {@link #tasksByItt}: the CmdSN window does not bound them, this count does. */
    private int immediateTasks;
    /** Data-In bytes this session holds of the server's {@link DataInBudget}. */
    private long dataInHeld;
    /** Reads waiting for Data-In room, in arrival order; the socket is not read while any waits. */
    private final ArrayDeque<IscsiTask> waitingForDataIn = new ArrayDeque<>();
    private int pendingLogoutItt;
    private boolean logoutPending;
    private boolean draining;
    /** The target asked the initiator to log out and gives it until the drain grace ends. */
    private boolean awaitingRequestedLogout;
    private Promise<Void> drained;
    private ByteBuf pendingTextResponse;
    private int pendingTextTtt;

    // ---- liveness
    private long lastReceiveNanos;
    private boolean pingOutstanding;
    private ScheduledFuture<?> nopTimer;

    IscsiConnection(ServerContext server, PduDecoder decoder, PduEncoder encoder) {
        this.server = server;
        this.decoder = decoder;
        this.encoder = encoder;
    }

    ScsiCommandRouter router() {
        return target.router();
    }

    WriteBufferBudget writeBuffers() {
        return server.writeBuffers;
    }

    EventLoop eventLoop() {
        return ctx.channel().eventLoop();
    }

    // ------------------------------------------------------------------ channel lifecycle

    @Override
    public void handlerAdded(ChannelHandlerContext context) {
        this.ctx = context;
    }

    @Override
    public void channelActive(ChannelHandlerContext context) {
        server.connections.add(this);
        if (server.connections.size() > server.settings.maxConnections()) {
            server.connectionNoise.warn("{}: closed at once: {} connections are served already (server.max_connections)",
                    remote(), server.settings.maxConnections());
            closing = true;
            context.close();
            return;
        }
        login = new LoginNegotiator(server.settings, server::target);
        lastReceiveNanos = ctx.executor().ticker().nanoTime();
        long timeoutMillis = server.settings.loginTimeout().toMillis();
        loginTimer = context.executor().schedule(this::loginTimedOut, timeoutMillis, TimeUnit.MILLISECONDS);
        context.fireChannelActive();
    }

    private void loginTimedOut() {
        if (!fullFeature) {
            log.info("{}: login not completed within {}; closing", remote(), server.settings.loginTimeout());
            ctx.close();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext context) {
        cancel(loginTimer);
        cancel(nopTimer);
        if (loginText != null) {
            loginText.release();
            loginText = null;
        }
        if (pendingTextResponse != null) {
            pendingTextResponse.release();
            pendingTextResponse = null;
        }
        dropWaitingReads();
        server.dataIn.forget(this);
        List<IscsiTask> tasks = new ArrayList<>(tasksByItt.values());
        for (IscsiTask task : tasks) {
            task.aborted = true;
            if (task.state == IscsiTask.State.COLLECTING_DATA) {
                forget(task);
                task.releaseBuffers();
            }
        }
        if (registered && server.sessions.unregister(nexus, this)) {
            target.router().nexusRemoved(nexus);
            log.info("{}: session {} ended", remote(), nexus);
        }
        registered = false;
        server.connections.remove(this);
        completeDrainIfIdle();
        context.fireChannelInactive();
    }

    /**
     * Back-pressure: while the socket cannot take more (an initiator reading slowly), stop reading
     * new commands so queued Data-In cannot grow without bound.
     */
    @Override
    public void channelWritabilityChanged(ChannelHandlerContext context) {
        updateAutoRead();
        context.fireChannelWritabilityChanged();
    }

    /** Reads the socket only while it can take our answers and no read waits for Data-In room. */
    private void updateAutoRead() {
        ctx.channel().config().setAutoRead(ctx.channel().isWritable() && waitingForDataIn.isEmpty() && !loginDeferred);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
        // any client can cause these at will (a reset, a malformed stream): they must not flood the log
        server.connectionNoise.warn("{}: closing the connection after an error: {}", remote(), cause.toString());
        context.close();
    }

    // ------------------------------------------------------------------ inbound dispatch

    @Override
    public void channelRead(ChannelHandlerContext context, Object msg) {
        if (!(msg instanceof IscsiPdu)) {
            context.fireChannelRead(msg);
            return;
        }
        IscsiPdu pdu = (IscsiPdu) msg;
        try {
            lastReceiveNanos = ctx.executor().ticker().nanoTime();
            pingOutstanding = false;
            if (closing) {
                return;
            } else if (!fullFeature) {
                loginPhase(pdu);
            } else if (pdu.rejectReason() != 0) {
                sendReject(pdu.header(), pdu.rejectReason());
                if (pdu.rejectReason() == Bhs.REJECT_DATA_DIGEST_ERROR) {
                    // ErrorRecoveryLevel 0 has no way to recover the lost data: end the session
                    ctx.flush();
                    ctx.close();
                }
            } else {
                fullFeaturePhase(pdu);
            }
        } finally {
            pdu.release();
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext context) {
        context.flush();
    }

    private void fullFeaturePhase(IscsiPdu pdu) {
        ByteBuf h = pdu.header();
        switch (pdu.opcode()) {
            case Bhs.OP_SCSI_COMMAND:
                if (login.discovery()) {
                    sendReject(h, Bhs.REJECT_PROTOCOL_ERROR);
                } else if (acceptCmdSn(h)) {
                    scsiCommand(h, pdu.data());
                }
                break;
            case Bhs.OP_DATA_OUT:
                dataOut(h, pdu.data());
                break;
            case Bhs.OP_NOP_OUT:
                if (acceptCmdSn(h)) {
                    nopOut(h, pdu.data());
                }
                break;
            case Bhs.OP_TASK_MGMT_REQUEST:
                if (login.discovery()) {
                    sendReject(h, Bhs.REJECT_PROTOCOL_ERROR);
                } else if (acceptCmdSn(h)) {
                    taskManagement(h);
                }
                break;
            case Bhs.OP_TEXT_REQUEST:
                if (acceptCmdSn(h)) {
                    text(h, pdu.data());
                }
                break;
            case Bhs.OP_LOGOUT_REQUEST:
                if (acceptCmdSn(h)) {
                    logout(h);
                }
                break;
            case Bhs.OP_LOGIN_REQUEST:
                sendReject(h, Bhs.REJECT_PROTOCOL_ERROR);
                break;
            case Bhs.OP_SNACK_REQUEST:
                // ErrorRecoveryLevel 0: no SNACK support
                sendReject(h, Bhs.REJECT_PROTOCOL_ERROR);
                break;
            default:
                sendReject(h, Bhs.REJECT_COMMAND_NOT_SUPPORTED);
                break;
        }
    }

    // ------------------------------------------------------------------ login

    private void loginPhase(IscsiPdu pdu) {
        ByteBuf h = pdu.header();
        if (loginDeferred) {
            // the initiator must wait for the answer to its request before it sends another
            closing = true;
            ctx.close();
            return;
        }
        if (pdu.rejectReason() != 0 || pdu.opcode() != Bhs.OP_LOGIN_REQUEST) {
            // RFC 7143 section 6.1: anything but a Login Request during login ends the connection; in
            // the middle of CHAP it is a failed authentication, which the failure throttle counts
            log.info("{}: opcode 0x{} during login; rejecting the login", remote(), Integer.toHexString(pdu.opcode()));
            boolean inChap = login.awaitsChapResponse();
            if (inChap) {
                chapVerdict(true, false);
            }
            sendLoginResponse(h, 0, inChap ? LoginNegotiator.STATUS_AUTHENTICATION_FAILURE
                    : LoginNegotiator.STATUS_INVALID_DURING_LOGIN, null, 0, 0);
            closeAfterFlush();
            return;
        }
        int flags = Bhs.flags(h);
        boolean continues = (flags & 0x40) != 0;
        int currentStage = (flags >> 2) & 3;
        if (!loginStarted) {
            // first request of the connection: sequence numbers start here
            loginStarted = true;
            isid = h.getLong(Bhs.OFF_LUN) >>> 16;
            statSn = h.getInt(Bhs.OFF_EXP_STAT_SN);
            expCmdSn = Bhs.cmdSn(h);
            maxCmdSn = expCmdSn + server.settings.queueDepth() - 1;
        }
        int requestTsih = h.getUnsignedShort(14);
        if (requestTsih != 0) {
            // adding a connection to an existing session needs MaxConnections > 1
            sendLoginResponse(h, 0, LoginNegotiator.STATUS_SESSION_DOES_NOT_EXIST, null, currentStage, 0);
            closeAfterFlush();
            return;
        }
        if (pdu.data().isReadable()) {
            if (loginText == null) {
                loginText = ctx.alloc().heapBuffer(pdu.data().readableBytes());
            }
            if (loginText.readableBytes() + pdu.data().readableBytes() > 64 * 1024) {
                sendLoginResponse(h, 0, LoginNegotiator.STATUS_INITIATOR_ERROR, null, currentStage, 0);
                closeAfterFlush();
                return;
            }
            loginText.writeBytes(pdu.data(), pdu.data().readerIndex(), pdu.data().readableBytes());
        }
        if (continues) {
            // the initiator's text continues in the next request: acknowledge with an empty response
            sendLoginResponse(h, currentStage << 2, LoginNegotiator.STATUS_SUCCESS, null, currentStage, 0);
            return;
        }
        Set<String> repeated = new HashSet<>();
        Map<String, String> keys = loginText == null ? Map.of() : TextParameters.parse(loginText, repeated);
        if (loginText != null) {
            loginText.release();
            loginText = null;
        }
        if (!repeated.isEmpty()) {
            // RFC 7143 section 6.2: a key declared twice is a negotiation error
            refuseLogin(h, login.awaitsChapResponse() ? LoginNegotiator.STATUS_AUTHENTICATION_FAILURE
                    : LoginNegotiator.STATUS_INITIATOR_ERROR, currentStage, "key declared twice: " + repeated);
            return;
        }
        processLoginRequest(h, keys);
    }

    /**
     * Answers one whole login request. A request that answers a CHAP challenge first claims its
     * turn from the server's failure throttle, and waits (reading nothing) while its source address
     * or initiator name is penalized for recent failures.
     */
    private void processLoginRequest(ByteBuf h, Map<String, String> keys) {
        int flags = Bhs.flags(h);
        boolean transit = (flags & 0x80) != 0;
        int currentStage = (flags >> 2) & 3;
        int nextStage = flags & 3;
        boolean verifiesChap = login.awaitsChapResponse();
        if (verifiesChap) {
            long wait = server.authFailures.tryClaim(remoteHost(), String.valueOf(login.initiatorName()), System.nanoTime());
            if (wait > 0) {
                deferLogin(h.copy(h.readerIndex(), Bhs.LENGTH), keys, wait);
                return;
            }
        }
        LoginNegotiator.Step step = login.process(currentStage, transit, nextStage, h.getByte(3) & 0xff, keys);
        if (verifiesChap) {
            chapVerdict(step.failed() || login.chapAuthenticated(), login.chapAuthenticated());
        }
        if (step.failed()) {
            refuseLogin(h, step.status, currentStage, null);
            return;
        }
        if (TextParameters.encodedLength(step.keys) > PduDecoder.LOGIN_MAX_DATA_SEGMENT) {
            // the answer must fit the 8192 bytes an initiator takes during login: only a request
            // stuffed with keys nobody knows produces more
            refuseLogin(h, LoginNegotiator.STATUS_INITIATOR_ERROR, currentStage, "answer would exceed 8192 bytes");
            return;
        }
        int responseFlags = (step.transit ? 0x80 : 0) | currentStage << 2 | (step.transit ? step.nextStage : 0);
        if (step.enteredFullFeature()) {
            enterFullFeature();
        }
        sendLoginResponse(h, responseFlags, LoginNegotiator.STATUS_SUCCESS, step.keys, currentStage, tsih);
        if (fullFeature) {
            ctx.flush();
            encoder.enableDigests(params.headerDigest, params.dataDigest);
            decoder.enableDigests(params.headerDigest, params.dataDigest);
            decoder.maxDataSegmentLength(params.targetMaxRecvDataSegmentLength);
        }
    }

    private void refuseLogin(ByteBuf h, int status, int currentStage, String why) {
        log.info("{}: login of {} refused with status 0x{}{}", remote(), login.initiatorName(),
                String.format("%04x", status), why == null ? "" : " (" + why + ")");
        sendLoginResponse(h, 0, status, null, currentStage, 0);
        closeAfterFlush();
    }

    private void deferLogin(ByteBuf header, Map<String, String> keys, long waitNanos) {
        loginDeferred = true;
        updateAutoRead();
        ctx.executor().schedule(() -> {
            loginDeferred = false;
            try {
                if (ctx.channel().isActive() && !closing) {
                    updateAutoRead();
                    processLoginRequest(header, keys);
                    ctx.flush();
                }
            } finally {
                header.release();
            }
        }, waitNanos, TimeUnit.NANOSECONDS);
    }

    private void chapVerdict(boolean verified, boolean succeeded) {
        server.authFailures.verdict(remoteHost(), String.valueOf(login.initiatorName()), verified, succeeded,
                System.nanoTime());
    }

    private String remoteHost() {
        SocketAddress address = remote();
        return address instanceof InetSocketAddress
                ? ((InetSocketAddress) address).getAddress().getHostAddress() : String.valueOf(address);
    }

    private void enterFullFeature() {
        fullFeature = true;
        cancel(loginTimer);
        params = login.parameters();
        target = login.target();
        tsih = server.sessions.allocateTsih();
        if (target != null) {
            nexus = login.initiatorName() + ",i,0x" + String.format("%012x", isid) + "," + target.iqn()
                    + ",t,0x" + String.format("%04x", server.settings.targetPortalGroupTag());
            IscsiConnection replaced = server.sessions.register(nexus, this);
            registered = true;
            if (replaced != null) {
                log.info("{}: session reinstatement for {}: closing the old session", remote(), nexus);
                target.router().nexusRemoved(nexus);
                replaced.closeForReinstatement();
            }
            target.router().nexusAdded(nexus);
            log.info("{}: session {} logged in (MaxRecvDataSegmentLength {}, MaxBurstLength {}, ImmediateData {}, InitialR2T {})",
                    remote(), nexus, params.initiatorMaxRecvDataSegmentLength, params.maxBurstLength,
                    params.immediateData, params.initialR2T);
        } else {
            log.debug("{}: discovery session of {}", remote(), login.initiatorName());
        }
        long interval = server.settings.nopInInterval().toMillis();
        if (interval > 0) {
            nopTimer = ctx.executor().scheduleAtFixedRate(this::checkLiveness, interval, interval, TimeUnit.MILLISECONDS);
        }
    }

    /**
     * TARGET COLD RESET (RFC 7143 section 11.5.1): after the response, the target closes every
     * connection of every session to this target, this one included (after its response is flushed).
     */
    private void closeTargetSessionsForColdReset() {
        log.info("{}: TARGET COLD RESET of {}: closing all its sessions", remote(), target.iqn());
        for (IscsiConnection other : server.sessions.connections()) {
            if (other != this && other.target == target) {
                other.ctx.executor().execute(other.ctx::close);
            }
        }
        closeAfterFlush();
    }

    /** Called on another session's event loop: that session replaced this one. */
    void closeForReinstatement() {
        ctx.executor().execute(() -> {
            registered = false;
            ctx.close();
        });
    }

    private void sendLoginResponse(ByteBuf request, int flags, int status, Map<String, String> keys, int currentStage, int sessionHandle) {
        ByteBuf data = null;
        if (keys != null && !keys.isEmpty()) {
            data = ctx.alloc().buffer(256);
            TextParameters.write(keys, data);
        }
        ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        int responseFlags = status == LoginNegotiator.STATUS_SUCCESS ? flags : currentStage << 2;
        Bhs.begin(h, Bhs.OP_LOGIN_RESPONSE, responseFlags, data == null ? 0 : data.readableBytes());
        h.setBytes(8, request, 8, 6); // ISID
        h.setShort(14, sessionHandle);
        h.setInt(Bhs.OFF_ITT, Bhs.itt(request));
        h.setInt(Bhs.OFF_STAT_SN, statSn++);
        h.setInt(Bhs.OFF_EXP_CMD_SN, expCmdSn);
        h.setInt(Bhs.OFF_MAX_CMD_SN, maxCmdSn);
        h.setShort(36, status);
        ctx.write(IscsiPdu.of(h, data), ctx.voidPromise());
    }

    private void closeAfterFlush() {
        closing = true;
        ctx.writeAndFlush(ctx.alloc().buffer(0)).addListener(ChannelFutureListener.CLOSE);
    }

    // ------------------------------------------------------------------ CmdSN window

    /**
     * Checks a non-immediate PDU's CmdSN against the window and consumes its slot; out-of-window
     * PDUs are dropped silently (RFC 7143 section 4.2.2.1). Immediate PDUs pass unchecked.
     */
    private boolean acceptCmdSn(ByteBuf h) {
        if (Bhs.immediate(h)) {
            return true;
        }
        int cmdSn = Bhs.cmdSn(h);
        if (Bhs.snLessThan(cmdSn, expCmdSn) || Bhs.snLessThan(maxCmdSn, cmdSn)) {
            log.debug("{}: CmdSN {} outside window [{}, {}]; dropped", remote(), cmdSn, expCmdSn, maxCmdSn);
            return false;
        }
        // a gap can only come from an initiator skipping numbers: those slots count as used and returned
        maxCmdSn += cmdSn - expCmdSn;
        expCmdSn = cmdSn + 1;
        return true;
    }

    /** A non-immediate command finished: its CmdSN slot returns to the window. */
    private void retire(boolean immediate) {
        if (!immediate) {
            maxCmdSn++;
        }
    }

    // ------------------------------------------------------------------ SCSI commands

    private void scsiCommand(ByteBuf h, ByteBuf data) {
        boolean immediate = Bhs.immediate(h);
        int flags = Bhs.flags(h);
        int itt = Bhs.itt(h);
        int edtl = h.getInt(Bhs.OFF_EXPECTED_LENGTH);
        boolean readBit = (flags & 0x40) != 0;
        boolean writeBit = (flags & 0x20) != 0;
        int immediateLength = data.readableBytes();
        if (draining || logoutPending) {
            retire(immediate);
            sendReject(h, Bhs.REJECT_WAITING_FOR_LOGOUT);
            return;
        }
        if (tasksByItt.containsKey(itt)) {
            retire(immediate);
            sendReject(h, Bhs.REJECT_TASK_IN_PROGRESS);
            return;
        }
        if (immediate && immediateTasks >= server.settings.queueDepth()) {
            // the CmdSN window does not bound immediate commands: as many as the window holds, no more
            sendStatusOnly(h, ScsiCommand.TASK_SET_FULL);
            return;
        }
        if (edtl < 0 || writeBit && edtl > MAX_WRITE_TRANSFER
                || immediateLength > 0 && (!writeBit || !params.immediateData || immediateLength > edtl
                        || immediateLength > params.firstBurstLength)) {
            retire(immediate);
            sendReject(h, immediateLength > 0 ? Bhs.REJECT_PROTOCOL_ERROR : Bhs.REJECT_INVALID_PDU_FIELD);
            return;
        }
        byte[] cdb = readCdb(h);
        if (cdb == null) {
            retire(immediate);
            sendReject(h, Bhs.REJECT_INVALID_PDU_FIELD);
            return;
        }
        boolean expectsData = writeBit && edtl > 0;
        int ttt = expectsData ? nextTargetTransferTag() : Bhs.RESERVED_TAG;
        IscsiTask task = new IscsiTask(this, itt, ttt, Bhs.lunField(h), cdb, edtl, readBit, writeBit, flags & 0x07,
                Bhs.cmdSn(h), immediate);
        tasksByItt.put(itt, task);
        if (immediate) {
            immediateTasks++;
        }
        if (!expectsData) {
            dispatch(task);
            return;
        }
        tasksByTtt.put(ttt, task);
        boolean finalBit = (flags & Bhs.FINAL_BIT) != 0;
        int firstBurst = Math.min(params.firstBurstLength, edtl);
        task.unsolicitedPending = !finalBit && !params.initialR2T && immediateLength < firstBurst;
        task.dataEnd = immediateLength;
        task.nextR2tOffset = immediateLength;
        int unsolicitedLength = task.unsolicitedPending ? firstBurst : immediateLength;
        WriteBufferBudget budget = server.writeBuffers;
        if (budget.tryReserve(task)) {
            task.dataOut = newWriteBuffer(edtl);
        } else if (unsolicitedLength > 0 && !budget.tryHoldUnsolicited(task, unsolicitedLength)) {
            // the initiator may send this data before any R2T: with no room for it, refuse the command
            budget.countRefusal();
            task.refusedForBudget = true;
            log.debug("{}: write ITT 0x{} of {} bytes refused with TASK SET FULL: write buffer budget exhausted",
                    remote(), Integer.toHexString(itt), edtl);
        } else {
            task.dataOut = unsolicitedLength > 0 ? newWriteBuffer(unsolicitedLength) : null;
            // a write carried whole by its unsolicited data needs nothing more from the budget
            task.waitingForBudget = unsolicitedLength < edtl;
        }
        if (task.dataOut != null && immediateLength > 0) {
            task.dataOut.setBytes(0, data, data.readerIndex(), immediateLength);
        }
        if (task.waitingForBudget && budget.reserveOrQueue(task)) {
            startGrantedWrite(task);
        } else {
            continueWrite(task);
        }
    }

    private ByteBuf newWriteBuffer(int length) {
        return WriteBuffers.allocate(ctx.alloc(), length);
    }

    /** Any thread: the budget granted a queued task its buffer; the write continues on the event loop. */
    void writeBufferGranted(IscsiTask task) {
        try {
            eventLoop().execute(() -> startGrantedWrite(task));
        } catch (RejectedExecutionException e) {
            server.writeBuffers.release(task);
        }
    }

    /** Moves the unsolicited data into the whole buffer and starts the R2Ts. */
    private void startGrantedWrite(IscsiTask task) {
        if (task.aborted || task.state != IscsiTask.State.COLLECTING_DATA || !ctx.channel().isActive()) {
            // aborted while the grant was on its way: its release may have run before the grant
            server.writeBuffers.release(task);
            return;
        }
        ByteBuf whole = newWriteBuffer(task.expectedTransferLength);
        ByteBuf unsolicited = task.dataOut;
        if (unsolicited != null) {
            whole.setBytes(0, unsolicited, 0, unsolicited.capacity());
            unsolicited.release();
            server.writeBuffers.releaseUnsolicited(task);
        }
        task.dataOut = whole;
        task.waitingForBudget = false;
        continueWrite(task);
        ctx.flush();
    }

    /** The CDB: 16 bytes from the BHS, more from an Extended CDB AHS (type 1); null if malformed. */
    private static byte[] readCdb(ByteBuf h) {
        int ahsEnd = h.readableBytes();
        int offset = Bhs.LENGTH;
        while (offset + 4 <= ahsEnd) {
            int length = h.getUnsignedShort(offset);
            int type = h.getByte(offset + 2) & 0xff;
            if (offset + 3 + length > ahsEnd) {
                return null;
            }
            if (type == 1 && length > 1) {
                byte[] cdb = new byte[16 + length - 1];
                h.getBytes(32, cdb, 0, 16);
                h.getBytes(offset + 4, cdb, 16, length - 1);
                return cdb;
            }
            offset += (3 + length + 3) & ~3;
        }
        byte[] cdb = new byte[16];
        h.getBytes(32, cdb);
        return cdb;
    }

    private int nextTargetTransferTag() {
        do {
            lastTtt++;
        } while (lastTtt == Bhs.RESERVED_TAG || tasksByTtt.containsKey(lastTtt));
        return lastTtt;
    }

    private void dataOut(ByteBuf h, ByteBuf data) {
        int ttt = Bhs.ttt(h);
        IscsiTask task = ttt == Bhs.RESERVED_TAG ? tasksByItt.get(Bhs.itt(h)) : tasksByTtt.get(ttt);
        if (task == null || task.state != IscsiTask.State.COLLECTING_DATA) {
            // data for a task that was aborted or already failed: nothing to do
            log.debug("{}: Data-Out for unknown task ITT 0x{} TTT 0x{} dropped", remote(),
                    Integer.toHexString(Bhs.itt(h)), Integer.toHexString(ttt));
            return;
        }
        int offset = h.getInt(Bhs.OFF_BUFFER_OFFSET);
        int length = data.readableBytes();
        int end = offset + length;
        boolean unsolicited = ttt == Bhs.RESERVED_TAG;
        boolean finalBit = Bhs.finalBit(h);
        if (task.itt != Bhs.itt(h) || offset < 0 || (long) offset + length > task.expectedTransferLength
                || unsolicited && (!task.unsolicitedPending || end > params.firstBurstLength)
                || !unsolicited && (task.outstandingR2ts == 0 || end > task.nextR2tOffset)) {
            // outside the buffer, unsolicited beyond the first burst, or solicited data no R2T asked for
            dataPhaseError(task, "Data-Out outside what the command allows", offset, length);
            sendReject(h, Bhs.REJECT_PROTOCOL_ERROR);
            return;
        }
        if (h.getInt(Bhs.OFF_DATA_SN) != task.expectedDataSn) {
            // ErrorRecoveryLevel 0 cannot ask for the PDU again: the command fails, the session lives on
            dataPhaseError(task, "Data-Out DataSN " + h.getInt(Bhs.OFF_DATA_SN) + " where " + task.expectedDataSn
                    + " was due", offset, length);
        }
        if (offset != task.dataEnd) {
            dataPhaseError(task, "Data-Out out of order: " + task.dataEnd + " was due", offset, length);
        } else if (!unsolicited && finalBit != (end == task.burstEnd(offset, params.maxBurstLength))) {
            dataPhaseError(task, "Data-Out F bit not at the end of its R2T burst", offset, length);
        }
        if (!task.dataPhaseError) {
            if (task.dataOut != null) {
                // a command refused TASK SET FULL has no buffer: its unsolicited data is only counted
                task.dataOut.setBytes(offset, data, data.readerIndex(), length);
            }
            task.dataEnd = end;
        }
        task.lastDataOutNanos = lastReceiveNanos;
        task.expectedDataSn++;
        if (finalBit) {
            task.expectedDataSn = 0;
            if (unsolicited) {
                task.unsolicitedPending = false;
                task.nextR2tOffset = Math.max(task.nextR2tOffset, end);
            } else {
                task.outstandingR2ts--;
            }
        }
        continueWrite(task);
    }

    /**
     * The command's data did not arrive exactly as negotiated. ErrorRecoveryLevel 0 cannot ask for it
     * again: the data phase runs to its end and the command is answered DATA PHASE ERROR, never run.
     */
    private void dataPhaseError(IscsiTask task, String what, int offset, int length) {
        if (!task.dataPhaseError) {
            log.info("{}: {} (ITT 0x{}, offset {}, length {}); the command will fail", remote(), what,
                    Integer.toHexString(task.itt), offset, length);
            task.dataPhaseError = true;
        }
    }

    /** Issues R2Ts while the window allows, or dispatches the command once every byte is in. */
    private void continueWrite(IscsiTask task) {
        if (task.unsolicitedPending || task.waitingForBudget) {
            return;
        }
        if (task.refusedForBudget || task.dataPhaseOver()) {
            dispatch(task);
            return;
        }
        if (task.firstR2tOffset < 0) {
            task.firstR2tOffset = task.nextR2tOffset;
        }
        while (task.outstandingR2ts < params.maxOutstandingR2T && task.nextR2tOffset < task.expectedTransferLength) {
            int length = Math.min(params.maxBurstLength, task.expectedTransferLength - task.nextR2tOffset);
            ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
            Bhs.begin(h, Bhs.OP_R2T, Bhs.FINAL_BIT, 0);
            h.setLong(Bhs.OFF_LUN, task.lunField);
            h.setInt(Bhs.OFF_ITT, task.itt);
            h.setInt(Bhs.OFF_TTT, task.targetTransferTag);
            h.setInt(Bhs.OFF_STAT_SN, statSn);
            h.setInt(Bhs.OFF_EXP_CMD_SN, expCmdSn);
            h.setInt(Bhs.OFF_MAX_CMD_SN, maxCmdSn);
            h.setInt(Bhs.OFF_DATA_SN, task.r2tSn++);
            h.setInt(Bhs.OFF_BUFFER_OFFSET, task.nextR2tOffset);
            h.setInt(Bhs.OFF_RESIDUAL, length);
            ctx.write(IscsiPdu.of(h, null), ctx.voidPromise());
            task.nextR2tOffset += length;
            task.outstandingR2ts++;
            task.lastDataOutNanos = ctx.executor().ticker().nanoTime();
        }
    }

    private void dispatch(IscsiTask task) {
        if (task.targetTransferTag != Bhs.RESERVED_TAG) {
            tasksByTtt.remove(task.targetTransferTag);
        }
        task.command = new ScsiCommand(nexus, task.lun, task.cdb, task.expectedTransferLength, task.readBit,
                task.writeBit, task.taskAttribute, task.dataOut, ctx.alloc());
        task.state = IscsiTask.State.EXECUTING;
        executing++;
        if (task.dataOut != null && task.dataEnd != task.expectedTransferLength) {
            dataPhaseError(task, "write data incomplete at the end of its data phase", task.dataEnd, 0);
        }
        if (task.dataPhaseError || task.refusedForBudget) {
            if (task.dataPhaseError) {
                // the data cannot be trusted: never executed, answered ABORTED COMMAND / DATA PHASE ERROR
                task.command.checkCondition(DATA_PHASE_ERROR_SENSE.clone());
            } else {
                task.command.completeWithStatus(ScsiCommand.TASK_SET_FULL);
            }
            task.state = IscsiTask.State.DONE;
            taskExecuted(task);
            return;
        }
        if (task.readBit && task.expectedTransferLength > 0
                && (!waitingForDataIn.isEmpty() || !reserveDataIn(task))) {
            waitingForDataIn.add(task);
            updateAutoRead();
            return;
        }
        execute(task);
    }

    private void execute(IscsiTask task) {
        try {
            server.ioExecutor.execute(task);
        } catch (RejectedExecutionException e) {
            task.command.completeWithStatus(ScsiCommand.BUSY);
            task.state = IscsiTask.State.DONE;
            taskExecuted(task);
        }
    }

    /** Holds the read's Expected Data Transfer Length of the Data-In budget until its data is on the socket. */
    private boolean reserveDataIn(IscsiTask task) {
        if (!server.dataIn.tryReserve(this, dataInHeld, task.expectedTransferLength)) {
            return false;
        }
        dataInHeld += task.expectedTransferLength;
        task.dataInHeld = task.expectedTransferLength;
        return true;
    }

    /** Returns a task's Data-In bytes; then reads waiting here may go. */
    private void releaseDataIn(IscsiTask task) {
        int bytes = task.dataInHeld;
        if (bytes == 0) {
            return;
        }
        task.dataInHeld = 0;
        dataInHeld -= bytes;
        server.dataIn.release(bytes);
        startWaitingReads();
    }

    /** Any thread: the server-wide Data-In budget has room again. */
    void dataInBudgetReturned() {
        try {
            eventLoop().execute(this::startWaitingReads);
        } catch (RejectedExecutionException e) {
            // the event loop is shutting down: nothing waits any more
        }
    }

    private void startWaitingReads() {
        while (!waitingForDataIn.isEmpty() && ctx.channel().isActive()) {
            if (!reserveDataIn(waitingForDataIn.peek())) {
                break;
            }
            execute(waitingForDataIn.poll());
        }
        updateAutoRead();
    }

    /** Reads that never started: they end without an answer (logout, connection loss). */
    private void dropWaitingReads() {
        IscsiTask task;
        while ((task = waitingForDataIn.poll()) != null) {
            task.aborted = true;
            executing--;
            forget(task);
            retire(task.immediate);
            task.releaseBuffers();
        }
    }

    /** Back on the event loop after execution: answer, release, return the CmdSN slot. */
    void taskExecuted(IscsiTask task) {
        executing--;
        forget(task);
        retire(task.immediate);
        if (task.aborted || !ctx.channel().isActive()) {
            task.releaseBuffers();
            releaseDataIn(task);
        } else {
            sendResult(task);
            task.releaseBuffers();
            ctx.flush();
        }
        if (task.abortWaiter != null) {
            taskManagementTaskEnded(task.abortWaiter);
        }
        if (logoutPending && executing == 0) {
            sendLogoutResponse();
        }
        completeDrainIfIdle();
    }

    private void forget(IscsiTask task) {
        if (tasksByItt.remove(task.itt) != null && task.immediate) {
            immediateTasks--;
        }
        if (task.targetTransferTag != Bhs.RESERVED_TAG) {
            tasksByTtt.remove(task.targetTransferTag);
        }
    }

    /**
     * Data-In (split by the initiator's MaxRecvDataSegmentLength, F bit at every MaxBurstLength)
     * and the status: collapsed into the last Data-In for GOOD without sense, else a SCSI Response.
     */
    private void sendResult(IscsiTask task) {
        ScsiCommand cmd = task.command;
        ByteBuf dataIn = cmd.dataIn();
        int edtl = task.expectedTransferLength;
        int toSend = dataIn == null || !task.readBit ? 0 : Math.min(dataIn.readableBytes(), edtl);
        long commandLength = cmd.commandTransferLength();
        if (commandLength >= 0 && task.readBit) {
            toSend = (int) Math.min(toSend, commandLength);
        }
        int residualFlags = 0;
        long residual = 0;
        if (commandLength > edtl) {
            residualFlags = RESIDUAL_OVERFLOW;
            residual = commandLength - edtl;
        } else {
            long transferred = task.readBit ? toSend : Math.max(commandLength, 0);
            if (transferred < edtl) {
                residualFlags = RESIDUAL_UNDERFLOW;
                residual = edtl - transferred;
            }
        }
        int residualCount = (int) Math.min(residual, 0xffffffffL);
        boolean collapse = toSend > 0 && cmd.status() == ScsiCommand.GOOD && cmd.sense() == null;
        int dataSn = 0;
        int offset = 0;
        int segmentLimit = params.initiatorMaxRecvDataSegmentLength;
        while (offset < toSend) {
            int burstLeft = params.maxBurstLength - offset % params.maxBurstLength;
            int length = Math.min(Math.min(segmentLimit, toSend - offset), burstLeft);
            boolean last = offset + length == toSend;
            int flags = last || length == burstLeft ? Bhs.FINAL_BIT : 0;
            if (last && collapse) {
                flags |= DATA_IN_STATUS | residualFlags;
            }
            ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
            Bhs.begin(h, Bhs.OP_DATA_IN, flags, length);
            h.setLong(Bhs.OFF_LUN, task.lunField);
            h.setInt(Bhs.OFF_ITT, task.itt);
            h.setInt(Bhs.OFF_TTT, Bhs.RESERVED_TAG);
            if ((flags & DATA_IN_STATUS) != 0) {
                h.setByte(3, cmd.status());
                h.setInt(Bhs.OFF_STAT_SN, statSn++);
                h.setInt(Bhs.OFF_RESIDUAL, residualCount);
            }
            h.setInt(Bhs.OFF_EXP_CMD_SN, expCmdSn);
            h.setInt(Bhs.OFF_MAX_CMD_SN, maxCmdSn);
            h.setInt(Bhs.OFF_DATA_SN, dataSn++);
            h.setInt(Bhs.OFF_BUFFER_OFFSET, offset);
            ChannelPromise promise = last && collapse ? lastWritePromise(task) : ctx.voidPromise();
            ctx.write(IscsiPdu.of(h, dataIn.retainedSlice(dataIn.readerIndex() + offset, length)), promise);
            offset += length;
        }
        if (collapse) {
            return;
        }
        byte[] sense = cmd.sense();
        ByteBuf senseData = null;
        if (sense != null) {
            senseData = ctx.alloc().buffer(2 + sense.length);
            senseData.writeShort(sense.length);
            senseData.writeBytes(sense);
        }
        ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        Bhs.begin(h, Bhs.OP_SCSI_RESPONSE, Bhs.FINAL_BIT | residualFlags, senseData == null ? 0 : senseData.readableBytes());
        h.setByte(3, cmd.status());
        h.setInt(Bhs.OFF_ITT, task.itt);
        h.setInt(Bhs.OFF_STAT_SN, statSn++);
        h.setInt(Bhs.OFF_EXP_CMD_SN, expCmdSn);
        h.setInt(Bhs.OFF_MAX_CMD_SN, maxCmdSn);
        h.setInt(Bhs.OFF_DATA_SN, task.readBit ? dataSn : task.r2tSn);
        h.setInt(Bhs.OFF_RESIDUAL, residualCount);
        ctx.write(IscsiPdu.of(h, senseData), lastWritePromise(task));
    }

    /**
     * The promise of a command's last PDU: once it is written (or the connection failed it), every
     * Data-In of the command has left, so its bytes return to the Data-In budget.
     */
    private ChannelPromise lastWritePromise(IscsiTask task) {
        if (task.dataInHeld == 0) {
            return ctx.voidPromise();
        }
        ChannelPromise promise = ctx.newPromise();
        promise.addListener(written -> releaseDataIn(task));
        return promise;
    }

    /** A SCSI Response with only a status, for a command that is answered without ever becoming a task. */
    private void sendStatusOnly(ByteBuf request, int status) {
        ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        int edtl = request.getInt(Bhs.OFF_EXPECTED_LENGTH);
        Bhs.begin(h, Bhs.OP_SCSI_RESPONSE, Bhs.FINAL_BIT | (edtl > 0 ? RESIDUAL_UNDERFLOW : 0), 0);
        h.setByte(3, status);
        h.setInt(Bhs.OFF_ITT, Bhs.itt(request));
        h.setInt(Bhs.OFF_STAT_SN, statSn++);
        h.setInt(Bhs.OFF_EXP_CMD_SN, expCmdSn);
        h.setInt(Bhs.OFF_MAX_CMD_SN, maxCmdSn);
        h.setInt(Bhs.OFF_RESIDUAL, Math.max(edtl, 0));
        ctx.write(IscsiPdu.of(h, null), ctx.voidPromise());
    }

    // ------------------------------------------------------------------ NOP

    private void nopOut(ByteBuf h, ByteBuf data) {
        retire(Bhs.immediate(h));
        int itt = Bhs.itt(h);
        if (itt == Bhs.RESERVED_TAG) {
            return; // an answer to our ping, or a ping that wants no answer
        }
        ByteBuf echo = data.isReadable()
                ? data.retainedSlice(data.readerIndex(), Math.min(data.readableBytes(), params.initiatorMaxRecvDataSegmentLength))
                : null;
        sendNopIn(itt, Bhs.RESERVED_TAG, Bhs.lunField(h), echo, true);
    }

    private void sendNopIn(int itt, int ttt, long lunField, ByteBuf data, boolean advanceStatSn) {
        ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        Bhs.begin(h, Bhs.OP_NOP_IN, Bhs.FINAL_BIT, data == null ? 0 : data.readableBytes());
        h.setLong(Bhs.OFF_LUN, lunField);
        h.setInt(Bhs.OFF_ITT, itt);
        h.setInt(Bhs.OFF_TTT, ttt);
        h.setInt(Bhs.OFF_STAT_SN, advanceStatSn ? statSn++ : statSn);
        h.setInt(Bhs.OFF_EXP_CMD_SN, expCmdSn);
        h.setInt(Bhs.OFF_MAX_CMD_SN, maxCmdSn);
        ctx.write(IscsiPdu.of(h, data), ctx.voidPromise());
    }

    /**
     * Pings an initiator silent for a whole interval; drops it if it stays silent another one. Also
     * drops one that leaves an R2T unanswered for a whole interval: its write holds write buffer
     * budget other sessions may wait for, and ErrorRecoveryLevel 0 has no other way to end it.
     */
    private void checkLiveness() {
        long now = ctx.executor().ticker().nanoTime();
        long interval = server.settings.nopInInterval().toNanos();
        IscsiTask stalled = writeStalledSince(now - interval);
        if (stalled != null) {
            log.info("{}: no Data-Out for the R2T of write ITT 0x{} ({} bytes) within {}; closing", remote(),
                    Integer.toHexString(stalled.itt), stalled.expectedTransferLength, server.settings.nopInInterval());
            ctx.close();
            return;
        }
        long idle = now - lastReceiveNanos;
        if (idle < interval) {
            return;
        }
        if (pingOutstanding) {
            log.info("{}: no answer to NOP-In within {}; closing", remote(), server.settings.nopInInterval());
            ctx.close();
            return;
        }
        pingOutstanding = true;
        sendNopIn(Bhs.RESERVED_TAG, nextTargetTransferTag(), 0, null, false);
        ctx.flush();
    }

    /** A write with R2Ts outstanding whose last R2T or Data-Out is older than {@code deadline}, or null. */
    private IscsiTask writeStalledSince(long deadline) {
        for (IscsiTask task : tasksByTtt.values()) {
            if (task.outstandingR2ts > 0 && task.lastDataOutNanos - deadline <= 0) {
                return task;
            }
        }
        return null;
    }

    // ------------------------------------------------------------------ task management

    private void taskManagement(ByteBuf h) {
        boolean immediate = Bhs.immediate(h);
        retire(immediate);
        int function = Bhs.flags(h) & 0x7f;
        int itt = Bhs.itt(h);
        long lunField = Bhs.lunField(h);
        long lun = Bhs.decodeLun(lunField);
        PendingTaskManagement pending = new PendingTaskManagement(itt, function, lun);
        switch (function) {
            case TMF_ABORT_TASK: {
                IscsiTask task = tasksByItt.get(h.getInt(20));
                if (task == null) {
                    // RFC 7143 section 11.5.1: a RefCmdSN still inside the window names a command not
                    // received yet (complete); below the window the command already finished (no task)
                    int refCmdSn = h.getInt(32);
                    boolean notYetReceived = !Bhs.snLessThan(refCmdSn, expCmdSn) && !Bhs.snLessThan(maxCmdSn, refCmdSn);
                    sendTaskManagementResponse(itt, notYetReceived ? TMF_COMPLETE : TMF_TASK_DOES_NOT_EXIST);
                    return;
                }
                abort(task, pending);
                break;
            }
            case TMF_ABORT_TASK_SET:
            case TMF_LOGICAL_UNIT_RESET:
                if (!target.router().luns().contains(lun)) {
                    sendTaskManagementResponse(itt, TMF_LUN_DOES_NOT_EXIST);
                    return;
                }
                abortAll(pending, lun);
                break;
            case TMF_TARGET_WARM_RESET:
            case TMF_TARGET_COLD_RESET:
                abortAll(pending, -1);
                break;
            case TMF_TASK_REASSIGN:
                sendTaskManagementResponse(itt, TMF_REASSIGNMENT_NOT_SUPPORTED);
                return;
            default:
                sendTaskManagementResponse(itt, TMF_NOT_SUPPORTED);
                return;
        }
        if (pending.tasksRemaining == 0) {
            finishTaskManagement(pending);
        }
    }

    private void abortAll(PendingTaskManagement pending, long lun) {
        List<IscsiTask> tasks = new ArrayList<>(tasksByItt.values());
        for (IscsiTask task : tasks) {
            if (lun < 0 || task.lun == lun) {
                abort(task, pending);
            }
        }
    }

    /** Aborts a task now if it has not started, or marks it so its end answers {@code pending}. */
    private void abort(IscsiTask task, PendingTaskManagement pending) {
        if (task.aborted) {
            return;
        }
        task.aborted = true;
        boolean waitingRead = waitingForDataIn.remove(task);
        if (task.state == IscsiTask.State.COLLECTING_DATA || waitingRead) {
            if (waitingRead) {
                executing--;
                updateAutoRead();
            }
            forget(task);
            retire(task.immediate);
            task.releaseBuffers();
        } else {
            task.abortWaiter = pending;
            pending.tasksRemaining++;
        }
    }

    private void taskManagementTaskEnded(PendingTaskManagement pending) {
        if (--pending.tasksRemaining == 0) {
            finishTaskManagement(pending);
        }
    }

    /** Runs the SCSI-side reset off the event loop (it may wait for the device), then answers. */
    private void finishTaskManagement(PendingTaskManagement pending) {
        if (pending.function != TMF_LOGICAL_UNIT_RESET && pending.function != TMF_TARGET_WARM_RESET
                && pending.function != TMF_TARGET_COLD_RESET) {
            sendTaskManagementResponse(pending.itt, TMF_COMPLETE);
            ctx.flush();
            return;
        }
        ScsiCommandRouter router = target.router();
        String sessionNexus = nexus;
        try {
            server.ioExecutor.execute(() -> {
                try {
                    if (pending.function == TMF_LOGICAL_UNIT_RESET) {
                        router.lunReset(sessionNexus, pending.lun);
                    } else {
                        router.targetReset(sessionNexus);
                    }
                } finally {
                    eventLoop().execute(() -> {
                        if (ctx.channel().isActive()) {
                            sendTaskManagementResponse(pending.itt, TMF_COMPLETE);
                            ctx.flush();
                        }
                        if (pending.function == TMF_TARGET_COLD_RESET) {
                            closeTargetSessionsForColdReset();
                        }
                    });
                }
            });
        } catch (RejectedExecutionException e) {
            sendTaskManagementResponse(pending.itt, TMF_NOT_SUPPORTED);
        }
    }

    private void sendTaskManagementResponse(int itt, int response) {
        ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        Bhs.begin(h, Bhs.OP_TASK_MGMT_RESPONSE, Bhs.FINAL_BIT, 0);
        h.setByte(2, response);
        h.setInt(Bhs.OFF_ITT, itt);
        h.setInt(Bhs.OFF_STAT_SN, statSn++);
        h.setInt(Bhs.OFF_EXP_CMD_SN, expCmdSn);
        h.setInt(Bhs.OFF_MAX_CMD_SN, maxCmdSn);
        ctx.write(IscsiPdu.of(h, null), ctx.voidPromise());
    }

    // ------------------------------------------------------------------ text

    private void text(ByteBuf h, ByteBuf data) {
        retire(Bhs.immediate(h));
        int itt = Bhs.itt(h);
        int ttt = Bhs.ttt(h);
        if ((Bhs.flags(h) & 0x40) != 0) {
            // multi-PDU text requests are not needed by SendTargets; refuse rather than guess
            sendReject(h, Bhs.REJECT_COMMAND_NOT_SUPPORTED);
            return;
        }
        if (ttt != Bhs.RESERVED_TAG) {
            if (pendingTextResponse != null && ttt == pendingTextTtt) {
                sendTextChunk(itt, Bhs.lunField(h));
            } else {
                sendReject(h, Bhs.REJECT_INVALID_PDU_FIELD);
            }
            return;
        }
        if (pendingTextResponse != null) {
            pendingTextResponse.release();
            pendingTextResponse = null;
        }
        Map<String, String> keys = TextParameters.parse(data);
        ByteBuf response = ctx.alloc().buffer(256);
        for (Map.Entry<String, String> e : keys.entrySet()) {
            if (e.getKey().equals("SendTargets")) {
                sendTargets(e.getValue(), response);
            } else {
                TextParameters.write(Map.of(e.getKey(), "NotUnderstood"), response);
            }
        }
        pendingTextResponse = response;
        pendingTextTtt = nextTargetTransferTag();
        sendTextChunk(itt, Bhs.lunField(h));
    }

    /** Sends the next piece of the pending text response; C bit and a TTT while more follows. */
    private void sendTextChunk(int itt, long lunField) {
        ByteBuf all = pendingTextResponse;
        int length = Math.min(all.readableBytes(), params.initiatorMaxRecvDataSegmentLength);
        boolean last = length == all.readableBytes();
        ByteBuf chunk = all.readRetainedSlice(length);
        ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        Bhs.begin(h, Bhs.OP_TEXT_RESPONSE, last ? Bhs.FINAL_BIT : 0x40, length);
        h.setLong(Bhs.OFF_LUN, lunField);
        h.setInt(Bhs.OFF_ITT, itt);
        h.setInt(Bhs.OFF_TTT, last ? Bhs.RESERVED_TAG : pendingTextTtt);
        h.setInt(Bhs.OFF_STAT_SN, statSn++);
        h.setInt(Bhs.OFF_EXP_CMD_SN, expCmdSn);
        h.setInt(Bhs.OFF_MAX_CMD_SN, maxCmdSn);
        ctx.write(IscsiPdu.of(h, chunk), ctx.voidPromise());
        if (last) {
            all.release();
            pendingTextResponse = null;
        }
    }

    /** SendTargets=All (discovery: every target this initiator may use; normal: this one) or =IQN. */
    private void sendTargets(String which, ByteBuf out) {
        for (IscsiTargetDefinition t : server.targets()) {
            boolean wanted = "All".equals(which) ? target == null || target == t
                    : which.isEmpty() ? target == t : which.equals(t.iqn());
            if (wanted && t.allows(login.initiatorName())) {
                out.writeCharSequence("TargetName=" + t.iqn(), StandardCharsets.UTF_8);
                out.writeByte(0);
                for (String portal : portals()) {
                    out.writeCharSequence("TargetAddress=" + portal + "," + server.settings.targetPortalGroupTag(),
                            StandardCharsets.UTF_8);
                    out.writeByte(0);
                }
            }
        }
    }

    private List<String> portals() {
        if (!server.settings.portalAddresses().isEmpty()) {
            return server.settings.portalAddresses();
        }
        SocketAddress local = ctx.channel().localAddress();
        if (local instanceof InetSocketAddress) {
            InetSocketAddress inet = (InetSocketAddress) local;
            String host = inet.getAddress().getHostAddress();
            if (host.indexOf(':') >= 0) {
                int scope = host.indexOf('%');
                host = "[" + (scope >= 0 ? host.substring(0, scope) : host) + "]";
            }
            return List.of(host + ":" + inet.getPort());
        }
        return List.of();
    }

    // ------------------------------------------------------------------ logout and shutdown

    private void logout(ByteBuf h) {
        retire(Bhs.immediate(h));
        int reason = Bhs.flags(h) & 0x7f;
        pendingLogoutItt = Bhs.itt(h);
        if (reason != LOGOUT_CLOSE_SESSION && reason != LOGOUT_CLOSE_CONNECTION) {
            sendLogoutHeader(LOGOUT_CONNECTION_RECOVERY_NOT_SUPPORTED);
            return;
        }
        logoutPending = true;
        dropWaitingReads();
        updateAutoRead();
        // commands still waiting for Data-Out can never complete now
        for (IscsiTask task : new ArrayList<>(tasksByItt.values())) {
            if (task.state == IscsiTask.State.COLLECTING_DATA) {
                task.aborted = true;
                forget(task);
                retire(task.immediate);
                task.releaseBuffers();
            }
        }
        if (executing == 0) {
            sendLogoutResponse();
        }
    }

    private void sendLogoutResponse() {
        logoutPending = false;
        sendLogoutHeader(0);
        closeAfterFlush();
    }

    private void sendLogoutHeader(int response) {
        ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        Bhs.begin(h, Bhs.OP_LOGOUT_RESPONSE, Bhs.FINAL_BIT, 0);
        h.setByte(2, response);
        h.setInt(Bhs.OFF_ITT, pendingLogoutItt);
        h.setInt(Bhs.OFF_STAT_SN, statSn++);
        h.setInt(Bhs.OFF_EXP_CMD_SN, expCmdSn);
        h.setInt(Bhs.OFF_MAX_CMD_SN, maxCmdSn);
        h.setShort(40, params.defaultTime2Wait);
        h.setShort(42, params.defaultTime2Retain);
        ctx.write(IscsiPdu.of(h, null), ctx.voidPromise());
    }

    /**
     * Graceful close: stops taking commands, asks a logged-in initiator to log out (Async Message,
     * RFC 7143 section 11.9) and closes the connection once no command is executing and the
     * initiator logged out or half the drain timeout passed. The promise completes when the
     * connection is closed. Safe from any thread.
     */
    Promise<Void> drain() {
        Promise<Void> promise = ctx.executor().newPromise();
        ctx.executor().execute(() -> {
            draining = true;
            drained = promise;
            if (ctx.channel().isActive() && fullFeature && target != null && !closing) {
                long graceMillis = server.settings.drainTimeout().toMillis() / 2;
                sendAsyncLogoutRequest((int) Math.max(1, graceMillis / 1000));
                ctx.flush();
                awaitingRequestedLogout = true;
                ctx.executor().schedule(() -> {
                    awaitingRequestedLogout = false;
                    completeDrainIfIdle();
                }, graceMillis, TimeUnit.MILLISECONDS);
            }
            completeDrainIfIdle();
        });
        return promise;
    }

    private void sendAsyncLogoutRequest(int secondsToLogout) {
        ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        Bhs.begin(h, Bhs.OP_ASYNC_MESSAGE, Bhs.FINAL_BIT, 0);
        h.setInt(Bhs.OFF_ITT, Bhs.RESERVED_TAG);
        h.setInt(Bhs.OFF_STAT_SN, statSn++);
        h.setInt(Bhs.OFF_EXP_CMD_SN, expCmdSn);
        h.setInt(Bhs.OFF_MAX_CMD_SN, maxCmdSn);
        h.setByte(36, ASYNC_EVENT_LOGOUT_REQUEST);
        h.setShort(42, secondsToLogout);
        ctx.write(IscsiPdu.of(h, null), ctx.voidPromise());
    }

    private void completeDrainIfIdle() {
        if (!draining) {
            return;
        }
        if (!ctx.channel().isActive()) {
            drained.trySuccess(null);
        } else if (executing == 0 && !awaitingRequestedLogout) {
            ctx.flush();
            ctx.close().addListener(f -> drained.trySuccess(null));
        }
    }

    // ------------------------------------------------------------------ helpers

    private void sendReject(ByteBuf rejected, int reason) {
        ByteBuf copy = ctx.alloc().buffer(Bhs.LENGTH);
        copy.writeBytes(rejected, rejected.readerIndex(), Bhs.LENGTH);
        ByteBuf h = ctx.alloc().buffer(Bhs.LENGTH + Crc32cDigest.LENGTH);
        Bhs.begin(h, Bhs.OP_REJECT, Bhs.FINAL_BIT, Bhs.LENGTH);
        h.setByte(2, reason);
        h.setInt(Bhs.OFF_ITT, Bhs.RESERVED_TAG);
        h.setInt(Bhs.OFF_STAT_SN, statSn++);
        h.setInt(Bhs.OFF_EXP_CMD_SN, expCmdSn);
        h.setInt(Bhs.OFF_MAX_CMD_SN, maxCmdSn);
        ctx.write(IscsiPdu.of(h, copy), ctx.voidPromise());
    }

    private SocketAddress remote() {
        return ctx.channel().remoteAddress();
    }

    private static void cancel(ScheduledFuture<?> future) {
        if (future != null) {
            future.cancel(false);
        }
    }
}
