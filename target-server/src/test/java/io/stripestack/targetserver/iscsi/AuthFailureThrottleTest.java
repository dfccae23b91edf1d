package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The CHAP failure throttle's rules on a clock the test holds (the TCP attacks are in
 * {@link UnauthenticatedClientsTest}): a name's penalty never holds another address, an address that fails under a
 * penalized name is held as long as the name, and a success clears nothing.
 */
class AuthFailureThrottleTest {
    private static final long SECOND = 1_000_000_000L;
    private final AuthFailureThrottle throttle = new AuthFailureThrottle(Duration.ofSeconds(1));

    private void fail(String address, String name, long now) {
        assertEquals(0, throttle.tryClaim(address, now), "claim before the failure");
        throttle.verdict(address, name, true, false, now);
    }

    @Test
    void aNamesPenaltyNeverHoldsAnotherAddress() {
        for (int i = 0; i < 6; i++) {
            fail("10.0.0." + (i + 10), "victim", i * 100 * SECOND);  // guesses under the name from six addresses
        }
        assertEquals(0, throttle.tryClaim("10.0.0.1", 600 * SECOND), "the tenant's address is verified at once");
        throttle.verdict("10.0.0.1", "victim", true, true, 600 * SECOND);
    }

    @Test
    void anAddressFailingUnderAPenalizedNameIsHeldAsLongAsTheName() {
        for (int i = 0; i < 5; i++) {
            fail("10.0.0." + (i + 10), "victim", 0);             // the name's penalty reaches 16 s
        }
        fail("10.0.0.99", "victim", 0);                          // a fresh address's first failure: 1 s of its own
        long wait = throttle.tryClaim("10.0.0.99", SECOND);
        assertEquals(31 * SECOND, wait, "held as long as the name (32 s after its sixth failure), not 1 s");
    }

    @Test
    void aSuccessClearsNothingAndPenaltiesDoubleUntilTheFailuresStop() {
        long now = 0;
        for (int failure = 1; failure <= 4; failure++) {
            fail("10.0.0.5", "attacker-" + failure, now);        // a fresh name per guess
            long penalty = (1L << (failure - 1)) * SECOND;
            assertEquals(penalty, throttle.tryClaim("10.0.0.5", now), "penalty after failure " + failure);
            now += penalty;
            assertEquals(0, throttle.tryClaim("10.0.0.5", now));
            throttle.verdict("10.0.0.5", "own-name", true, true, now);  // its own valid login in between
        }
        fail("10.0.0.5", "attacker-5", now);
        assertEquals(16 * SECOND, throttle.tryClaim("10.0.0.5", now), "still doubling after four successes");
        long quiet = now + Duration.ofMinutes(11).toNanos();
        assertEquals(0, throttle.tryClaim("10.0.0.5", quiet), "ten quiet minutes forget the address");
        throttle.verdict("10.0.0.5", "attacker-6", true, false, quiet);
        assertTrue(throttle.tryClaim("10.0.0.5", quiet) <= SECOND, "and it starts over at the base delay");
    }

    @Test
    void oneVerificationPerAddressAtATime() {
        assertEquals(0, throttle.tryClaim("10.0.0.7", 0));
        assertTrue(throttle.tryClaim("10.0.0.7", 0) > 0, "a second connection of the address waits");
        assertEquals(0, throttle.tryClaim("10.0.0.8", 0), "another address does not");
    }
}
