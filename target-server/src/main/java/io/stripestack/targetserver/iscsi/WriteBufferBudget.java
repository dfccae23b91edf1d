package io.stripestack.targetserver.iscsi;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The byte budget for SCSI write (Data-Out) buffers of every connection of one server, so that
 * initiators announcing large writes cannot make the target allocate more than it can afford: each
 * write command's buffer is its whole Expected Data Transfer Length, up to
 * {@link ScsiCommands#MAX_WRITE_TRANSFER}, and a session may have its whole CmdSN window of them.
 *
 * <p>Why per server: the memory at risk is the process's, shared by all sessions and event loops;
 * a per-connection budget would still grow with the number of connections. Fairness between
 * sessions comes from one FIFO of waiting commands.
 *
 * <p>Two pools:
 * <ul>
 *   <li>The <em>budget</em> ({@link IscsiServerSettings#writeBufferBudget()}) holds whole buffers.
 *       A command whose buffer does not fit waits in FIFO order (arrival order, which on one
 *       connection is CmdSN order) and gets no R2T until it is granted; later commands wait behind
 *       it even if they would fit, so a large command is not starved by small ones. A command
 *       larger than the whole budget is granted when nothing else holds budget.</li>
 *   <li>The <em>unsolicited allowance</em>, a quarter of the budget, holds what a waiting command's
 *       initiator may send before any R2T (immediate data, and unsolicited Data-Out up to
 *       FirstBurstLength when InitialR2T=No): the target must take those bytes at once. A write
 *       that fits entirely in its unsolicited data needs nothing more and does not wait. When the
 *       allowance is exhausted too, the connection answers the command TASK SET FULL.</li>
 * </ul>
 * So the write buffers in use never exceed max(budget, largest single command) plus the allowance.
 *
 * <p>Each session may hold at most its <em>share</em> ({@link IscsiServerSettings#writeBufferPerSession()}) of
 * the budget, or one command when it holds nothing, and a quarter of its share of the allowance: a command
 * beyond its session's share waits behind that session's earlier ones (or, for its unsolicited data, is
 * refused) without holding up the queue for other sessions, so a few sessions whose writes stall cannot hold
 * the whole budget while their data never comes.
 *
 * <p>Concurrency: thread-safe; every method may be called from any event loop (and
 * {@link #release} from an I/O worker). The monitor of this object guards the pool counters, the
 * queue, the three budget fields of each {@link IscsiTask} ({@code budgetHeld},
 * {@code unsolicitedHeld}, {@code queuedForBudget}) and each session's {@link SessionTasks#writeBufferHeld} and
 * {@link SessionTasks#unsolicitedHeld}. A grant made by a release on another thread is
 * delivered with {@link SessionTasks#writeBufferGranted}, outside the monitor, which hops onto the
 * task's event loop; a grant and an abort of the same task may cross, so releasing is idempotent.
 */
final class WriteBufferBudget {
    private final long budgetBytes;
    private final long unsolicitedAllowanceBytes;
    private final long perSessionBytes;
    /** Sessions whose first waiting command their share holds back, during one pass over the queue. */
    private final Map<SessionTasks, Boolean> passedSessions = new IdentityHashMap<>();
    private final ArrayDeque<IscsiTask> queue = new ArrayDeque<>();
    private long grantedBytes;
    private long unsolicitedBytes;
    private long peakBytes;
    private final LongAdder commandsWaited = new LongAdder();
    private final LongAdder commandsRefused = new LongAdder();

    WriteBufferBudget(long budgetBytes, long perSessionBytes) {
        this.budgetBytes = budgetBytes;
        this.unsolicitedAllowanceBytes = budgetBytes / 4;
        this.perSessionBytes = perSessionBytes;
    }

    long budgetBytes() {
        return budgetBytes;
    }

    long unsolicitedAllowanceBytes() {
        return unsolicitedAllowanceBytes;
    }

    /**
     * Takes the task's whole buffer from the budget if it fits, its session's share too, and no command of
     * another session that its own share allows waits for room; never queues.
     */
    synchronized boolean tryReserve(IscsiTask task) {
        long bytes = task.expectedTransferLength();
        if (!shareFits(task.session, bytes) || !fits(bytes) || mustWaitBehindQueue(task.session)) {
            return false;
        }
        grant(task);
        return true;
    }

    /**
     * Whether a new command of {@code session} must queue behind the waiting ones: the session has one waiting
     * (a session's commands are granted in order), or another session's first waiting command is held back by
     * the budget rather than by its session's share.
     */
    private boolean mustWaitBehindQueue(SessionTasks session) {
        if (queue.isEmpty()) {
            return false;
        }
        passedSessions.clear();
        for (IscsiTask waiting : queue) {
            if (waiting.session == session) {
                return true;
            }
            if (passedSessions.containsKey(waiting.session)) {
                continue;
            }
            if (shareFits(waiting.session, waiting.expectedTransferLength())) {
                return true;
            }
            passedSessions.put(waiting.session, Boolean.TRUE);
        }
        return false;
    }

    /**
     * Takes the task's whole buffer from the budget like {@link #tryReserve}, or else queues the task
     * and returns false; {@link SessionTasks#writeBufferGranted} follows when it is granted.
     */
    synchronized boolean reserveOrQueue(IscsiTask task) {
        if (tryReserve(task)) {
            return true;
        }
        task.queuedForBudget = true;
        queue.add(task);
        commandsWaited.increment();
        return false;
    }

    /** Takes {@code bytes} of unsolicited data for the task from the allowance, if they fit. */
    synchronized boolean tryHoldUnsolicited(IscsiTask task, int bytes) {
        SessionTasks session = task.session;
        if (unsolicitedBytes + bytes > unsolicitedAllowanceBytes
                || session.unsolicitedHeld != 0 && session.unsolicitedHeld + bytes > perSessionBytes / 4) {
            return false;
        }
        unsolicitedBytes += bytes;
        task.unsolicitedHeld = bytes;
        session.unsolicitedHeld += bytes;
        notePeak();
        return true;
    }

    /** The task's unsolicited data moved into its granted buffer: its allowance returns. */
    synchronized void releaseUnsolicited(IscsiTask task) {
        unsolicitedBytes -= task.unsolicitedHeld;
        task.session.unsolicitedHeld -= task.unsolicitedHeld;
        task.unsolicitedHeld = 0;
    }

    /** A write command answered TASK SET FULL because the allowance was exhausted. */
    void countRefusal() {
        commandsRefused.increment();
    }

    /**
     * Returns everything the task holds or takes it out of the queue, then grants queued commands
     * that fit now. Idempotent; any thread.
     */
    void release(IscsiTask task) {
        List<IscsiTask> granted = null;
        synchronized (this) {
            unsolicitedBytes -= task.unsolicitedHeld;
            task.session.unsolicitedHeld -= task.unsolicitedHeld;
            task.unsolicitedHeld = 0;
            if (task.budgetHeld) {
                task.budgetHeld = false;
                grantedBytes -= task.expectedTransferLength();
                task.session.writeBufferHeld -= task.expectedTransferLength();
            } else if (task.queuedForBudget) {
                task.queuedForBudget = false;
                queue.remove(task);
            } else {
                return;
            }
            // in arrival order; a command its share holds back is passed over with its session's later ones, the
            // first one the budget holds back stops the round, so that a large command is not starved by small ones
            passedSessions.clear();
            for (Iterator<IscsiTask> it = queue.iterator(); it.hasNext(); ) {
                IscsiTask next = it.next();
                long bytes = next.expectedTransferLength();
                if (passedSessions.containsKey(next.session)) {
                    continue;
                }
                if (!shareFits(next.session, bytes)) {
                    passedSessions.put(next.session, Boolean.TRUE);
                    continue;
                }
                if (!fits(bytes)) {
                    break;
                }
                it.remove();
                next.queuedForBudget = false;
                grant(next);
                if (granted == null) {
                    granted = new ArrayList<>();
                }
                granted.add(next);
            }
        }
        if (granted != null) {
            for (IscsiTask next : granted) {
                next.session.writeBufferGranted(next);
            }
        }
    }

    private boolean fits(long bytes) {
        return grantedBytes == 0 || grantedBytes + bytes <= budgetBytes;
    }

    private boolean shareFits(SessionTasks session, long bytes) {
        return session.writeBufferHeld == 0 || session.writeBufferHeld + bytes <= perSessionBytes;
    }

    private void grant(IscsiTask task) {
        grantedBytes += task.expectedTransferLength();
        task.session.writeBufferHeld += task.expectedTransferLength();
        task.budgetHeld = true;
        notePeak();
    }

    private void notePeak() {
        peakBytes = Math.max(peakBytes, grantedBytes + unsolicitedBytes);
    }

    synchronized WriteBufferStats stats() {
        return new WriteBufferStats(budgetBytes, unsolicitedAllowanceBytes, grantedBytes + unsolicitedBytes, peakBytes,
                queue.size(), commandsWaited.sum(), commandsRefused.sum());
    }
}
