package io.stripestack.targetserver.iscsi;

import java.util.HashMap;
import java.util.Map;

/**
 * The server's normal sessions by I_T nexus, for session reinstatement (RFC 7143 section 6.3.5:
 * a login with the same initiator name and ISID and TSIH 0 replaces the old session), and TSIH
 * allocation. With MaxConnections 1, a session is its one connection.
 *
 * <p>Concurrency: connections on different event loops call it; every method is synchronized on
 * the registry (short critical sections, no I/O under the lock).
 */
final class SessionRegistry {
    private final Map<String, IscsiConnection> sessions = new HashMap<>();
    private int lastTsih;

    /** The I_T nexus a normal session of {@code initiator} with {@code isid} to {@code target} has. */
    static String nexus(String initiator, long isid, IscsiTargetDefinition target, IscsiServerSettings settings) {
        return initiator + ",i,0x" + String.format("%012x", isid) + "," + target.iqn()
                + ",t,0x" + String.format("%04x", settings.targetPortalGroupTag());
    }

    /** A TSIH for a new session: 1..65535, cycling, never 0. */
    synchronized int allocateTsih() {
        lastTsih = lastTsih % 65535 + 1;
        return lastTsih;
    }

    /** Registers {@code connection} under {@code nexus}; returns the session it replaces, or null. */
    synchronized IscsiConnection register(String nexus, IscsiConnection connection) {
        return sessions.put(nexus, connection);
    }

    /** Whether a session holds the nexus now (a login with it reinstates that session). */
    synchronized boolean holds(String nexus) {
        return sessions.containsKey(nexus);
    }

    /** Removes the nexus if {@code connection} still holds it; true if it did (it must then report nexus removal). */
    synchronized boolean unregister(String nexus, IscsiConnection connection) {
        return sessions.remove(nexus, connection);
    }

    /** A snapshot of every registered session's connection. */
    synchronized java.util.List<IscsiConnection> connections() {
        return new java.util.ArrayList<>(sessions.values());
    }

    synchronized int size() {
        return sessions.size();
    }
}
