package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.iscsi.proto.TextKeys;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * Text requests of the full feature phase (RFC 7143 section 11.10): SendTargets, answered in pieces
 * of the initiator's MaxRecvDataSegmentLength with the C bit and a TTT while more follows; every
 * other key is NotUnderstood. SendTargets lists only targets this initiator may log in to. The
 * answer's Target Transfer Tag comes from the session's {@link SessionTasks}, so it is never one a write
 * is using.
 *
 * <p>Concurrency: owned by the connection's event loop, with the answer it keeps between pieces.
 */
final class TextRequests {
    private final Wire wire;
    private final SequenceNumbers sequence;
    private final NegotiatedParameters params;
    private final SessionTasks tasks;
    private final ServerContext server;
    /** The target of a normal session (SendTargets=All names only it); null in a discovery session. */
    private final IscsiTargetDefinition sessionTarget;
    private final String initiatorName;
    private ByteBuf pending;
    private int pendingTtt;
    private final TextResponseHeader responseHeader = new TextResponseHeader();

    TextRequests(Wire wire, SequenceNumbers sequence, NegotiatedParameters params, SessionTasks tasks,
            ServerContext server, IscsiTargetDefinition sessionTarget, String initiatorName) {
        this.wire = wire;
        this.sequence = sequence;
        this.params = params;
        this.tasks = tasks;
        this.server = server;
        this.sessionTarget = sessionTarget;
        this.initiatorName = initiatorName;
    }

    void request(TextRequestHeader h, ByteBuf data) {
        sequence.retire(h.immediate());
        int itt = h.itt();
        int ttt = h.ttt();
        if (h.continues()) {
            // multi-PDU text requests are not needed by SendTargets; refuse rather than guess
            wire.reject(h.buffer(), Bhs.REJECT_COMMAND_NOT_SUPPORTED);
            return;
        }
        if (ttt != Bhs.RESERVED_TAG) {
            if (pending != null && ttt == pendingTtt) {
                sendChunk(itt, h.lunField());
            } else {
                wire.reject(h.buffer(), Bhs.REJECT_INVALID_PDU_FIELD);
            }
            return;
        }
        release();
        Map<String, String> keys = TextKeys.parse(data.nioBuffer(), null);
        ByteBuf response = wire.alloc().buffer(256);
        for (Map.Entry<String, String> e : keys.entrySet()) {
            if (e.getKey().equals("SendTargets")) {
                sendTargets(e.getValue(), response);
            } else {
                response.writeBytes(TextKeys.encode(Map.of(e.getKey(), "NotUnderstood")));
            }
        }
        pending = response;
        pendingTtt = tasks.nextTargetTransferTag();
        sendChunk(itt, h.lunField());
    }

    /** Drops an answer still waiting for its next piece (the connection closed). */
    void release() {
        if (pending != null) {
            pending.release();
            pending = null;
        }
    }

    /** Sends the next piece of the pending text response; C bit and a TTT while more follows. */
    private void sendChunk(int itt, long lunField) {
        ByteBuf all = pending;
        int length = Math.min(all.readableBytes(), params.initiatorMaxRecvDataSegmentLength);
        boolean last = length == all.readableBytes();
        ByteBuf chunk = all.readRetainedSlice(length);
        TextResponseHeader h = responseHeader.begin(wire.alloc(), length)
                .lunField(lunField)
                .itt(itt)
                .ttt(last ? Bhs.RESERVED_TAG : pendingTtt);
        if (!last) {
            h.continues();
        }
        sequence.stamp(h);
        wire.write(h.toPdu(chunk));
        if (last) {
            all.release();
            pending = null;
        }
    }

    /** SendTargets=All (discovery: every target this initiator may use; normal: this one) or =IQN. */
    private void sendTargets(String which, ByteBuf out) {
        for (IscsiTargetDefinition t : server.targets()) {
            boolean wanted = "All".equals(which) ? sessionTarget == null || sessionTarget == t
                    : which.isEmpty() ? sessionTarget == t : which.equals(t.iqn());
            if (wanted && t.allows(initiatorName)) {
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
        SocketAddress local = wire.local();
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
}
