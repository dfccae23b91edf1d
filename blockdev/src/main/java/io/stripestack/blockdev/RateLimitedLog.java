package io.stripestack.blockdev;

import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;

/**
 * One line per interval for events a peer can cause at will (a client's bare connects and resets
 * or refused connections, a remote member target failing connection after connection), so that a
 * flood of them cannot fill the log: the first event of an interval is logged, the rest are counted
 * and the count rides on the next line logged.
 *
 * <p>Concurrency: thread-safe; one instance is shared by everything that reports the same kind of
 * event (every connection of a server, every session of a remote member).
 */
public final class RateLimitedLog {
    private final Logger log;
    private final long intervalNanos;
    private long lastLoggedNanos;
    private boolean loggedOnce;
    private long suppressed;

    public RateLimitedLog(Logger log, long interval, TimeUnit unit) {
        this.log = log;
        this.intervalNanos = unit.toNanos(interval);
    }

    /** Logs at WARN unless a line was logged less than an interval ago. */
    public void warn(String format, Object... args) {
        long dropped;
        synchronized (this) {
            long now = System.nanoTime();
            if (loggedOnce && now - lastLoggedNanos < intervalNanos) {
                suppressed++;
                return;
            }
            loggedOnce = true;
            lastLoggedNanos = now;
            dropped = suppressed;
            suppressed = 0;
        }
        if (dropped == 0) {
            log.warn(format, args);
        } else if (log.isWarnEnabled()) {
            log.warn(org.slf4j.helpers.MessageFormatter.arrayFormat(format, args).getMessage()
                    + " (and " + dropped + " similar events not logged since the last line)");
        }
    }
}
