package io.stripestack.initiator;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The session's sequence numbers (RFC 7143 section 4.2.2). The CmdSN window (the next CmdSN and the target's
 * MaxCmdSN) is guarded by this object's monitor: senders wait on it for the window to open, {@code iscsi-reader}
 * widens it, and a failure wakes the waiters. ExpStatSN is written by {@code iscsi-reader} only and read by
 * senders without a lock (volatile); a value one status behind only delays the target's freeing of that status.
 */
final class SessionSequence {
    private int cmdSn;
    private int maxCmdSn;
    private volatile int expStatSn;

    /**
     * Takes the window the target announced in its last Login Response, and the status after that
     * response's StatSN as the first one expected (RFC 7143 section 11.13.4: the StatSN of the final login
     * response counts).
     */
    synchronized void open(int firstCmdSn, int maxCmdSn, int loginStatSn) {
        this.cmdSn = firstCmdSn;
        this.maxCmdSn = maxCmdSn;
        this.expStatSn = loginStatSn + 1;
    }

    /**
     * Waits for the window to open and takes the next CmdSN. The caller holds sendLock, so CmdSN order is wire
     * order. The lifecycle is passed in rather than held because it, in turn, wakes this object's waiters.
     */
    int takeCmdSn(Duration timeout, ConnectionLifecycle lifecycle) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (this) {
            for (;;) {
                if (cmdSn - maxCmdSn <= 0) {
                    return cmdSn++;
                }
                lifecycle.ensureOpen();
                long wait = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (wait <= 0) {
                    break;
                }
                try {
                    wait(wait);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException(lifecycle.description()
                            + ": interrupted waiting for the command window");
                }
            }
        }
        // outside the monitor: failing takes every task slot's monitor
        throw lifecycle.fail("the target kept its command window closed for " + timeout.toSeconds() + " s");
    }

    /** The CmdSN an immediate PDU carries: the next one, not taken (RFC 7143 section 3.2.2.1). */
    synchronized int nextCmdSn() {
        return cmdSn;
    }

    int expStatSn() {
        return expStatSn;
    }

    /** iscsi-reader only. */
    void advanceStatSn(int statSn) {
        if (statSn + 1 - expStatSn > 0) {
            expStatSn = statSn + 1;
        }
    }

    /** iscsi-reader only: a target PDU's ExpCmdSN and MaxCmdSN. */
    void updateWindow(int expCmdSn, int newMaxCmdSn) {
        if (newMaxCmdSn - expCmdSn < -1) {
            return; // RFC 7143 4.2.2.1: such values are ignored
        }
        synchronized (this) {
            if (newMaxCmdSn - maxCmdSn > 0) {
                maxCmdSn = newMaxCmdSn;
                notifyAll();
            }
        }
    }

    synchronized void wakeWindowWaiters() {
        notifyAll();
    }
}
