package io.stripestack.blockdev;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The quiesce primitive: a suspender waits for the work inside, and work waits (or is refused) while suspended. */
class QuiesceTest {
    private final ExecutorService pool = Executors.newCachedThreadPool();

    @AfterEach
    void stop() {
        pool.shutdownNow();
    }

    @Test
    void suspendWaitsForTheWorkInsideAndKeepsNewWorkOutUntilResume() throws Exception {
        Quiesce q = new Quiesce();
        q.enter();
        Future<?> suspender = pool.submit(() -> {
            q.suspend();
            return null;
        });
        assertThrows(TimeoutException.class, () -> suspender.get(200, TimeUnit.MILLISECONDS),
                "the suspend returned with work still inside");
        q.exit();
        suspender.get(10, TimeUnit.SECONDS);
        assertTrue(q.isSuspended());
        assertFalse(q.tryEnter(), "work entered a suspended layer");

        CountDownLatch entered = new CountDownLatch(1);
        Future<?> late = pool.submit(() -> {
            q.enter();
            entered.countDown();
            q.exit();
            return null;
        });
        assertFalse(entered.await(200, TimeUnit.MILLISECONDS), "enter did not wait for the resume");
        q.resume();
        late.get(10, TimeUnit.SECONDS);
        assertTrue(q.tryEnter());
        q.exit();
    }

    @Test
    void suspensionsNestAndATimedSuspendReportsWorkStillInside() throws Exception {
        Quiesce q = new Quiesce();
        q.enter();
        assertFalse(q.suspend(50, TimeUnit.MILLISECONDS), "work was still inside");
        assertTrue(q.isSuspended(), "a timed-out suspend keeps the layer suspended");
        q.exit();
        q.suspend();
        q.resume();
        assertTrue(q.isSuspended(), "one suspender still holds the layer");
        q.resume();
        assertFalse(q.isSuspended());
        assertThrows(IllegalStateException.class, q::resume);
    }

    /** Many threads entering and leaving while another suspends: once suspend returns, nobody is inside. */
    @Test
    void noWorkIsInsideWhileSuspended() throws Exception {
        Quiesce q = new Quiesce();
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger violations = new AtomicInteger();
        CountDownLatch stop = new CountDownLatch(1);
        for (int t = 0; t < 4; t++) {
            pool.submit(() -> {
                while (stop.getCount() > 0) {
                    q.enter();
                    inside.incrementAndGet();
                    inside.decrementAndGet();
                    q.exit();
                }
                return null;
            });
        }
        for (int round = 0; round < 200; round++) {
            q.suspend();
            if (inside.get() != 0) {
                violations.incrementAndGet();
            }
            q.resume();
        }
        stop.countDown();
        assertEquals(0, violations.get(), "work was inside a suspended layer");
    }
}
