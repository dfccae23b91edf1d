package io.stripestack.targetserver.scsi;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Pending unit attention conditions of one logical unit, per I_T nexus (SAM-5 5.14): each nexus has its
 * own queue, reported one at a time (oldest first) by the next command that is not INQUIRY, REPORT LUNS or
 * REQUEST SENSE, or returned by REQUEST SENSE.
 *
 * <p>Concurrency: nexuses are kept in a {@link ConcurrentHashMap}; each nexus's queue is guarded by its
 * own monitor, and a volatile count lets every command check "nothing pending" without locking.
 */
final class UnitAttentions {
    /** POWER ON, RESET, OR BUS DEVICE RESET OCCURRED. */
    static final int POWER_ON_RESET = 0x2900;
    /** BUS DEVICE RESET FUNCTION OCCURRED (a LOGICAL UNIT RESET). */
    static final int DEVICE_RESET = 0x2903;
    /** MODE PARAMETERS CHANGED. */
    static final int MODE_PARAMETERS_CHANGED = 0x2A01;
    /** RESERVATIONS PREEMPTED. */
    static final int RESERVATIONS_PREEMPTED = 0x2A03;
    /** RESERVATIONS RELEASED. */
    static final int RESERVATIONS_RELEASED = 0x2A04;
    /** REGISTRATIONS PREEMPTED. */
    static final int REGISTRATIONS_PREEMPTED = 0x2A05;
    /** CAPACITY DATA HAS CHANGED (the medium grew at run time). */
    static final int CAPACITY_DATA_CHANGED = 0x2A09;

    /** REPORTED LUNS DATA HAS CHANGED (the target's LUN inventory changed at run time). */
    static final int REPORTED_LUNS_DATA_CHANGED = 0x3F0E;

    /** Conditions beyond this many per nexus are dropped; SAM lets a device server keep only some. */
    private static final int CAPACITY = 8;

    private final ConcurrentHashMap<String, Queue> byNexus = new ConcurrentHashMap<>();

    void forget(String nexus) {
        byNexus.remove(nexus);
    }

    /** Queues {@code code} (ASC << 8 | ASCQ) for {@code nexus}. */
    void raise(String nexus, int code) {
        queue(nexus).add(code);
    }

    /** Queues {@code code} for every tracked nexus except {@code except} (null: for all). */
    void raiseForOthers(String except, int code) {
        for (var entry : byNexus.entrySet()) {
            if (!entry.getKey().equals(except)) {
                entry.getValue().add(code);
            }
        }
    }

    /**
     * Removes and returns the oldest pending condition of {@code nexus}, or -1 if none. Starts tracking a
     * nexus the router was not told about, so later conditions reach it too.
     */
    int take(String nexus) {
        return queue(nexus).poll();
    }

    private Queue queue(String nexus) {
        Queue q = byNexus.get(nexus);
        return q != null ? q : byNexus.computeIfAbsent(nexus, n -> new Queue());
    }

    private static final class Queue {
        private final int[] codes = new int[CAPACITY];
        private volatile int count;

        synchronized void add(int code) {
            for (int i = 0; i < count; i++) {
                if (codes[i] == code) {
                    return;
                }
            }
            if (count < CAPACITY) {
                codes[count] = code;
                count = count + 1;
            }
        }

        int poll() {
            if (count == 0) {
                return -1;
            }
            synchronized (this) {
                if (count == 0) {
                    return -1;
                }
                int first = codes[0];
                System.arraycopy(codes, 1, codes, 0, count - 1);
                count = count - 1;
                return first;
            }
        }
    }
}
