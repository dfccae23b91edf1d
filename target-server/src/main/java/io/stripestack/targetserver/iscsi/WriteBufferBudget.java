package io.stripestack.targetserver.iscsi;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/**
 * The byte budget for SCSI write (Data-Out) buffers of every connection of one server, so that
 * initiators announcing large writes cannot make the target allocate more than it can afford: each
 * write command's buffer is its whole Expected Data Transfer Length, up to
 * {@link IscsiConnection#MAX_WRITE_TRANSFER}, and a session may have its whole CmdSN window of them.
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
 * <p>Concurrency: thread-safe; every method may be called from any event loop (and
 * {@link #release} from an I/O worker). The monitor of this object guards the pool counters, the
 * queue and the two budget fields of each {@link IscsiTask} ({@code budgetHeld},
 * {@code unsolicitedHeld}, {@code queuedForBudget}). A grant made by a release on another thread is
 * delivered with {@link IscsiConnection#writeBufferGranted}, outside the monitor, which hops onto the
 * task's event loop; a grant and an abort of the same task may cross, so releasing is idempotent.
 */
final class WriteBufferBudget {
    private final long budgetBytes;
    private final long unsolicitedAllowanceBytes;
    private final ArrayDeque<IscsiTask> queue = new ArrayDeque<>();
    private long grantedBytes;
    private long unsolicitedBytes;
    private long peakBytes;
    private final LongAdder commandsWaited = new LongAdder();
    private final LongAdder commandsRefused = new LongAdder();

    WriteBufferBudget(long budgetBytes) {
        this.budgetBytes = budgetBytes;
        this.unsolicitedAllowanceBytes = budgetBytes / 4;
    }

    long budgetBytes() {
        return budgetBytes;
    }

    long unsolicitedAllowanceBytes() {
        return unsolicitedAllowanceBytes;
    }

    /** Takes the task's whole buffer from the budget if nobody waits and it fits; never queues. */
    synchronized boolean tryReserve(IscsiTask task) {
        if (!queue.isEmpty() || !fits(task.expectedTransferLength())) {
            return false;
        }
        grant(task);
        return true;
    }

    /**
     * Takes the task's whole buffer from the budget like {@link #tryReserve}, or else queues the task
     * and returns false; {@link IscsiConnection#writeBufferGranted} follows when it is granted.
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
        if (unsolicitedBytes + bytes > unsolicitedAllowanceBytes) {
            return false;
        }
        unsolicitedBytes += bytes;
        task.unsolicitedHeld = bytes;
        notePeak();
        return true;
    }

    /** The task's unsolicited data moved into its granted buffer: its allowance returns. */
    synchronized void releaseUnsolicited(IscsiTask task) {
        unsolicitedBytes -= task.unsolicitedHeld;
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
            task.unsolicitedHeld = 0;
            if (task.budgetHeld) {
                task.budgetHeld = false;
                grantedBytes -= task.expectedTransferLength();
            } else if (task.queuedForBudget) {
                task.queuedForBudget = false;
                queue.remove(task);
            } else {
                return;
            }
            while (!queue.isEmpty() && fits(queue.peek().expectedTransferLength())) {
                IscsiTask next = queue.poll();
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
                next.connection.writeBufferGranted(next);
            }
        }
    }

    private boolean fits(long bytes) {
        return grantedBytes == 0 || grantedBytes + bytes <= budgetBytes;
    }

    private void grant(IscsiTask task) {
        grantedBytes += task.expectedTransferLength();
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
