package io.stripestack.targetserver.server;

import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Status;
import io.stripestack.remote.RemoteBlockDevice;
import io.stripestack.remote.RemoteMemberStatus;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the arrays in step with their remote members' connections, every {@value #INTERVAL_SECONDS} s. A remote
 * member the array still holds as working but whose device was given up (its idle probe found the target gone
 * and the retry window passed, with no array I/O to notice) is failed in the array, so the array's status says
 * degraded as the member's does. A remote member the array holds as faulty and whose connection was given up
 * is asked to connect again; once it does, the array re-adds it ({@link Raid5Array#reAddMember}), which with
 * the write-intent bitmap rebuilds only the regions written while it was away. A member that failed for another
 * reason (a MEDIUM ERROR on a live connection), or whose target broke the protocol, is left faulty for the
 * operator, as a failing local disk is.
 *
 * <p>Threads: one daemon thread ({@code stripestack-remote-returns}) does all of it; the maps are
 * {@link LiveArrays}' concurrent maps, changed when an array with remote members is created or stopped or
 * given a remote spare at run time. {@link #close} stops it and waits for a running round.
 */
final class RemoteMemberReturns implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RemoteMemberReturns.class);
    static final int INTERVAL_SECONDS = 2;

    private final Map<String, Raid5Array> arrays;
    private final Map<String, List<RemoteBlockDevice>> remoteMembers;
    private ScheduledExecutorService thread;

    RemoteMemberReturns(Map<String, Raid5Array> arrays, Map<String, List<RemoteBlockDevice>> remoteMembers) {
        this.arrays = arrays;
        this.remoteMembers = remoteMembers;
    }

    /** Starts watching (an array with remote members may also come at run time). */
    void start() {
        thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "stripestack-remote-returns");
            t.setDaemon(true);
            return t;
        });
        thread.scheduleWithFixedDelay(this::round, INTERVAL_SECONDS, INTERVAL_SECONDS, TimeUnit.SECONDS);
    }

    private void round() {
        try {
            reAddReturnedMembers();
        } catch (RuntimeException e) {
            log.warn("looking for returned remote members failed: {}", e.toString()); // the next round tries again
        }
    }

    private void reAddReturnedMembers() {
        for (Map.Entry<String, List<RemoteBlockDevice>> e : remoteMembers.entrySet()) {
            Raid5Array array = arrays.get(e.getKey());
            if (array == null) {
                continue;   // stopped at run time meanwhile
            }
            for (Raid5Status.Member m : array.status().members()) {
                if (m.state() == Raid5Status.MemberState.ACTIVE || m.state() == Raid5Status.MemberState.REBUILDING) {
                    failGivenUp(e.getKey(), array, m, e.getValue());
                    continue;
                }
                if (m.state() != Raid5Status.MemberState.FAULTY) {
                    continue;
                }
                for (RemoteBlockDevice d : e.getValue()) {
                    if (d.name().equals(m.device()) && d.status().state() == RemoteMemberStatus.State.FAILED
                            && d.reconnect()) {
                        reAdd(e.getKey(), array, m.role(), d);
                    }
                }
            }
        }
    }

    private static void failGivenUp(String name, Raid5Array array, Raid5Status.Member m,
            List<RemoteBlockDevice> devices) {
        for (RemoteBlockDevice d : devices) {
            if (d.name().equals(m.device()) && d.status().state() == RemoteMemberStatus.State.FAILED) {
                log.warn("array {}: the target of member {} ({}) was given up while the array was idle; failing"
                        + " the member", name, m.role(), d.name());
                try {
                    array.failMember(m.role());
                } catch (IOException | RuntimeException e) {
                    log.warn("array {}: failing member {} ({}): {}", name, m.role(), d.name(), e.toString());
                }
            }
        }
    }

    private static void reAdd(String name, Raid5Array array, int role, RemoteBlockDevice d) {
        try {
            boolean partial = array.reAddMember(role);
            log.info("array {}: the target of member {} ({}) is back; re-added, {}", name, role, d.name(),
                    partial ? "rebuilding only the regions written meanwhile" : "rebuilding it whole (no bitmap)");
        } catch (IllegalStateException | IllegalArgumentException refused) {
            log.warn("array {}: member {} ({}) is reachable again but not re-added: {}", name, role, d.name(),
                    refused.getMessage());
        }
    }

    @Override
    public void close() {
        if (thread == null) {
            return;
        }
        thread.shutdown();
        try {
            thread.awaitTermination(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
