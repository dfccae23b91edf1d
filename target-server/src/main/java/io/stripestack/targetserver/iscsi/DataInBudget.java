package io.stripestack.targetserver.iscsi;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * Bounds the Data-In all sessions hold: a read holds its Expected Data Transfer Length from its
 * dispatch until its last Data-In PDU has been written to the socket, so an initiator that sends
 * reads and never takes the data (a slow or hostile reader) holds at most its session's share, and
 * all of them together at most the budget. A read that does not fit waits in its session's
 * {@link DataInSender}, whose connection stops reading the socket meanwhile; when bytes return, every
 * session waiting for the server-wide budget is told to try again.
 *
 * <p>One read always fits when its session holds nothing (and the server nothing), so a read larger
 * than a share still runs, alone.
 *
 * <p>Concurrency: every method is called on connections' event loops; the totals and the queue of
 * waiting sessions are guarded by this object's monitor, and the wake-ups run outside it.
 */
final class DataInBudget {
    private final long budget;
    private final long perSession;
    private long held;
    private long peak;
    private long waits;
    private final ArrayDeque<DataInSender> waiting = new ArrayDeque<>();

    DataInBudget(long budget, long perSession) {
        this.budget = budget;
        this.perSession = perSession;
    }

    /**
     * Reserves {@code bytes} for a read of {@code session}, which holds {@code sessionHeld}
     * already; false when it must wait (the session is then woken by a later release if it is
     * the server-wide budget that is short).
     */
    synchronized boolean tryReserve(DataInSender session, long sessionHeld, int bytes) {
        if (sessionHeld > 0 && sessionHeld + bytes > perSession) {
            waits++;
            return false; // its own release wakes it
        }
        if (held > 0 && held + bytes > budget) {
            waits++;
            if (!waiting.contains(session)) {
                waiting.add(session);
            }
            return false;
        }
        held += bytes;
        peak = Math.max(peak, held);
        return true;
    }

    void release(int bytes) {
        List<DataInSender> wake;
        synchronized (this) {
            held -= bytes;
            if (waiting.isEmpty()) {
                return;
            }
            wake = new ArrayList<>(waiting);
            waiting.clear();
        }
        for (DataInSender session : wake) {
            session.budgetReturned();
        }
    }

    /** A session that closed no longer waits. */
    synchronized void forget(DataInSender session) {
        waiting.remove(session);
    }

    synchronized DataInStats stats() {
        return new DataInStats(budget, perSession, held, peak, waits);
    }
}
