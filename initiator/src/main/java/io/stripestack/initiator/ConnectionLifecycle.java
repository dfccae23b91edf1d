package io.stripestack.initiator;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the connection still works, and how it ends. The first failure wins and is named in every later
 * command's exception. Failing closes the socket (that is what unblocks the reader and a sender stuck in a
 * write), wakes the senders waiting for the CmdSN window and fails every waiting task.
 *
 * <p>Threads. Any thread may fail the connection: a caller on a timeout or a write error, {@code iscsi-reader}
 * on a read error, {@code iscsi-nop}, or {@link #close()}. The state is volatile and atomic, so no lock guards
 * it. {@link #fail} takes the window's monitor and then each task slot's monitor, one at a time; callers must
 * hold neither, or two failing threads could each hold the monitor the other needs.
 */
final class ConnectionLifecycle {
    private static final Logger log = LoggerFactory.getLogger(ConnectionLifecycle.class);

    private final String description;
    private final SocketChannel socket;
    private final SessionSequence sequence;
    private final TaskSlots slots;
    private final AtomicReference<IOException> failure = new AtomicReference<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Set when the end of the connection is expected (Logout answered, or close()): no warning then. */
    private volatile boolean endExpected;

    ConnectionLifecycle(String description, SocketChannel socket, SessionSequence sequence, TaskSlots slots) {
        this.description = description;
        this.socket = socket;
        this.sequence = sequence;
        this.slots = slots;
    }

    String description() {
        return description;
    }

    boolean isOpen() {
        return failure.get() == null && !closed.get();
    }

    /** What failed the connection first, or null while it works (or when it was only closed). */
    IOException failure() {
        return failure.get();
    }

    /** Throws, naming what broke the connection, once it failed or was closed. */
    void ensureOpen() throws IOException {
        IOException broken = failure.get();
        if (broken != null || closed.get()) {
            throw new IOException(description + ": the connection is closed"
                    + (broken == null ? "" : " (" + broken.getMessage() + ")"), broken);
        }
    }

    void expectEnd() {
        endExpected = true;
    }

    boolean isEndExpected() {
        return endExpected;
    }

    /** {@link #fail(IOException)} with a problem stated for this connection. */
    IOException fail(String problem) {
        return fail(new IOException(description + ": " + problem));
    }

    /** Marks the connection broken, closes the socket and wakes every waiter; returns {@code e} to throw. */
    IOException fail(IOException e) {
        if (failure.compareAndSet(null, e) && !endExpected) {
            // debug only: every waiting command's exception names the failure, and its caller (a remote member)
            // decides how loudly to say it, as a target that fails every connection could flood the log
            log.debug("{}: connection failed: {}", description, e.getMessage());
        }
        sequence.wakeWindowWaiters();
        try {
            socket.close();
        } catch (IOException ignored) {
            // already failing
        }
        slots.failWaiting(e);
        return e;
    }

    /** Ends the connection without logging out; true for the call that did it. */
    boolean close() {
        if (!closed.compareAndSet(false, true)) {
            return false;
        }
        endExpected = true;
        fail(new IOException("closed by the initiator"));
        return true;
    }
}
