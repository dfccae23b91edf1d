package io.stripestack.targetserver.iscsi;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A {@link TaskPipeline} for a part's test: records what the part handed on, in order, and withdraws only the
 * tasks the test put in {@link #waiting}.
 *
 * <p>Concurrency: one test thread.
 */
final class RecordingPipeline implements TaskPipeline {
    final List<IscsiTask> dispatched = new ArrayList<>();
    final List<IscsiTask> executed = new ArrayList<>();
    final List<IscsiTask> dropped = new ArrayList<>();
    /** Tasks that wait for Data-In room or their copy's turn. */
    final Set<IscsiTask> waiting = new HashSet<>();

    @Override
    public void dispatch(IscsiTask task) {
        dispatched.add(task);
    }

    @Override
    public void execute(IscsiTask task) {
        executed.add(task);
    }

    @Override
    public boolean withdrawWaiting(IscsiTask task) {
        return waiting.remove(task);
    }

    @Override
    public void dropUnstarted(IscsiTask task) {
        dropped.add(task);
    }
}
