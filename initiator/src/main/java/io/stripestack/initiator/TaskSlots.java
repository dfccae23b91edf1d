package io.stripestack.initiator;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The session's ITT slots and their free list: at most {@code maxTasks} commands in flight, further callers
 * wait for a slot. Callers acquire and release; {@code iscsi-reader} finds a slot by ITT without a lock, relying
 * on the slot's volatile {@code itt} and {@code active}. The free list is a blocking queue and the in-flight
 * counters are atomics, so no lock of this class's own guards anything.
 */
final class TaskSlots {
    private final TaskSlot[] slots;
    private final BlockingQueue<TaskSlot> free;
    private final Duration timeout;
    private final String description;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger peakInFlight = new AtomicInteger();

    TaskSlots(int maxTasks, Duration timeout, String description) {
        this.slots = new TaskSlot[maxTasks];
        this.free = new ArrayBlockingQueue<>(maxTasks);
        this.timeout = timeout;
        this.description = description;
        for (int i = 0; i < maxTasks; i++) {
            slots[i] = new TaskSlot(i);
            free.add(slots[i]);
        }
    }

    /** A free slot with a fresh ITT, waiting up to the command timeout for one. */
    TaskSlot acquire() throws IOException {
        try {
            TaskSlot t = free.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
            if (t == null) {
                throw new IOException(description + ": all " + slots.length + " command slots stayed busy for "
                        + timeout.toSeconds() + " s");
            }
            peakInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            t.assignNextItt();
            return t;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException(description + ": interrupted waiting for a command slot");
        }
    }

    /** Returns the slot to the free list; the reader must have let go of it ({@link TaskSlot#close}). */
    void release(TaskSlot t) {
        t.forgetBuffer();
        inFlight.decrementAndGet();
        free.add(t);
    }

    /** The slot running the command with this ITT, or null (unknown, or that command has finished). */
    TaskSlot forItt(int itt) {
        TaskSlot t = slots[TaskSlot.slotOf(itt) % slots.length];
        return t.active && t.itt == itt ? t : null;
    }

    void failWaiting(IOException e) {
        for (TaskSlot t : slots) {
            t.failIfWaiting(e);
        }
    }

    /** The most commands ever in flight at once. */
    int peakInFlight() {
        return peakInFlight.get();
    }
}
