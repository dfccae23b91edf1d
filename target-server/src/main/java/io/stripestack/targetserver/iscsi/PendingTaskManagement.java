package io.stripestack.targetserver.iscsi;

/**
 * A task management request whose response waits until every task it aborted has finished
 * executing (RFC 7143 section 4.2.3.3: the response follows the termination of the affected tasks),
 * then runs its reset action, if any, off the event loop.
 *
 * <p>Concurrency: event loop only.
 */
final class PendingTaskManagement {
    final int itt;
    final int function;
    final long lun;
    int tasksRemaining;

    PendingTaskManagement(int itt, int function, long lun) {
        this.itt = itt;
        this.function = function;
        this.lun = lun;
    }
}
