package io.stripestack.remote;

/**
 * A remote member's current loss of its target, shared by all its sessions: when it began (the retry window is
 * counted from there, not per session, so sessions that notice the loss later do not stretch it), and, once the
 * window passed without a login, why the member was given up: then every session fails its I/O at once.
 *
 * <p>Threads: any session's callers; every method is synchronized on this object.
 */
final class Outage {
    /** System.nanoTime() of the first failure of this outage; meaningful only while {@link #active}. */
    private long start;
    private boolean active;
    private String givenUp;

    /** Notes a lost connection; returns the nanoTime at which the retry window of this outage ends. */
    synchronized long begin(long retryNanos) {
        if (!active) {
            active = true;
            start = System.nanoTime();
        }
        return start + retryNanos;
    }

    /** A session logged in: the target is back. Returns how long the outage lasted, in nanoseconds (0 if none). */
    synchronized long end() {
        long lasted = active ? System.nanoTime() - start : 0;
        active = false;
        givenUp = null;
        return lasted;
    }

    synchronized void giveUp(String reason) {
        givenUp = reason;
    }

    /** Why the member was given up, or null. */
    synchronized String givenUp() {
        return givenUp;
    }
}
