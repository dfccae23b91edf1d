package io.stripestack.targetserver.iscsi;

import io.stripestack.targetserver.scsi.CopyLimits;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Bounds the EXTENDED COPY commands the I/O workers process at once (see {@link CopyLimits}): at most
 * {@link CopyLimits#CONCURRENT_COPIES} in the server and {@link CopyLimits#CONCURRENT_COPIES_PER_SESSION} per
 * session. A copy beyond them waits here, holding no worker, in its session's queue (bounded by the session's
 * CmdSN window); when a copy ends, the sessions with copies waiting are served in turn, so one session queueing
 * many copies delays another's by one copy at most. Ordinary commands never pass through here.
 *
 * <p>Concurrency: thread-safe (this object's monitor guards the queues and counts). A copy granted by another
 * session's end is delivered with {@link SessionTasks#copyGranted}, outside the monitor, which hops onto the
 * task's event loop.
 */
final class CopyGate {
    private static final class Session {
        final ArrayDeque<IscsiTask> waiting = new ArrayDeque<>();
        int running;
    }

    private final Map<SessionTasks, Session> sessions = new IdentityHashMap<>();
    /** Sessions with copies waiting, in the order they are served. */
    private final ArrayDeque<SessionTasks> turns = new ArrayDeque<>();
    private int running;

    /** The copy may run now (true; {@link #ended} must follow), or it waits for {@link SessionTasks#copyGranted}. */
    synchronized boolean tryStart(IscsiTask copy) {
        Session session = sessions.computeIfAbsent(copy.session, c -> new Session());
        if (session.waiting.isEmpty() && session.running < CopyLimits.CONCURRENT_COPIES_PER_SESSION
                && running < CopyLimits.CONCURRENT_COPIES) {
            start(session);
            return true;
        }
        if (session.waiting.isEmpty()) {
            turns.add(copy.session);
        }
        session.waiting.add(copy);
        return false;
    }

    /** A copy that {@link #tryStart} or a grant let run has ended: the next ones waiting are granted. */
    void ended(IscsiTask copy) {
        List<IscsiTask> granted = new ArrayList<>(1);
        synchronized (this) {
            running--;
            Session session = sessions.get(copy.session);
            if (--session.running == 0 && session.waiting.isEmpty()) {
                sessions.remove(copy.session);
            }
            grantWaiting(granted);
        }
        for (IscsiTask next : granted) {
            next.session.copyGranted(next);
        }
    }

    /** Takes a waiting copy out (aborted before it ran); false if it is not waiting here. */
    synchronized boolean withdraw(IscsiTask copy) {
        Session session = sessions.get(copy.session);
        if (session == null || !session.waiting.remove(copy)) {
            return false;
        }
        forgetIfIdle(copy.session, session);
        return true;
    }

    /** The session ended: returns its waiting copies, which never run. */
    synchronized List<IscsiTask> withdrawAll(SessionTasks owner) {
        Session session = sessions.get(owner);
        if (session == null) {
            return List.of();
        }
        List<IscsiTask> withdrawn = new ArrayList<>(session.waiting);
        session.waiting.clear();
        forgetIfIdle(owner, session);
        return withdrawn;
    }

    private void forgetIfIdle(SessionTasks owner, Session session) {
        if (session.waiting.isEmpty()) {
            turns.remove(owner);
            if (session.running == 0) {
                sessions.remove(owner);
            }
        }
    }

    /** Grants waiting copies while the server has room, one per session in turn. */
    private void grantWaiting(List<IscsiTask> granted) {
        for (int passes = turns.size(); passes > 0 && running < CopyLimits.CONCURRENT_COPIES; passes--) {
            SessionTasks next = turns.poll();
            Session session = sessions.get(next);
            if (session.running >= CopyLimits.CONCURRENT_COPIES_PER_SESSION) {
                turns.add(next);
                continue;
            }
            granted.add(session.waiting.poll());
            start(session);
            if (!session.waiting.isEmpty()) {
                turns.add(next);
            }
        }
    }

    private void start(Session session) {
        session.running++;
        running++;
    }
}
