package io.stripestack.blockdev;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Stops traffic through a layer and waits until none is left (md's {@code mddev_suspend} / raid5's quiesce): every
 * unit of work (a request, a sync step) is bracketed by {@link #enter} (or {@link #tryEnter}) and {@link #exit}; a
 * thread that must change the layer with nothing in flight (switch the consistency policy, publish a reshape, close,
 * detach a logical unit) calls {@link #suspend}, which returns once no work is inside and keeps new work out until
 * {@link #resume}.
 *
 * <p>Concurrency: {@code enter}, {@code tryEnter} and {@code exit} take no lock while nothing is suspended: one atomic
 * add on the count of work inside and one volatile read of the suspended flag. A suspender writes the flag before it
 * reads the count, and work adds to the count before it reads the flag (both sequentially consistent), so either
 * the work sees the flag (and backs out, counting itself out again) or the suspender sees the work (and waits for
 * its exit). Waiting is on this object's monitor, which also guards the number of suspenders: {@code exit} takes it
 * only when it brings the count to zero while suspended, {@code enter} only to wait for the resume. Suspensions nest
 * (two suspenders both hold the layer still until both resumed). Never suspend from inside entered work: the
 * suspender would wait for itself.
 */
public final class Quiesce {
    private final AtomicLong inside = new AtomicLong();
    /** Written under the monitor; read without it by every enter. */
    private volatile boolean suspended;
    private int suspenders;

    /**
     * Enters, waiting (through interrupts, which are re-asserted afterwards) while the layer is suspended. Pair
     * with {@link #exit}.
     */
    public void enter() {
        boolean interrupted = false;
        while (!tryEnter()) {
            synchronized (this) {
                while (suspended) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Enters unless the layer is suspended; pair a true answer with {@link #exit}. */
    public boolean tryEnter() {
        inside.incrementAndGet();
        if (!suspended) {
            return true;
        }
        exit();
        return false;
    }

    /** Leaves what {@link #enter} or a true {@link #tryEnter} entered. */
    public void exit() {
        if (inside.decrementAndGet() == 0 && suspended) {
            synchronized (this) {
                notifyAll();
            }
        }
    }

    /** Keeps new work out and waits (through interrupts, re-asserted afterwards) until none is inside. */
    public void suspend() {
        boolean interrupted = false;
        synchronized (this) {
            begin();
            while (inside.get() != 0) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Keeps new work out and waits until none is inside, at most {@code timeout}. Returns false when work was still
     * inside at the end; the layer stays suspended either way (call {@link #resume} to let work in again).
     */
    public boolean suspend(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        synchronized (this) {
            begin();
            while (inside.get() != 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            return true;
        }
    }

    private void begin() {
        suspenders++;
        suspended = true;
    }

    /** Ends one {@link #suspend}; work enters again once every suspender has resumed. */
    public synchronized void resume() {
        if (suspenders == 0) {
            throw new IllegalStateException("resume without suspend");
        }
        if (--suspenders == 0) {
            suspended = false;
            notifyAll();
        }
    }

    /** Whether a suspender keeps work out now. */
    public boolean isSuspended() {
        return suspended;
    }
}
