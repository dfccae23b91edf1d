package io.stripestack.targetserver.server;

import io.stripestack.remote.RemoteBlockDevice;
import io.stripestack.remote.RemoteMemberStatus;
import io.stripestack.targetserver.control.ControlAttribute;
import io.stripestack.targetserver.control.ControlRegistry;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What {@code stripestack status}, /metrics and {@code ctl get ARRAY/remote/N} show of the arrays' members on
 * remote targets: connection state, sessions up, queue depth and commands in flight, mean latency, commands
 * retried and logins after a lost connection. A member's line stays after the array has failed it, so a
 * member that was lost shows as such.
 *
 * <p>Concurrency: the map is filled before the server serves and not changed afterwards; each device's
 * status is a snapshot of its own thread-safe counters, so any admin thread may render at any time.
 */
final class RemoteMemberReport {
    private final Map<String, List<RemoteBlockDevice>> byArray;

    /** @param byArray each array's remote members and spares, by array name */
    RemoteMemberReport(Map<String, List<RemoteBlockDevice>> byArray) {
        this.byArray = byArray;
    }

    /** One read-only attribute per remote member: {@code ARRAY/remote/N}, its status line. */
    static void registerControls(ControlRegistry registry, String array, List<RemoteBlockDevice> devices) {
        for (int i = 0; i < devices.size(); i++) {
            RemoteBlockDevice d = devices.get(i);
            registry.register(array + "/remote/" + i, ControlAttribute.readOnly(() -> line(d.status())));
        }
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
                        + " retries %d, reconnects %d", s.name(), s.state().name().toLowerCase(Locale.ROOT),
                s.connectionsUp(), s.connections(), s.queueDepth(), s.inFlight(), s.peakInFlight(), s.commands(),
                s.meanLatencyMicros(), s.retries(), s.reconnects());
    }

    String prometheus() {
        if (byArray.values().stream().allMatch(List::isEmpty)) {
            return "";
        }
        StringBuilder out = new StringBuilder();
        out.append("# TYPE stripestack_remote_member_connected gauge\n");
        each(out, "stripestack_remote_member_connected", s -> s.state() == RemoteMemberStatus.State.CONNECTED ? 1 : 0);
        out.append("# TYPE stripestack_remote_member_sessions_up gauge\n");
        each(out, "stripestack_remote_member_sessions_up", RemoteMemberStatus::connectionsUp);
        out.append("# TYPE stripestack_remote_member_queue_depth gauge\n");
        each(out, "stripestack_remote_member_queue_depth", RemoteMemberStatus::queueDepth);
        out.append("# TYPE stripestack_remote_member_in_flight gauge\n");
        each(out, "stripestack_remote_member_in_flight", RemoteMemberStatus::inFlight);
        out.append("# TYPE stripestack_remote_member_latency_microseconds gauge\n");
        each(out, "stripestack_remote_member_latency_microseconds", RemoteMemberStatus::meanLatencyMicros);
        out.append("# TYPE stripestack_remote_member_commands_total counter\n");
        each(out, "stripestack_remote_member_commands_total", RemoteMemberStatus::commands);
        out.append("# TYPE stripestack_remote_member_retries_total counter\n");
        each(out, "stripestack_remote_member_retries_total", RemoteMemberStatus::retries);
        out.append("# TYPE stripestack_remote_member_reconnects_total counter\n");
        each(out, "stripestack_remote_member_reconnects_total", RemoteMemberStatus::reconnects);
        return out.toString();
    }

    private void each(StringBuilder out, String metric, java.util.function.ToLongFunction<RemoteMemberStatus> value) {
        for (Map.Entry<String, List<RemoteBlockDevice>> e : byArray.entrySet()) {
            for (RemoteBlockDevice d : e.getValue()) {
                RemoteMemberStatus s = d.status();
                out.append(metric).append("{array=\"").append(e.getKey()).append("\",member=\"").append(s.name())
                        .append("\",state=\"").append(s.state().name().toLowerCase(Locale.ROOT)).append("\"} ")
                        .append(value.applyAsLong(s)).append('\n');
            }
        }
    }
}
