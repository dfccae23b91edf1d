package io.stripestack.targetserver.iscsi;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Slows online guessing of CHAP secrets, as sshd's per-source penalties do. Each source (a remote
 * address, and separately an initiator name) may have one CHAP response verified at a time, and
 * after a failure the next verification for that source waits: the base delay, doubled for each
 * further failure, up to a minute; ten quiet minutes forget the source. A parallel attack from one
 * address or under one initiator name therefore gets one guess per delay, whatever the number of
 * connections, and a success clears its sources. The price: while a source is penalized, its
 * legitimate logins wait as long.
 *
 * <p>Failures are logged once per burst: the first failure of a source, and then a line whenever its
 * count reaches a power of two.
 *
 * <p>Concurrency: thread-safe (this object's monitor); the table is bounded, oldest entries first out.
 */
final class AuthFailureThrottle {
    private static final Logger log = LoggerFactory.getLogger(AuthFailureThrottle.class);
    private static final long MAX_DELAY_NANOS = Duration.ofMinutes(1).toNanos();
    private static final long FORGET_AFTER_NANOS = Duration.ofMinutes(10).toNanos();
    private static final int MAX_SOURCES = 4096;
    private static final String ADDRESS = "address ";
    private static final String INITIATOR = "initiator ";

    private static final class Source {
        int failures;
        long lastFailureNanos;
        /** Ticker time before which no verification for this source may start. */
        long penaltyEndNanos;
        /** A verification for this source is under way (claimed, verdict not yet in). */
        boolean claimed;
    }

    /** How soon a login waiting behind another one's verification asks again. */
    private static final long CLAIMED_RETRY_NANOS = 10_000_000L;

    private final long baseDelayNanos;
    private final Map<String, Source> sources = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Source> eldest) {
            return size() > MAX_SOURCES && !eldest.getValue().claimed;
        }
    };

    AuthFailureThrottle(Duration baseDelay) {
        this.baseDelayNanos = baseDelay.toNanos();
    }

    /**
     * Claims the right to verify one CHAP response from {@code address} for {@code initiator} now:
     * returns 0 and holds both sources until {@link #verdict}, or returns the nanoseconds to wait
     * before asking again.
     */
    synchronized long tryClaim(String address, String initiator, long nowNanos) {
        if (baseDelayNanos == 0) {
            return 0;
        }
        Source byAddress = source(ADDRESS + address, nowNanos);
        Source byName = source(INITIATOR + initiator, nowNanos);
        if (byAddress.claimed || byName.claimed) {
            return CLAIMED_RETRY_NANOS;
        }
        long wait = Math.max(byAddress.penaltyEndNanos - nowNanos, byName.penaltyEndNanos - nowNanos);
        if (wait > 0) {
            return wait;
        }
        byAddress.claimed = true;
        byName.claimed = true;
        return 0;
    }

    /**
     * Ends a claim: a success forgets both sources, a failure penalizes both, and no verdict
     * ({@code verified} false: the request carried no response to verify) just frees them.
     */
    synchronized void verdict(String address, String initiator, boolean verified, boolean succeeded, long nowNanos) {
        if (baseDelayNanos == 0) {
            return;
        }
        for (String key : new String[] {ADDRESS + address, INITIATOR + initiator}) {
            Source s = source(key, nowNanos);
            s.claimed = false;
            if (!verified) {
                continue;
            }
            if (succeeded) {
                sources.remove(key);
            } else {
                penalize(key, s, nowNanos);
            }
        }
    }

    private void penalize(String key, Source s, long nowNanos) {
        s.failures++;
        s.lastFailureNanos = nowNanos;
        long delay = Math.min(MAX_DELAY_NANOS, baseDelayNanos << Math.min(s.failures - 1, 16));
        s.penaltyEndNanos = nowNanos + delay;
        if (Integer.bitCount(s.failures) == 1) {
            log.warn("CHAP authentication failed {} time{} for {}; its next login is verified after {} ms", s.failures,
                    s.failures == 1 ? "" : "s", key, delay / 1_000_000);
        }
    }

    private Source source(String key, long nowNanos) {
        Source s = sources.get(key);
        if (s == null || !s.claimed && s.failures > 0 && nowNanos - s.lastFailureNanos > FORGET_AFTER_NANOS) {
            s = new Source();
            sources.put(key, s);
        }
        return s;
    }
}
