package io.stripestack.remote;

import java.util.concurrent.TimeUnit;

/**
 * A remote member's current trouble with its target, shared by all its sessions: when it began (the retry window
 * is counted from there, not per session, so sessions that notice it later do not stretch it), when the next
 * login may be tried (the backoff, shared too, so the sessions do not each hammer the target), and, once the
 * window passed, why the member was given up: then every session fails its I/O at once.
 *
 * <p>Trouble is a lost connection (closed between PDUs, a command unanswered for the command timeout, a login
 * that fails) or a protocol error (the target broke RFC 7143: a short read it did not own up to, Data-In that
 * does not cover the transfer, an oversized segment, a wrong ITT, a close inside a PDU, a bad R2T). A login that
 * works does not end it: a target that logs in and then misbehaves again would otherwise reset the window on
 * every connection and be retried forever. A command that completes ends a loss; protocol errors end only when
 * commands have completed for a whole retry window since the last one, so a target that misbehaves on some
 * commands and not others is still given up.
 *
 * <p>Threads: any session's callers and the idle probe; every method is synchronized on this object except
 * the two volatile fast paths a healthy command takes ({@link #commandSucceeded}, {@link #isGivenUp}).
 */
final class Outage {
    static final long FIRST_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(2);

    private final long retryNanos;
    /** Whether trouble is under way; volatile so that a healthy command checks it without the monitor. */
    private volatile boolean active;
    private volatile String givenUp;
    /** System.nanoTime() of the first failure of this outage; meaningful only while {@link #active}. */
    private long start;
    private boolean protocolErrors;
    private long lastProtocolError;
    /** Whether the member was given up after protocol errors: then it is not tried again by itself. */
    private boolean misbehaved;
    private long nextLogin;
    private long backoff;
    /** Protocol errors since the member was opened, for status and metrics. */
    private long protocolErrorCount;

    Outage(long retryNanos) {
        this.retryNanos = retryNanos;
    }

    long retryNanos() {
        return retryNanos;
    }

    /** Notes a lost connection; returns the nanoTime at which the retry window of this outage ends. */
    synchronized long begin() {
        if (!active) {
            active = true;
            start = System.nanoTime();
            nextLogin = start;
            backoff = 0;
        }
        return start + retryNanos;
    }

    /** Notes a protocol error; returns the nanoTime at which the retry window of this outage ends. */
    synchronized long protocolError() {
        long deadline = begin();
        protocolErrorCount++;
        protocolErrors = true;
        lastProtocolError = System.nanoTime();
        return deadline;
    }

    /** How long the next login must wait (the backoff since the last one), in nanoseconds. */
    synchronized long loginDelay() {
        return Math.max(0, nextLogin - System.nanoTime());
    }

    /** A login was tried: the next one waits from 100 ms, doubling up to 2 s, until the outage ends. */
    synchronized void loginTried() {
        backoff = backoff == 0 ? FIRST_BACKOFF_NANOS : Math.min(backoff * 2, MAX_BACKOFF_NANOS);
        nextLogin = System.nanoTime() + backoff;
    }

    /**
     * A command completed: ends a loss, and protocol errors once none came for a whole retry window. Returns how
     * long the outage it ended lasted, in nanoseconds, or -1 when none ended.
     */
    long commandSucceeded() {
        if (!active) {
            return -1;
        }
        synchronized (this) {
            if (active && (!protocolErrors || System.nanoTime() - lastProtocolError >= retryNanos)) {
                return end();
            }
            return -1;
        }
    }

    /** Protocol errors since the member was opened. */
    synchronized long protocolErrorCount() {
        return protocolErrorCount;
    }

    synchronized boolean protocolErrorsSeen() {
        return active && protocolErrors;
    }

    /** Over: a command completed, or the member was brought back. Returns how long it lasted, in ns (0 if none). */
    synchronized long end() {
        long lasted = active ? System.nanoTime() - start : 0;
        active = false;
        protocolErrors = false;
        misbehaved = false;
        givenUp = null;
        backoff = 0;
        return lasted;
    }

    /** Whether the retry window of the trouble under way has passed. */
    synchronized boolean windowPassed() {
        return active && System.nanoTime() - start >= retryNanos;
    }

    /**
     * Gives the member up (its I/O fails at once from now on); returns false when it already was, so that the
     * sessions and callers that all find the window passed say so once.
     */
    synchronized boolean giveUp(String reason) {
        if (givenUp != null) {
            return false;
        }
        givenUp = reason;
        misbehaved = protocolErrors;
        return true;
    }

    /** Why the member was given up, or null. */
    String givenUp() {
        return givenUp;
    }

    boolean isGivenUp() {
        return givenUp != null;
    }

    /** Whether the member was given up after breaking the protocol, not merely after being unreachable. */
    synchronized boolean misbehaved() {
        return givenUp != null && misbehaved;
    }
}
