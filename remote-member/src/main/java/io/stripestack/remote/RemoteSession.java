package io.stripestack.remote;

import io.stripestack.blockdev.RateLimitedLog;
import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiProtocolException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One session of a remote member's pool and its reconnection: when a command finds the connection lost or broken
 * by a protocol error, its caller logs in again, waiting the backoff the member's {@link Outage} sets (from 100
 * ms, doubling to 2 s, shared by the sessions), until the retry window (counted from the first failure of this
 * outage on any of the member's sessions) has passed; then the member is given up and every later command fails
 * at once, until {@link #revive} is asked for. A login that works does not end the outage, a command that
 * completes does ({@link Outage}), so a target that logs in and then misbehaves again is given up in one window.
 *
 * <p>Threads. Any caller thread, and the member's idle probe. {@code current} is volatile: commands read it
 * without a lock. Logging in again happens under {@code reconnectLock}, so one caller reconnects while the others
 * of this session wait for it (their I/O waits meanwhile, as the retry window promises). The outage and the
 * member's rate-limited log guard themselves.
 */
final class RemoteSession {
    private static final Logger log = LoggerFactory.getLogger(RemoteSession.class);
    private static final int NOISE_INTERVAL_SECONDS = 10;

    private final RemoteEndpoint endpoint;
    private final InitiatorOptions initiatorOptions;
    private final String description;
    private final ReentrantLock reconnectLock = new ReentrantLock();
    private final AtomicLong reconnects = new AtomicLong();
    private final Outage outage;
    private final RateLimitedLog noise;
    private volatile IscsiInitiator current;

    private RemoteSession(RemoteEndpoint endpoint, RemoteMemberOptions options, int index, Outage outage,
            RateLimitedLog noise, IscsiInitiator first) {
        this.endpoint = endpoint;
        this.initiatorOptions = options.initiatorOptions();
        this.description = endpoint + " (session " + index + ")";
        this.outage = outage;
        this.noise = noise;
        this.current = first;
    }

    /**
     * The limiter for one member's connection trouble, shared by its sessions: at most a line per 10 s, under
     * this class's name.
     */
    static RateLimitedLog troubleLog() {
        return new RateLimitedLog(log, NOISE_INTERVAL_SECONDS, TimeUnit.SECONDS);
    }

    /** Logs in the session's first connection; a target that cannot be reached now fails the open. */
    static RemoteSession open(RemoteEndpoint endpoint, RemoteMemberOptions options, int index, Outage outage,
            RateLimitedLog noise) throws IOException {
        return new RemoteSession(endpoint, options, index, outage, noise, endpoint.login(options.initiatorOptions()));
    }

    /** The connection to issue a command on; throws at once when the member was given up. */
    IscsiInitiator connection() throws IOException {
        failIfGivenUp();
        IscsiInitiator c = current;
        if (c != null && c.isConnected()) {
            return c;
        }
        return recover(c);
    }

    /**
     * Called after a command on {@code broken} failed because the connection was lost or the target broke the
     * protocol: returns a working connection (logged in again by this caller or by another one meanwhile), or
     * throws once the retry window is over.
     */
    IscsiInitiator recover(IscsiInitiator broken) throws IOException {
        reconnectLock.lock();
        try {
            IscsiInitiator now = current;
            if (now != null && now != broken && now.isConnected()) {
                return now;
            }
            failIfGivenUp();
            IOException cause = now == null ? null : now.failure();
            long deadline = cause instanceof IscsiProtocolException ? outage.protocolError() : outage.begin();
            noise.warn("{}: {}; logging in again for up to {} s of trouble", description,
                    cause == null ? "connection lost" : cause.getMessage(),
                    TimeUnit.NANOSECONDS.toSeconds(outage.retryNanos()));
            if (now != null) {
                now.close();
                current = null;
            }
            return loginUntilDeadline(deadline, cause);
        } finally {
            reconnectLock.unlock();
        }
    }

    /**
     * A command on a live connection failed with a protocol error (a short read the target did not own up to):
     * it counts against the retry window like a lost connection, and gives the member up once the window passed.
     */
    void protocolErrorOnLiveConnection(IscsiProtocolException e) {
        outage.protocolError();
        noise.warn("{}: {}", description, e.getMessage());
        if (outage.windowPassed()) {
            giveUp("the target kept breaking the protocol for the retry timeout of "
                    + TimeUnit.NANOSECONDS.toSeconds(outage.retryNanos()) + " s: " + e.getMessage());
        }
    }

    /** The member was given up: its connection is closed (no logout: the target is not trusted to answer one). */
    void disconnect() {
        IscsiInitiator c = current;
        if (c != null) {
            c.close();
        }
    }

    private IscsiInitiator loginUntilDeadline(long deadline, IOException cause) throws IOException {
        IOException last = cause;
        for (;;) {
            long wait = Math.min(outage.loginDelay(), Math.max(0, deadline - System.nanoTime()));
            if (wait > 0) {
                try {
                    TimeUnit.NANOSECONDS.sleep(wait);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException(description + ": interrupted while logging in again");
                }
            }
            if (System.nanoTime() - deadline >= 0) {
                String reason = (outage.protocolErrorsSeen() ? "the target kept breaking the protocol" : "no working"
                        + " connection") + " for the retry timeout of " + TimeUnit.NANOSECONDS.toSeconds(
                        outage.retryNanos()) + " s" + (last == null ? "" : ": " + last.getMessage());
                giveUp(reason);
                throw new IOException(description + ": " + reason, last);
            }
            outage.loginTried();
            try {
                IscsiInitiator fresh = endpoint.login(initiatorOptions);
                current = fresh;
                reconnects.incrementAndGet();
                log.debug("{}: logged in again", description);
                return fresh;
            } catch (IOException e) {
                last = e;
                log.debug("{}: login failed: {}", description, e.getMessage());
            }
        }
    }

    private void giveUp(String reason) {
        if (outage.giveUp(reason)) {
            log.error("{}: {}; the member's I/O fails from now on{}", description, reason, outage.misbehaved()
                    ? " (a target that broke the protocol is not tried again by itself: fix it, then restart the"
                    + " server or replace the member)" : "");
        }
    }

    private void failIfGivenUp() throws IOException {
        if (outage.isGivenUp()) {
            throw new IOException(description + ": " + outage.givenUp());
        }
    }

    /**
     * Gives a given-up session another chance: one login attempt now. Returns whether the session is
     * connected afterwards.
     */
    boolean revive() {
        reconnectLock.lock();
        try {
            IscsiInitiator now = current;
            if (now != null && now.isConnected()) {
                return true;
            }
            try {
                current = endpoint.login(initiatorOptions);
                reconnects.incrementAndGet();
                long lasted = outage.end();
                log.info("{}: connected again after {} s", description, TimeUnit.NANOSECONDS.toSeconds(lasted));
                return true;
            } catch (IOException e) {
                log.debug("{}: still unreachable: {}", description, e.getMessage());
                return false;
            }
        } finally {
            reconnectLock.unlock();
        }
    }

    boolean isConnected() {
        IscsiInitiator c = current;
        return c != null && c.isConnected();
    }

    long reconnects() {
        return reconnects.get();
    }

    /** The most commands this session's current connection ever had outstanding at once. */
    int peakInFlight() {
        IscsiInitiator c = current;
        return c == null ? 0 : c.peakCommandsInFlight();
    }

    /** The connection in force, for the commands of the open (capacity, limits); null while down. */
    IscsiInitiator currentConnection() {
        return current;
    }

    /** Logs out when connected, else just closes. */
    void close() {
        reconnectLock.lock();
        try {
            IscsiInitiator c = current;
            current = null;
            outage.giveUp("closed");
            if (c != null) {
                try {
                    if (c.isConnected()) {
                        c.logout();
                    }
                } catch (IOException e) {
                    log.debug("{}: logout: {}", description, e.getMessage());
                } finally {
                    c.close();
                }
            }
        } finally {
            reconnectLock.unlock();
        }
    }
}
