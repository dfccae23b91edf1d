package io.stripestack.targetserver.server;

import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Status;
import io.stripestack.remote.RemoteBlockDevice;
import io.stripestack.remote.RemoteMemberStatus;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Re-adds a remote member whose target comes back: every {@value #INTERVAL_SECONDS} s, each remote member the
 * array holds as faulty and whose connection was given up (its retry window passed) is asked to connect again;
 * once it does, the array re-adds it ({@link Raid5Array#reAddMember}), which with the write-intent bitmap
 * rebuilds only the regions written while it was away. A member that failed for another reason (a MEDIUM ERROR
 * on a live connection) is left faulty for the operator, as a failing local disk is.
 *
 * <p>Threads: one daemon thread ({@code stripestack-remote-returns}) does all of it; the maps are filled
 * before {@link #start} and not changed afterwards. {@link #close} stops it and waits for a running round.
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

    /** Starts watching, if any array has remote members. */
    void start() {
        if (remoteMembers.values().stream().allMatch(List::isEmpty)) {
            return;
        }
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
            for (Raid5Status.Member m : array.status().members()) {
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
