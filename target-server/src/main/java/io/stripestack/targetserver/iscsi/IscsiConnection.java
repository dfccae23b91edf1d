package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.stripestack.iscsi.proto.Bhs;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One iSCSI connection and, with MaxConnections 1, its session: the Netty handler that holds the
 * connection's lifecycle and the session's state, and routes each PDU, as a typed header view, to the
 * part that handles it.
 *
 * <ul>
 *   <li>{@link LoginPhase}: login requests until the full feature phase;</li>
 *   <li>{@link ScsiCommands}: SCSI Command PDUs become {@link IscsiTask}s in the session's
 *       {@link SessionTasks}, run on the server's I/O executor and are answered; it builds
 *       {@link DataOutCollector} (a write's Data-Out, R2Ts and write buffer budget),
 *       {@link DataInSender} (Data-In, responses and the Data-In budget) and {@link TaskManagement};</li>
 *   <li>{@link TextRequests}: text requests (SendTargets);</li>
 *   <li>{@link Liveness}: NOP-Out, NOP-In pings and stalled writes;</li>
 *   <li>{@link SessionEnd}: logout and drain;</li>
 *   <li>here: the channel's lifecycle, the opcode switch and the session's registration;</li>
 *   <li>{@link SequenceNumbers}: StatSN and the CmdSN window every response carries.</li>
 * </ul>
 * The parts reach the connection only through the {@link Wire} it implements and the narrow interfaces
 * they name ({@link LoginPhase.Session}, {@link TaskPipeline}, {@link SessionTasks.Events},
 * {@link SessionEnd.Commands}).
 *
 * <p>Concurrency: this object and every part above are owned by the channel's event loop. SCSI
 * commands run on the server's I/O executor ({@link IscsiTask}) and come back to the event loop to
 * answer; nothing here blocks. Other threads only call {@link #drain()},
 * {@link #closeForReinstatement()} and {@link #closeFromAnyThread()}, which hop onto the event loop, and read
 * {@link #initiatorName()}, {@link #nexus()} and {@link #target()}, which are written before the session
 * registers (the registry's monitor publishes them).
 */
final class IscsiConnection extends ChannelInboundHandlerAdapter implements Wire, LoginPhase.Session {
    private static final Logger log = LoggerFactory.getLogger(IscsiConnection.class);

    private final ServerContext server;
    private final PduDecoder decoder;
    private final PduEncoder encoder;
    private final SequenceNumbers sequence = new SequenceNumbers();
    private ChannelHandlerContext ctx;
    private LoginPhase login;
    private Liveness liveness;
    private SessionEnd end;
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
    /** Null in a discovery session. */
    private ScsiCommands scsi;
    private DataOutCollector dataOut;
    private TaskManagement taskManagement;
    private TextRequests text;

    // ---- header views, re-pointed at each PDU (see PduHeader)
    private final ScsiCommandHeader scsiCommandHeader = new ScsiCommandHeader();
    private final DataOutHeader dataOutHeader = new DataOutHeader();
    private final NopOutHeader nopOutHeader = new NopOutHeader();
    private final TaskManagementHeader taskManagementHeader = new TaskManagementHeader();
    private final TextRequestHeader textRequestHeader = new TextRequestHeader();
    private final LogoutRequestHeader logoutRequestHeader = new LogoutRequestHeader();
    private final RejectHeader rejectHeader = new RejectHeader();

    IscsiConnection(ServerContext server, PduDecoder decoder, PduEncoder encoder) {
        this.server = server;
        this.decoder = decoder;
        this.encoder = encoder;
    }

    // ------------------------------------------------------------------ for the server and other sessions

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

    // ------------------------------------------------------------------ Wire

    @Override
    public ByteBufAllocator alloc() {
        return ctx.alloc();
    }

    @Override
    public EventExecutor executor() {
        return ctx.executor();
    }

    @Override
    public void write(IscsiPdu pdu) {
        ctx.write(pdu, ctx.voidPromise());
    }

    @Override
    public void write(IscsiPdu pdu, ChannelFutureListener whenWritten) {
        ctx.write(pdu, ctx.newPromise().addListener(whenWritten));
    }

    @Override
    public void flush() {
        ctx.flush();
    }

    @Override
    public void reject(ByteBuf rejected, int reason) {
        ByteBuf copy = ctx.alloc().buffer(Bhs.LENGTH);
        copy.writeBytes(rejected, rejected.readerIndex(), Bhs.LENGTH);
        RejectHeader h = rejectHeader.begin(ctx.alloc(), Bhs.LENGTH).reason(reason).itt(Bhs.RESERVED_TAG);
        sequence.stamp(h);
        ctx.write(h.toPdu(copy), ctx.voidPromise());
    }

    @Override
    public boolean open() {
        return ctx.channel().isActive();
    }

    @Override
    public SocketAddress remote() {
        return ctx.channel().remoteAddress();
    }

    @Override
    public SocketAddress local() {
        return ctx.channel().localAddress();
    }

    @Override
    public Future<Void> close() {
        return ctx.close();
    }

    @Override
    public void closeAfterFlush() {
        closing = true;
        ctx.writeAndFlush(ctx.alloc().buffer(0)).addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public boolean closing() {
        return closing;
    }

    /**
     * Reads the socket only while it can take our answers, no read waits for Data-In room and no
     * login request waits for its turn.
     */
    @Override
    public void readInterestChanged() {
        boolean waiting = scsi != null && scsi.readsWaiting() || login != null && login.deferred();
        ctx.channel().config().setAutoRead(ctx.channel().isWritable() && !waiting);
    }

    // ------------------------------------------------------------------ channel lifecycle

    @Override
    public void handlerAdded(ChannelHandlerContext context) {
        this.ctx = context;
        this.liveness = new Liveness(this, sequence, server.settings.nopInInterval());
        this.end = new SessionEnd(this, sequence, server.settings.drainTimeout());
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
        login = new LoginPhase(this, sequence, server, this);
        liveness.received();
        context.fireChannelActive();
    }

    @Override
    public void channelInactive(ChannelHandlerContext context) {
        if (login != null) {
            login.end();
        }
        liveness.stop();
        if (text != null) {
            text.release();
        }
        if (scsi != null) {
            scsi.connectionLost();
        }
        if (registered && server.sessions.unregister(nexus, this)) {
            target.router().nexusRemoved(nexus);
            log.info("{}: session {} ended", remote(), nexus);
        }
        registered = false;
        server.slots.release(this);
        server.connections.remove(this);
        end.connectionClosed();
        context.fireChannelInactive();
    }

    /**
     * Back-pressure: while the socket cannot take more (an initiator reading slowly), stop reading
     * new commands so queued Data-In cannot grow without bound.
     */
    @Override
    public void channelWritabilityChanged(ChannelHandlerContext context) {
        readInterestChanged();
        context.fireChannelWritabilityChanged();
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
            long receivedNanos = liveness.received();
            if (closing) {
                return;
            } else if (!fullFeature) {
                login.onPdu(pdu);
            } else if (pdu.rejectReason() != 0) {
                reject(pdu.header(), pdu.rejectReason());
                if (pdu.rejectReason() == Bhs.REJECT_DATA_DIGEST_ERROR) {
                    // ErrorRecoveryLevel 0 has no way to recover the lost data: end the session
                    ctx.flush();
                    ctx.close();
                }
            } else {
                fullFeaturePhase(pdu, receivedNanos);
            }
        } finally {
            pdu.release();
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext context) {
        context.flush();
    }

    /** Hands the PDU, as its typed header view and its data, to the part that handles its type. */
    private void fullFeaturePhase(IscsiPdu pdu, long receivedNanos) {
        ByteBuf h = pdu.header();
        switch (pdu.opcode()) {
            case Bhs.OP_SCSI_COMMAND: {
                ScsiCommandHeader command = scsiCommandHeader.wrap(h);
                if (discovery) {
                    reject(h, Bhs.REJECT_PROTOCOL_ERROR);
                } else if (sequence.accept(command)) {
                    scsi.command(command, pdu.data());
                }
                break;
            }
            case Bhs.OP_DATA_OUT:
                if (discovery) {
                    reject(h, Bhs.REJECT_PROTOCOL_ERROR);
                } else {
                    dataOut.dataOut(dataOutHeader.wrap(h), pdu.data(), receivedNanos);
                }
                break;
            case Bhs.OP_NOP_OUT: {
                NopOutHeader nop = nopOutHeader.wrap(h);
                if (sequence.accept(nop)) {
                    liveness.nopOut(nop, pdu.data());
                }
                break;
            }
            case Bhs.OP_TASK_MGMT_REQUEST: {
                TaskManagementHeader request = taskManagementHeader.wrap(h);
                if (discovery) {
                    reject(h, Bhs.REJECT_PROTOCOL_ERROR);
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
                    end.logout(request);
                }
                break;
            }
            case Bhs.OP_LOGIN_REQUEST:
                reject(h, Bhs.REJECT_PROTOCOL_ERROR);
                break;
            case Bhs.OP_SNACK_REQUEST:
                // ErrorRecoveryLevel 0: no SNACK support
                reject(h, Bhs.REJECT_PROTOCOL_ERROR);
                break;
            default:
                reject(h, Bhs.REJECT_COMMAND_NOT_SUPPORTED);
                break;
        }
    }

    // ------------------------------------------------------------------ LoginPhase.Session

    /** The remote IP address alone (no port): the source the CHAP failure throttle counts. */
    @Override
    public String remoteHost() {
        SocketAddress address = remote();
        return address instanceof InetSocketAddress
                ? ((InetSocketAddress) address).getAddress().getHostAddress() : String.valueOf(address);
    }

    @Override
    public void closeNow() {
        closing = true;
        ctx.close();
    }

    @Override
    public boolean takeSessionSlot(String initiator, String sessionNexus) {
        return server.slots.sessionStarting(this, initiator, server.sessions.holds(sessionNexus));
    }

    @Override
    public int enterFullFeature(LoginNegotiator negotiator, long isid) {
        fullFeature = true;
        params = negotiator.parameters();
        discovery = negotiator.discovery();
        target = negotiator.target();
        int tsih = server.sessions.allocateTsih();
        SessionTasks tasks;
        if (target != null) {
            initiatorName = negotiator.initiatorName();
            nexus = SessionRegistry.nexus(negotiator.initiatorName(), isid, target, server.settings);
            scsi = new ScsiCommands(this, sequence, params, server, target, nexus, this::closeOtherSessionsOfTarget,
                    end::taskEnded);
            tasks = scsi.tasks();
            dataOut = scsi.dataOut();
            taskManagement = scsi.taskManagement();
        } else {
            // a discovery session runs no commands: its table only hands out Target Transfer Tags
            tasks = new SessionTasks(null, ctx.executor(), server.writeBuffers, null);
        }
        text = new TextRequests(this, sequence, params, tasks, server, target, negotiator.initiatorName());
        if (target != null) {
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
        liveness.start(params, tasks);
        end.started(params, scsi);
        return tsih;
    }

    @Override
    public void fullFeatureAnswered() {
        ctx.flush();
        encoder.enableDigests(params.headerDigest, params.dataDigest);
        decoder.enableDigests(params.headerDigest, params.dataDigest);
        decoder.maxDataSegmentLength(params.targetMaxRecvDataSegmentLength);
    }

    @Override
    public void endSession() {
        drain();
    }

    // ------------------------------------------------------------------ closing from other threads

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

    /** TARGET COLD RESET: every other session to this target closes (this one after its response). */
    private void closeOtherSessionsOfTarget() {
        for (IscsiConnection other : server.sessions.connections()) {
            if (other != this && other.target() == target) {
                other.closeFromAnyThread();
            }
        }
    }

    /**
     * Graceful close ({@link SessionEnd#drain}): stops taking commands, asks a logged-in initiator to log out and
     * closes once idle; the promise completes when the connection is closed. Safe from any thread.
     */
    Promise<Void> drain() {
        return end.drain();
    }
}
