package io.stripestack.targetserver.iscsi;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Slows online guessing of CHAP secrets, as sshd's per-source penalties do, without letting a guesser lock
 * the rightful initiator out. Each remote address may have one CHAP response verified at a time, and after
 * a failure its next verification waits: the base delay, doubled for each further failure of that address,
 * up to a minute. A failure is also counted against the initiator name it was made under, with the same
 * doubling; an address that fails under a penalized name is penalized for at least as long as the name is,
 * so guessing one name from many addresses slows down with the name's failures too.
 *
 * <p>What a name's penalty never does is hold a verification: a correct response from an address without
 * failures of its own is verified, and logs in, at once, whatever another address did under its name. Nor
 * does a success clear anything: a penalty lasts until its source has been quiet for ten minutes, so a
 * guesser gains nothing by logging in somewhere between guesses. The price: while an address is penalized,
 * every login from it waits (sshd's), which a shared address (NAT) makes everyone's.
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
        /** Ticker time before which no verification from this address may start, or the name's penalty end. */
        long penaltyEndNanos;
        /** A verification from this address is under way (claimed, verdict not yet in). */
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
     * Claims the right to verify one CHAP response from {@code address} now: returns 0 and holds the address
     * until {@link #verdict}, or returns the nanoseconds to wait before asking again.
     */
    synchronized long tryClaim(String address, long nowNanos) {
        if (baseDelayNanos == 0) {
            return 0;
        }
        Source byAddress = source(ADDRESS + address, nowNanos);
        if (byAddress.claimed) {
            return CLAIMED_RETRY_NANOS;
        }
        long wait = byAddress.penaltyEndNanos - nowNanos;
        if (wait > 0) {
            return wait;
        }
        byAddress.claimed = true;
        return 0;
    }

    /**
     * Ends a claim: a failure penalizes the address and the name, anything else (a success, or no verdict:
     * {@code verified} false, the request carried no response to verify) just frees the address.
     */
    synchronized void verdict(String address, String initiator, boolean verified, boolean succeeded, long nowNanos) {
        if (baseDelayNanos == 0) {
            return;
        }
        String addressKey = ADDRESS + address;
        Source byAddress = source(addressKey, nowNanos);
        byAddress.claimed = false;
        if (!verified || succeeded) {
            return;
        }
        String nameKey = INITIATOR + initiator;
        Source byName = source(nameKey, nowNanos);
        penalize(nameKey, byName, nowNanos);
        penalize(addressKey, byAddress, nowNanos);
        byAddress.penaltyEndNanos = Math.max(byAddress.penaltyEndNanos, byName.penaltyEndNanos);
    }

    private void penalize(String key, Source s, long nowNanos) {
        s.failures++;
        s.lastFailureNanos = nowNanos;
        long delay = Math.min(MAX_DELAY_NANOS, baseDelayNanos << Math.min(s.failures - 1, 16));
        s.penaltyEndNanos = nowNanos + delay;
        if (Integer.bitCount(s.failures) == 1) {
            log.warn("CHAP authentication failed {} time{} for {}; penalized for {} ms", s.failures,
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
