package io.stripestack.remote;

import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One session of a remote member's pool and its reconnection: when a command finds the connection lost, its
 * caller logs in again, with a backoff from 100 ms doubling to 2 s, until the retry window (counted from the
 * first failure of this outage on any of the member's sessions, {@link Outage}) has passed; then the member is
 * given up and every later command fails at once, until {@link #revive} is asked for.
 *
 * <p>Threads. Any caller thread. {@code current} is volatile: commands read it without a lock. Logging in
 * again happens under {@code reconnectLock}, so one caller reconnects while the others of this session wait
 * for it (their I/O waits meanwhile, as the retry window promises). The outage guards itself.
 */
final class RemoteSession {
    private static final Logger log = LoggerFactory.getLogger(RemoteSession.class);
    private static final long FIRST_BACKOFF_MILLIS = 100;
    private static final long MAX_BACKOFF_MILLIS = 2000;

    private final RemoteEndpoint endpoint;
    private final InitiatorOptions initiatorOptions;
    private final long retryNanos;
    private final String description;
    private final ReentrantLock reconnectLock = new ReentrantLock();
    private final AtomicLong reconnects = new AtomicLong();
    private final Outage outage;
    private volatile IscsiInitiator current;

    private RemoteSession(RemoteEndpoint endpoint, RemoteMemberOptions options, int index, Outage outage,
            IscsiInitiator first) {
        this.endpoint = endpoint;
        this.initiatorOptions = options.initiatorOptions();
        this.retryNanos = options.retryTimeout().toNanos();
        this.description = endpoint + " (session " + index + ")";
        this.outage = outage;
        this.current = first;
    }

    /** Logs in the session's first connection; a target that cannot be reached now fails the open. */
    static RemoteSession open(RemoteEndpoint endpoint, RemoteMemberOptions options, int index, Outage outage)
            throws IOException {
        return new RemoteSession(endpoint, options, index, outage, endpoint.login(options.initiatorOptions()));
    }

    /** The connection to issue a command on; throws at once when the session was given up. */
    IscsiInitiator connection() throws IOException {
        IscsiInitiator c = current;
        if (c != null && c.isConnected()) {
            return c;
        }
        failIfGivenUp();
        return recover(c);
    }

    /**
     * Called after a command on {@code broken} failed because the connection was lost: returns a working
     * connection (logged in again by this caller or by another one meanwhile), or throws once the retry
     * window is over.
     */
    IscsiInitiator recover(IscsiInitiator broken) throws IOException {
        reconnectLock.lock();
        try {
            IscsiInitiator now = current;
            if (now != null && now != broken && now.isConnected()) {
                return now;
            }
            failIfGivenUp();
            log.warn("{}: connection lost; logging in again for up to {} s", description,
                    TimeUnit.NANOSECONDS.toSeconds(retryNanos));
            if (now != null) {
                now.close();
                current = null;
            }
            return loginUntilDeadline(outage.begin(retryNanos));
        } finally {
            reconnectLock.unlock();
        }
    }

    private IscsiInitiator loginUntilDeadline(long deadline) throws IOException {
        long backoff = FIRST_BACKOFF_MILLIS;
        for (;;) {
            IOException last;
            try {
                IscsiInitiator fresh = endpoint.login(initiatorOptions);
                current = fresh;
                reconnects.incrementAndGet();
                log.info("{}: logged in again; the target was away for {} ms", description,
                        TimeUnit.NANOSECONDS.toMillis(outage.end()));
                return fresh;
            } catch (IOException e) {
                last = e;
            }
            long leftMillis = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (leftMillis <= 0) {
                String reason = "no connection for " + TimeUnit.NANOSECONDS.toSeconds(retryNanos)
                        + " s (the retry timeout): " + last.getMessage();
                outage.giveUp(reason);
                log.error("{}: {}; the member's I/O fails from now on", description, reason);
                throw new IOException(description + ": " + reason, last);
            }
            try {
                Thread.sleep(Math.min(backoff, leftMillis));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException(description + ": interrupted while logging in again");
            }
            backoff = Math.min(backoff * 2, MAX_BACKOFF_MILLIS);
        }
    }

    private void failIfGivenUp() throws IOException {
        String reason = outage.givenUp();
        if (reason != null) {
            throw new IOException(description + ": " + reason);
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
                outage.end();
                log.info("{}: connected again", description);
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
