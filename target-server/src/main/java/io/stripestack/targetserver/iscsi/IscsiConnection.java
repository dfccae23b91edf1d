package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import io.stripestack.targetserver.scsi.CopyLimits;
import io.stripestack.targetserver.scsi.ScsiCommand;
import io.stripestack.targetserver.scsi.ScsiCommandRouter;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One iSCSI connection and, with MaxConnections 1, its session: the Netty handler that owns the
 * session's state and its tasks, and routes each PDU to the part that handles it.
 *
 * <ul>
 *   <li>{@link LoginPhase}: login requests until the full feature phase;</li>
 *   <li>here: SCSI Command PDUs become {@link IscsiTask}s, run on the server's I/O executor and are
 *       answered; NOP-In/Out and liveness; logout and drain;</li>
 *   <li>{@link DataOutCollector}: a write's Data-Out, R2Ts and write buffer budget;</li>
 *   <li>{@link DataInSender}: Data-In, responses and the Data-In budget;</li>
 *   <li>{@link TaskManagement}, {@link TextRequests}: their requests;</li>
 *   <li>{@link SequenceNumbers}: StatSN and the CmdSN window every response carries.</li>
 * </ul>
 *
 * <p>Concurrency: this object and every part above are owned by the channel's event loop. SCSI
 * commands run on the server's I/O executor ({@link IscsiTask}) and come back to the event loop to
 * answer; nothing here blocks. Other threads only call {@link #drain()},
 * {@link #closeForReinstatement()}, {@link #closeFromAnyThread()}, {@link #writeBufferGranted},
 * {@link #copyGranted} and {@link #dataInBudgetReturned}, which hop onto the event loop.
 */
final class IscsiConnection extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(IscsiConnection.class);

    private static final int ASYNC_EVENT_LOGOUT_REQUEST = 1;
    private static final int LOGOUT_CLOSE_SESSION = 0;
    private static final int LOGOUT_CLOSE_CONNECTION = 1;
    private static final int LOGOUT_CONNECTION_RECOVERY_NOT_SUPPORTED = 2;
    /** Largest Expected Data Transfer Length buffered for a write; above it the command is rejected. */
    static final int MAX_WRITE_TRANSFER = 64 << 20;

    private final ServerContext server;
    private final PduDecoder decoder;
    private final PduEncoder encoder;
    private final SequenceNumbers sequence = new SequenceNumbers();
    private ChannelHandlerContext ctx;
    private LoginPhase login;
    /** A final answer (failed login, logout) is on its way out: later PDUs are ignored. */
    private boolean closing;
    private boolean fullFeature;

    // ---- session (from the full feature phase on)
    private NegotiatedParameters params;
    private boolean discovery;
    private IscsiTargetDefinition target;
    private String nexus;
    private String initiatorName;
    private boolean registered;
    private DataOutCollector dataOut;
    private DataInSender dataIn;
    private TaskManagement taskManagement;
    private TextRequests text;
    private final IntObjectHashMap<IscsiTask> tasksByItt = new IntObjectHashMap<>();
    private final IntObjectHashMap<IscsiTask> tasksByTtt = new IntObjectHashMap<>();
    /** Write buffer bytes this session holds (guarded by the {@link WriteBufferBudget} monitor). */
    long writeBufferHeld;
    /** Bytes of the unsolicited allowance this session holds (guarded likewise). */
    long unsolicitedHeld;
    private int lastTtt;
    private int executing;
    /** Immediate commands in {@link #tasksByItt}: the CmdSN window does not bound them, this count does. */
    private int immediateTasks;
    private int pendingLogoutItt;
    private boolean logoutPending;
    private boolean draining;
    /** The target asked the initiator to log out and gives it until the drain grace ends. */
    private boolean awaitingRequestedLogout;
    private Promise<Void> drained;

    // ---- liveness
    private long lastReceiveNanos;
    private boolean pingOutstanding;
    private ScheduledFuture<?> nopTimer;

    // ---- header views, re-pointed at each PDU (see PduHeader)
    private final ScsiCommandHeader scsiCommandHeader = new ScsiCommandHeader();
    private final DataOutHeader dataOutHeader = new DataOutHeader();
    private final NopOutHeader nopOutHeader = new NopOutHeader();
    private final TaskManagementHeader taskManagementHeader = new TaskManagementHeader();
    private final TextRequestHeader textRequestHeader = new TextRequestHeader();
    private final LogoutRequestHeader logoutRequestHeader = new LogoutRequestHeader();
    private final NopInHeader nopInHeader = new NopInHeader();
    private final LogoutResponseHeader logoutResponseHeader = new LogoutResponseHeader();
    private final AsyncMessageHeader asyncMessageHeader = new AsyncMessageHeader();
    private final RejectHeader rejectHeader = new RejectHeader();

    IscsiConnection(ServerContext server, PduDecoder decoder, PduEncoder encoder) {
        this.server = server;
        this.decoder = decoder;
        this.encoder = encoder;
    }

    // ------------------------------------------------------------------ for the parts and tasks

    ScsiCommandRouter router() {
        return target.router();
    }

    WriteBufferBudget writeBuffers() {
        return server.writeBuffers;
    }

    EventLoop eventLoop() {
        return ctx.channel().eventLoop();
    }

    SequenceNumbers sequence() {
        return sequence;
    }

    DataInSender dataIn() {
        return dataIn;
    }

    IscsiTargetDefinition target() {
        return target;
    }

    /**
     * The logged-in initiator's name; null before login and in discovery sessions. Written on the event loop
     * before the session registers, so a thread that found this connection in {@link SessionRegistry} reads it.
     */
    String initiatorName() {
        return initiatorName;
    }

    /** The session's I_T nexus; null before login and in discovery sessions (published as the name is). */
    String nexus() {
        return nexus;
    }

    boolean closing() {
        return closing;
    }

    IscsiTask taskByItt(int itt) {
        return tasksByItt.get(itt);
    }

    IscsiTask taskByTtt(int ttt) {
        return tasksByTtt.get(ttt);
    }

    List<IscsiTask> tasksSnapshot() {
        return new ArrayList<>(tasksByItt.values());
    }

    /** Any thread: the write buffer budget granted a queued write its buffer. */
    void writeBufferGranted(IscsiTask task) {
        dataOut.bufferGranted(task);
    }

    /** Any thread: the server-wide Data-In budget has room again. */
    void dataInBudgetReturned() {
        if (dataIn != null) {
            dataIn.budgetReturned();
        }
    }

    // ------------------------------------------------------------------ channel lifecycle

    @Override
    public void handlerAdded(ChannelHandlerContext context) {
        this.ctx = context;
    }

    @Override
    public void channelActive(ChannelHandlerContext context) {
        server.connections.add(this);
        ConnectionSlots.Admission admission = server.slots.admit(this, remoteHost());
        if (!admission.admitted()) {
            server.connectionNoise.warn("{}: closed at once: {}", remote(), admission.refusal());
            closeNow();
            return;
        }
        if (admission.displaced() != null) {
            server.connectionNoise.warn("{}: closed to make room for {}: every slot is taken (server.max_connections)"
                    + " and it was the oldest connection still logging in or in a discovery session",
                    admission.displaced().remote(), remote());
            admission.displaced().closeFromAnyThread();
        }
        login = new LoginPhase(this, server, ctx);
        lastReceiveNanos = ctx.executor().ticker().nanoTime();
        context.fireChannelActive();
    }

    @Override
    public void channelInactive(ChannelHandlerContext context) {
        if (login != null) {
            login.end();
        }
        cancel(nopTimer);
        if (text != null) {
            text.release();
        }
        if (dataIn != null) {
            dataIn.dropWaiting();
        }
        server.dataIn.forget(this);
        for (IscsiTask copy : server.copies.withdrawAll(this)) {
            dropUnstarted(copy);
        }
        for (IscsiTask task : tasksSnapshot()) {
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
        server.slots.release(this);
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

    /**
     * Reads the socket only while it can take our answers, no read waits for Data-In room and no
     * login request waits for its turn.
     */
    void updateAutoRead() {
        boolean waiting = dataIn != null && dataIn.hasWaiting() || login != null && login.deferred();
        ctx.channel().config().setAutoRead(ctx.channel().isWritable() && !waiting);
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
                login.onPdu(pdu);
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
            case Bhs.OP_SCSI_COMMAND: {
                ScsiCommandHeader command = scsiCommandHeader.wrap(h);
                if (discovery) {
                    sendReject(h, Bhs.REJECT_PROTOCOL_ERROR);
                } else if (sequence.accept(command)) {
                    scsiCommand(command, pdu.data());
                }
                break;
            }
            case Bhs.OP_DATA_OUT:
                if (discovery) {
                    sendReject(h, Bhs.REJECT_PROTOCOL_ERROR);
                } else {
                    dataOut.dataOut(dataOutHeader.wrap(h), pdu.data(), lastReceiveNanos);
                }
                break;
            case Bhs.OP_NOP_OUT: {
                NopOutHeader nop = nopOutHeader.wrap(h);
                if (sequence.accept(nop)) {
                    nopOut(nop, pdu.data());
                }
                break;
            }
            case Bhs.OP_TASK_MGMT_REQUEST: {
                TaskManagementHeader request = taskManagementHeader.wrap(h);
                if (discovery) {
                    sendReject(h, Bhs.REJECT_PROTOCOL_ERROR);
                } else if (sequence.accept(request)) {
                    taskManagement.request(request);
                }
                break;
            }
            case Bhs.OP_TEXT_REQUEST: {
                TextRequestHeader request = textRequestHeader.wrap(h);
                if (sequence.accept(request)) {
                    text.request(request, pdu.data());
                }
                break;
            }
            case Bhs.OP_LOGOUT_REQUEST: {
                LogoutRequestHeader request = logoutRequestHeader.wrap(h);
                if (sequence.accept(request)) {
                    logout(request);
                }
                break;
            }
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

    // ------------------------------------------------------------------ entering the full feature phase

    /** The login succeeded: the session starts and is registered; returns its TSIH for the last login response. */
    int enterFullFeature(LoginNegotiator negotiator, long isid) {
        fullFeature = true;
        params = negotiator.parameters();
        discovery = negotiator.discovery();
        target = negotiator.target();
        int tsih = server.sessions.allocateTsih();
        dataIn = new DataInSender(this, server, ctx, params);
        text = new TextRequests(this, server, ctx, params, target, negotiator.initiatorName());
        if (target != null) {
            initiatorName = negotiator.initiatorName();
            nexus = nexus(negotiator.initiatorName(), isid, target, server.settings);
            dataOut = new DataOutCollector(this, server, ctx, params);
            taskManagement = new TaskManagement(this, server, ctx, target, nexus);
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
            log.debug("{}: discovery session of {}", remote(), negotiator.initiatorName());
        }
        long interval = server.settings.nopInInterval().toMillis();
        if (interval > 0) {
            nopTimer = ctx.executor().scheduleAtFixedRate(this::checkLiveness, interval, interval, TimeUnit.MILLISECONDS);
        }
        return tsih;
    }

    /** The I_T nexus a normal session of {@code initiator} with {@code isid} to {@code target} has. */
    static String nexus(String initiator, long isid, IscsiTargetDefinition target, IscsiServerSettings settings) {
        return initiator + ",i,0x" + String.format("%012x", isid) + "," + target.iqn()
                + ",t,0x" + String.format("%04x", settings.targetPortalGroupTag());
    }

    /** The last login response is written: from here on PDUs carry the negotiated digests and sizes. */
    void fullFeatureAnswered() {
        ctx.flush();
        encoder.enableDigests(params.headerDigest, params.dataDigest);
        decoder.enableDigests(params.headerDigest, params.dataDigest);
        decoder.maxDataSegmentLength(params.targetMaxRecvDataSegmentLength);
    }

    /** Called on another session's event loop: that session replaced this one. */
    void closeForReinstatement() {
        ctx.executor().execute(() -> {
            registered = false;
            ctx.close();
        });
    }

    /** Any thread: closes this connection on its event loop (TARGET COLD RESET of another session). */
    void closeFromAnyThread() {
        ctx.executor().execute(ctx::close);
    }

    void closeNow() {
        closing = true;
        ctx.close();
    }

    void closeAfterFlush() {
        closing = true;
        ctx.writeAndFlush(ctx.alloc().buffer(0)).addListener(ChannelFutureListener.CLOSE);
    }

    // ------------------------------------------------------------------ SCSI commands

    private void scsiCommand(ScsiCommandHeader h, ByteBuf data) {
        boolean immediate = h.immediate();
        int itt = h.itt();
        int edtl = h.expectedDataTransferLength();
        boolean readBit = h.reads();
        boolean writeBit = h.writes();
        int immediateLength = data.readableBytes();
        if (draining || logoutPending) {
            sequence.retire(immediate);
            sendReject(h.buffer(), Bhs.REJECT_WAITING_FOR_LOGOUT);
            return;
        }
        if (tasksByItt.containsKey(itt)) {
            sequence.retire(immediate);
            sendReject(h.buffer(), Bhs.REJECT_TASK_IN_PROGRESS);
            return;
        }
        if (immediate && immediateTasks >= server.settings.queueDepth()) {
            // the CmdSN window does not bound immediate commands: as many as the window holds, no more
            dataIn.sendStatusOnly(h, ScsiCommand.TASK_SET_FULL);
            return;
        }
        if (edtl < 0 || writeBit && edtl > MAX_WRITE_TRANSFER
                || immediateLength > 0 && (!writeBit || !params.immediateData || immediateLength > edtl
                        || immediateLength > params.firstBurstLength)) {
            sequence.retire(immediate);
            sendReject(h.buffer(), immediateLength > 0 ? Bhs.REJECT_PROTOCOL_ERROR : Bhs.REJECT_INVALID_PDU_FIELD);
            return;
        }
        byte[] cdb = h.cdb();
        if (cdb == null) {
            sequence.retire(immediate);
            sendReject(h.buffer(), Bhs.REJECT_INVALID_PDU_FIELD);
            return;
        }
        boolean expectsData = writeBit && edtl > 0;
        int ttt = expectsData ? nextTargetTransferTag() : Bhs.RESERVED_TAG;
        ScsiCommand command = new ScsiCommand(nexus, h.lun(), cdb, edtl, readBit, writeBit, h.taskAttributes(),
                null, ctx.alloc());
        IscsiTask task = new IscsiTask(this, itt, ttt, h.lunField(), h.cmdSn(), immediate, command);
        tasksByItt.put(itt, task);
        if (immediate) {
            immediateTasks++;
        }
        if (!expectsData) {
            dispatch(task);
            return;
        }
        tasksByTtt.put(ttt, task);
        dataOut.start(task, h.isFinal(), data);
    }

    int nextTargetTransferTag() {
        do {
            lastTtt++;
        } while (lastTtt == Bhs.RESERVED_TAG || tasksByTtt.containsKey(lastTtt));
        return lastTtt;
    }

    /**
     * The task's data phase is over (or it had none): it runs, unless its data went wrong or found no
     * buffer (answered at once), or a read finds no Data-In room (it runs when room returns).
     */
    void dispatch(IscsiTask task) {
        if (task.targetTransferTag != Bhs.RESERVED_TAG) {
            tasksByTtt.remove(task.targetTransferTag);
        }
        task.command.dataOutReceived(task.dataOut);
        task.state = IscsiTask.State.EXECUTING;
        executing++;
        if (task.dataOut != null && task.dataEnd != task.expectedTransferLength()) {
            dataOut.dataPhaseError(task, "write data incomplete at the end of its data phase", task.dataEnd, 0);
        }
        if (task.dataPhaseError || task.refusedForBudget) {
            if (task.dataPhaseError) {
                // the data cannot be trusted: never executed, answered ABORTED COMMAND / DATA PHASE ERROR
                task.command.failDataPhase();
            } else {
                task.command.completeWithStatus(ScsiCommand.TASK_SET_FULL);
            }
            task.state = IscsiTask.State.DONE;
            taskExecuted(task);
            return;
        }
        if (CopyLimits.isCopy(task.command)) {
            if (!server.copies.tryStart(task)) {
                return; // waits for copyGranted, holding no worker
            }
            task.copyRunning = true;
        }
        if (dataIn.admit(task)) {
            execute(task);
        }
    }

    /** Any thread: the copy gate lets a waiting EXTENDED COPY run; it runs on the event loop's hand-off. */
    void copyGranted(IscsiTask copy) {
        try {
            ctx.executor().execute(() -> {
                copy.copyRunning = true;
                if (copy.aborted || !ctx.channel().isActive()) {
                    // aborted as the grant crossed its withdrawal: it ends without running
                    copy.command.completeWithStatus(ScsiCommand.TASK_ABORTED);
                    copy.state = IscsiTask.State.DONE;
                    taskExecuted(copy);
                } else {
                    execute(copy);
                }
            });
        } catch (RejectedExecutionException e) {
            server.copies.ended(copy);
        }
    }

    void execute(IscsiTask task) {
        try {
            server.ioExecutor.execute(task);
        } catch (RejectedExecutionException e) {
            task.command.completeWithStatus(ScsiCommand.BUSY);
            task.state = IscsiTask.State.DONE;
            taskExecuted(task);
        }
    }

    /** Back on the event loop after execution: answer, release, return the CmdSN slot. */
    void taskExecuted(IscsiTask task) {
        executing--;
        if (task.copyRunning) {
            task.copyRunning = false;
            server.copies.ended(task);
        }
        forget(task);
        sequence.retire(task.immediate);
        if (task.aborted || !ctx.channel().isActive()) {
            task.releaseBuffers();
            dataIn.release(task);
        } else {
            dataIn.sendResult(task);
            task.releaseBuffers();
            ctx.flush();
        }
        if (task.abortWaiter != null) {
            taskManagement.taskEnded(task.abortWaiter);
        }
        if (logoutPending && executing == 0) {
            sendLogoutResponse();
        }
        completeDrainIfIdle();
    }

    /**
     * A task that never ran ends without an answer (aborted, logout, connection loss): forgotten, its
     * CmdSN slot and buffers returned. A read waiting for Data-In room was dispatched already.
     */
    void dropUnstarted(IscsiTask task) {
        task.aborted = true;
        if (task.state == IscsiTask.State.EXECUTING) {
            executing--;
        }
        forget(task);
        sequence.retire(task.immediate);
        task.releaseBuffers();
    }

    private void forget(IscsiTask task) {
        if (tasksByItt.remove(task.itt) != null && task.immediate) {
            immediateTasks--;
        }
        if (task.targetTransferTag != Bhs.RESERVED_TAG) {
            tasksByTtt.remove(task.targetTransferTag);
        }
    }

    // ------------------------------------------------------------------ NOP

    private void nopOut(NopOutHeader h, ByteBuf data) {
        sequence.retire(h.immediate());
        int itt = h.itt();
        if (itt == Bhs.RESERVED_TAG) {
            return; // an answer to our ping, or a ping that wants no answer
        }
        ByteBuf echo = data.isReadable()
                ? data.retainedSlice(data.readerIndex(), Math.min(data.readableBytes(), params.initiatorMaxRecvDataSegmentLength))
                : null;
        sendNopIn(itt, Bhs.RESERVED_TAG, h.lunField(), echo, true);
    }

    private void sendNopIn(int itt, int ttt, long lunField, ByteBuf data, boolean answer) {
        NopInHeader h = nopInHeader.begin(ctx.alloc(), data == null ? 0 : data.readableBytes())
                .lunField(lunField)
                .itt(itt)
                .ttt(ttt);
        if (answer) {
            sequence.stamp(h);
        } else {
            sequence.stampCurrent(h);
        }
        ctx.write(h.toPdu(data), ctx.voidPromise());
    }

    /**
     * Pings an initiator silent for a whole interval; drops it if it stays silent another one. Also
     * drops one whose write gets none of the data due for a whole interval (an R2T unanswered, or an
     * unsolicited burst left open): its write holds write buffer budget other sessions may wait for,
     * and ErrorRecoveryLevel 0 has no other way to end it.
     */
    private void checkLiveness() {
        long now = ctx.executor().ticker().nanoTime();
        long interval = server.settings.nopInInterval().toNanos();
        IscsiTask stalled = dataOut == null ? null : dataOut.stalledSince(tasksByTtt.values(), now - interval);
        if (stalled != null) {
            log.info("{}: write ITT 0x{} ({} bytes) got none of the Data-Out due within {}; closing", remote(),
                    Integer.toHexString(stalled.itt), stalled.expectedTransferLength(), server.settings.nopInInterval());
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

    // ------------------------------------------------------------------ logout and shutdown

    private void logout(LogoutRequestHeader h) {
        sequence.retire(h.immediate());
        int reason = h.reasonCode();
        pendingLogoutItt = h.itt();
        if (reason != LOGOUT_CLOSE_SESSION && reason != LOGOUT_CLOSE_CONNECTION) {
            sendLogoutHeader(LOGOUT_CONNECTION_RECOVERY_NOT_SUPPORTED);
            return;
        }
        logoutPending = true;
        dataIn.dropWaiting();
        updateAutoRead();
        // commands still waiting for Data-Out can never complete now; copies waiting for their turn need not
        for (IscsiTask task : tasksSnapshot()) {
            if (task.state == IscsiTask.State.COLLECTING_DATA) {
                dropUnstarted(task);
            }
        }
        for (IscsiTask copy : server.copies.withdrawAll(this)) {
            dropUnstarted(copy);
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
        LogoutResponseHeader h = logoutResponseHeader.begin(ctx.alloc(), 0)
                .response(response)
                .itt(pendingLogoutItt)
                .time2Wait(params.defaultTime2Wait)
                .time2Retain(params.defaultTime2Retain);
        sequence.stamp(h);
        ctx.write(h.toPdu(null), ctx.voidPromise());
    }

    /**
     * Graceful close: stops taking commands, asks a logged-in initiator to log out (Async Message,
     * RFC 7143 section 11.9) and closes the connection once no command is executing and the
     * initiator logged out or half the drain timeout passed. The promise completes when the
     * connection is closed. Safe from any thread; a second drain (an administrative change and a login
     * that ends itself, or a shutdown) joins the first and completes with it.
     */
    Promise<Void> drain() {
        Promise<Void> promise = ctx.executor().newPromise();
        ctx.executor().execute(() -> {
            if (drained != null) {
                drained.addListener(f -> promise.trySuccess(null));
                return;
            }
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
        AsyncMessageHeader h = asyncMessageHeader.begin(ctx.alloc(), 0)
                .itt(Bhs.RESERVED_TAG)
                .asyncEvent(ASYNC_EVENT_LOGOUT_REQUEST)
                .parameter3(secondsToLogout);
        sequence.stamp(h);
        ctx.write(h.toPdu(null), ctx.voidPromise());
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

    void sendReject(ByteBuf rejected, int reason) {
        ByteBuf copy = ctx.alloc().buffer(Bhs.LENGTH);
        copy.writeBytes(rejected, rejected.readerIndex(), Bhs.LENGTH);
        RejectHeader h = rejectHeader.begin(ctx.alloc(), Bhs.LENGTH).reason(reason).itt(Bhs.RESERVED_TAG);
        sequence.stamp(h);
        ctx.write(h.toPdu(copy), ctx.voidPromise());
    }

    SocketAddress remote() {
        return ctx.channel().remoteAddress();
    }

    /** The remote IP address alone (no port): the source the CHAP failure throttle counts. */
    String remoteHost() {
        SocketAddress address = remote();
        return address instanceof InetSocketAddress
                ? ((InetSocketAddress) address).getAddress().getHostAddress() : String.valueOf(address);
    }

    private static void cancel(ScheduledFuture<?> future) {
        if (future != null) {
            future.cancel(false);
        }
    }
}
