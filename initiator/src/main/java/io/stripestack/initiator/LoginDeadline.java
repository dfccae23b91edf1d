package io.stripestack.initiator;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Bounds a whole login: a target that accepts the TCP connection but never answers (a hung or stopped process:
 * the kernel still completes the handshake) would otherwise block the login's socket reads for ever. When the
 * time is up the connection is failed, which closes the socket and ends the blocked read.
 *
 * <p>Threads: one daemon timer thread ({@code iscsi-login-deadline}) shared by every login of the JVM fires
 * the deadlines; {@code expired} is volatile, written by it and read by the login thread afterwards.
 */
final class LoginDeadline implements AutoCloseable {
    private static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "iscsi-login-deadline");
        t.setDaemon(true);
        return t;
    });

    private final Duration timeout;
    private final ScheduledFuture<?> task;
    private volatile boolean expired;

    LoginDeadline(ConnectionLifecycle lifecycle, Duration timeout) {
        this.timeout = timeout;
        this.task = TIMER.schedule(() -> {
            expired = true;
            lifecycle.fail("no answer to the login within " + timeout.toSeconds() + " s; connection closed");
        }, timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Whether the time ran out (then the connection was failed for that reason). */
    boolean expired() {
        return expired;
    }

    Duration timeout() {
        return timeout;
    }

    @Override
    public void close() {
        task.cancel(false);
    }
}
