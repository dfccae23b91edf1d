package io.stripestack.targetserver.server;

import io.stripestack.remote.RemoteBlockDevice;
import io.stripestack.remote.RemoteMemberStatus;
import io.stripestack.targetserver.control.ControlAttribute;
import io.stripestack.targetserver.control.ControlRegistry;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * What {@code stripestack status}, /metrics and {@code ctl get ARRAY/remote/N} show of the arrays' members on
 * remote targets: connection state, sessions up, queue depth and commands in flight, mean latency, commands
 * retried, logins after a lost connection and the target's protocol errors. A member's line stays after the
 * array has failed it, so a member that was lost shows as such.
 *
 * <p>Concurrency: the map and its lists are concurrent ({@link LiveArrays#remoteDevices}: an array created,
 * deleted or given a remote spare at run time changes them); each device's
 * status is a snapshot of its own thread-safe counters, so any admin thread may render at any time.
 */
final class RemoteMemberReport {
    private final Map<String, List<RemoteBlockDevice>> byArray;

    /** @param byArray each array's remote members and spares, by array name */
    RemoteMemberReport(Map<String, List<RemoteBlockDevice>> byArray) {
        this.byArray = byArray;
    }

    /** The read-only attribute of remote member {@code index} of {@code array}: {@code ARRAY/remote/N}, its status line. */
    static void registerControl(ControlRegistry registry, String array, int index, RemoteBlockDevice device) {
        registry.register(array + "/remote/" + index, ControlAttribute.readOnly(() -> line(device.status())));
    }

    String render() {
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, List<RemoteBlockDevice>> e : byArray.entrySet()) {
            for (RemoteBlockDevice d : e.getValue()) {
                out.append(e.getKey()).append(" remote ").append(line(d.status())).append('\n');
            }
        }
        return out.length() == 0 ? "" : "\n" + out;
    }

    private static String line(RemoteMemberStatus s) {
        return String.format(Locale.ROOT,
                "%s: %s, sessions %d/%d, queue_depth %d, in_flight %d (peak %d), commands %d, latency %d us,"
                        + " retries %d, reconnects %d, protocol_errors %d", s.name(),
                s.state().name().toLowerCase(Locale.ROOT), s.connectionsUp(), s.connections(), s.queueDepth(),
                s.inFlight(), s.peakInFlight(), s.commands(), s.meanLatencyMicros(), s.retries(), s.reconnects(),
                s.protocolErrors());
    }

    /**
     * The remote members' families, labelled by array and member only: the connection state is one gauge per
     * state ({@code stripestack_remote_member_state{state=...}}), so a member's series keep their identity
     * when it disconnects and returns.
     */
    String prometheus() {
        if (byArray.values().stream().allMatch(List::isEmpty)) {
            return "";
        }
        PrometheusText text = new PrometheusText();
        text.family("stripestack_remote_member_state", PrometheusText.GAUGE,
                "1 for the remote member's connection state: connected (every session up), reconnecting (within "
                        + "the retry window), failed (the window passed).");
        for (Map.Entry<String, List<RemoteBlockDevice>> e : byArray.entrySet()) {
            for (RemoteBlockDevice d : e.getValue()) {
                RemoteMemberStatus s = d.status();
                for (RemoteMemberStatus.State state : RemoteMemberStatus.State.values()) {
                    text.sample("stripestack_remote_member_state", s.state() == state ? 1 : 0, "array", e.getKey(),
                            "member", s.name(), "state", state.name().toLowerCase(Locale.ROOT));
                }
            }
        }
        gauge(text, "stripestack_remote_member_sessions_up", "Sessions to the remote target connected now.",
                RemoteMemberStatus::connectionsUp);
        gauge(text, "stripestack_remote_member_sessions", "Sessions configured to the remote target.",
                RemoteMemberStatus::connections);
        gauge(text, "stripestack_remote_member_queue_depth", "Commands each session may have outstanding.",
                RemoteMemberStatus::queueDepth);
        gauge(text, "stripestack_remote_member_commands_in_flight", "Commands outstanding now, all sessions together.",
                RemoteMemberStatus::inFlight);
        text.family("stripestack_remote_member_mean_latency_seconds", PrometheusText.GAUGE,
                "Mean time from issue to status of the commands completed since open.");
        for (Map.Entry<String, List<RemoteBlockDevice>> e : byArray.entrySet()) {
            for (RemoteBlockDevice d : e.getValue()) {
                RemoteMemberStatus s = d.status();
                text.sample("stripestack_remote_member_mean_latency_seconds", s.meanLatencyMicros() / 1e6,
                        "array", e.getKey(), "member", s.name());
            }
        }
        counter(text, "stripestack_remote_member_commands_total", "Commands completed since open.",
                RemoteMemberStatus::commands);
        counter(text, "stripestack_remote_member_retries_total", "Commands issued again after a lost connection.",
                RemoteMemberStatus::retries);
        counter(text, "stripestack_remote_member_reconnects_total", "Logins after a lost connection.",
                RemoteMemberStatus::reconnects);
        counter(text, "stripestack_remote_member_protocol_errors_total",
                "Answers of the remote target that broke the iSCSI protocol.", RemoteMemberStatus::protocolErrors);
        return text.toString();
    }

    private void gauge(PrometheusText text, String family, String help, ToLongFunction<RemoteMemberStatus> value) {
        text.family(family, PrometheusText.GAUGE, help);
        samples(text, family, value);
    }

    private void counter(PrometheusText text, String family, String help, ToLongFunction<RemoteMemberStatus> value) {
        text.family(family, PrometheusText.COUNTER, help);
        samples(text, family, value);
    }

    private void samples(PrometheusText text, String family, ToLongFunction<RemoteMemberStatus> value) {
        for (Map.Entry<String, List<RemoteBlockDevice>> e : byArray.entrySet()) {
            for (RemoteBlockDevice d : e.getValue()) {
                RemoteMemberStatus s = d.status();
                text.sample(family, value.applyAsLong(s), "array", e.getKey(), "member", s.name());
            }
        }
    }
}
