package io.stripestack.targetserver.iscsi;

/**
 * Where a session's parts hand a task on: from its data phase to execution, from waiting for Data-In room to
 * the I/O executor, or out of the session without an answer. {@link ScsiCommands} implements it; a part's test
 * implements it with a fake that records what it was handed.
 *
 * <p>Concurrency: every method is called on the connection's event loop.
 */
interface TaskPipeline {
    /**
     * The task's data phase is over (or it had none): it runs, unless its data went wrong or found no buffer
     * (answered at once), or a read finds no Data-In room (it runs when room returns).
     */
    void dispatch(IscsiTask task);

    /** A dispatched task that had to wait (Data-In room, its copy's turn) may run now: onto the I/O executor. */
    void execute(IscsiTask task);

    /**
     * Takes a dispatched task out of whatever it waits for before it runs (Data-In room, the copy gate); false
     * when it waits for nothing there (it is executing, or still collecting data).
     */
    boolean withdrawWaiting(IscsiTask task);

    /**
     * A task that never ran ends without an answer (aborted, logout, connection loss): forgotten, its CmdSN
     * slot and buffers returned.
     */
    void dropUnstarted(IscsiTask task);
}
