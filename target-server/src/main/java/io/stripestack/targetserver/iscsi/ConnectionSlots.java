package io.stripestack.targetserver.iscsi;

import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.Map;

/**
 * Who holds the server's connection slots ({@link IscsiServerSettings#maxConnections()}), so that clients that
 * never authenticate cannot take them all:
 * <ul>
 *   <li>one remote address holds at most {@link IscsiServerSettings#maxConnectionsPerAddress()} connections,
 *       whatever their phase; one more from it is refused at once;</li>
 *   <li>one initiator name holds at most {@link IscsiServerSettings#maxSessionsPerInitiator()} normal sessions;
 *       one more login under it is refused (out of resources);</li>
 *   <li>when every slot is taken, a new connection takes the slot of the oldest connection that is still logging
 *       in or is a discovery session (that one is closed); only when every slot holds a normal session is the
 *       new connection refused. Logged-in sessions are never closed for a newcomer.</li>
 * </ul>
 *
 * <p>Concurrency: thread-safe (this object's monitor); connections of every event loop call it, and the
 * connection to close is closed by the caller outside the monitor.
 */
final class ConnectionSlots {
    /**
     * What {@link #admit} decided: admitted, possibly displacing another connection (which the caller closes), or
     * refused for the reason given (the configuration key that bounds it).
     */
    record Admission(boolean admitted, IscsiConnection displaced, String refusal) {
        static final Admission ADMITTED = new Admission(true, null, null);
    }

    private static final class Slot {
        final String address;
        /** The initiator name of a normal session; null while logging in and for discovery sessions. */
        String initiator;

        Slot(String address) {
            this.address = address;
        }
    }

    private final int maxConnections;
    private final int perAddress;
    private final int perInitiator;
    private final Map<IscsiConnection, Slot> slots = new IdentityHashMap<>();
    /** Connections logging in or in discovery sessions, oldest first: the ones a newcomer may displace. */
    private final LinkedHashSet<IscsiConnection> displaceable = new LinkedHashSet<>();
    private final Map<String, Integer> byAddress = new HashMap<>();
    private final Map<String, Integer> byInitiator = new HashMap<>();

    ConnectionSlots(int maxConnections, int perAddress, int perInitiator) {
        this.maxConnections = maxConnections;
        this.perAddress = perAddress;
        this.perInitiator = perInitiator;
    }

    /** A new connection from {@code address}: admitted (it then holds a slot until {@link #release}) or refused. */
    synchronized Admission admit(IscsiConnection connection, String address) {
        if (byAddress.getOrDefault(address, 0) >= perAddress) {
            return new Admission(false, null,
                    perAddress + " connections from this address (server.max_connections_per_address)");
        }
        IscsiConnection displaced = null;
        if (slots.size() >= maxConnections) {
            if (displaceable.isEmpty()) {
                return new Admission(false, null, maxConnections + " sessions are logged in (server.max_connections)");
            }
            displaced = displaceable.iterator().next();
            remove(displaced);
        }
        slots.put(connection, new Slot(address));
        byAddress.merge(address, 1, Integer::sum);
        displaceable.add(connection);
        return displaced == null ? Admission.ADMITTED : new Admission(true, displaced, null);
    }

    /**
     * The connection's login succeeds into a normal session of {@code initiator}: from now on it cannot be
     * displaced. False, and nothing changes, when that name holds its limit of sessions already (or the
     * connection was displaced meanwhile). A login that {@code reinstates} a session of the name replaces it,
     * so it is not refused for the one it replaces, which is counted until it has closed.
     */
    synchronized boolean sessionStarting(IscsiConnection connection, String initiator, boolean reinstates) {
        Slot slot = slots.get(connection);
        if (slot == null || byInitiator.getOrDefault(initiator, 0) >= perInitiator + (reinstates ? 1 : 0)) {
            return false;
        }
        slot.initiator = initiator;
        byInitiator.merge(initiator, 1, Integer::sum);
        displaceable.remove(connection);
        return true;
    }

    /** The connection closed: its slot is free (nothing happens if it was displaced already). */
    synchronized void release(IscsiConnection connection) {
        remove(connection);
    }

    synchronized int size() {
        return slots.size();
    }

    private void remove(IscsiConnection connection) {
        Slot slot = slots.remove(connection);
        if (slot == null) {
            return;
        }
        displaceable.remove(connection);
        decrement(byAddress, slot.address);
        if (slot.initiator != null) {
            decrement(byInitiator, slot.initiator);
        }
    }

    private static void decrement(Map<String, Integer> counts, String key) {
        counts.computeIfPresent(key, (k, n) -> n == 1 ? null : n - 1);
    }
}
