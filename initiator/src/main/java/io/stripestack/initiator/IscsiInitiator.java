package io.stripestack.initiator;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * A small RFC 7143 initiator on a plain blocking socket: one session, one connection, one LUN. Login with
 * AuthMethod None or one-way CHAP (MD5), operational negotiation (the target's answers are honoured), and
 * READ(16), WRITE(16) with or without FUA (immediate data, unsolicited Data-Out, R2T-driven Data-Out), SYNCHRONIZE CACHE(16),
 * READ CAPACITY(16), TEST UNIT READY, Logout. Target NOP-In pings are answered. CRC32C header and data digests
 * are used when the options ask for them ({@link Digest}); a digest error drops the connection. Every byte the
 * target sends is counted ({@link PduReceiver}): a target that breaks the protocol gets an
 * {@link IscsiProtocolException}, and a READ never completes with bytes the target did not send, nor hands back
 * a failed read's buffer with anything but zeros in it.
 * Enough to drive stripestack, tgtd or any other target from the soak tool and from tests.
 *
 * <p>Threads. Any number of caller threads may issue commands at once; each call is synchronous and
 * occupies one of {@link InitiatorOptions#maxTasks()} task slots (its ITT), so the number of callers is the
 * queue depth. Callers send their own PDUs ({@link CommandPath}); the {@code iscsi-reader} thread receives
 * ({@link PduReceiver}) and the {@code iscsi-nop} thread answers pings ({@link NopResponder}). A broken
 * connection fails every waiting command with an IOException and every later one at once
 * ({@link #isConnected()}). This class only assembles those parts; it holds no lock of its own.
 *
 * <p>Buffers: each task slot owns its header buffers; Data-In is read into the caller's buffer and Data-Out is
 * sent from it, so a command allocates nothing.
 */
public final class IscsiInitiator implements Closeable {
    /** The operational values in force after login; the digests are CRC32C when true. */
    public record Negotiated(boolean immediateData, boolean initialR2T, int targetMaxRecvDataSegmentLength,
            int maxBurstLength, int firstBurstLength, boolean headerDigest, boolean dataDigest) {
    }

    /** READ CAPACITY(16): the number of logical blocks and their size. */
    public record Capacity(long blocks, int blockSize) {
        public long bytes() {
            return blocks * blockSize;
        }
    }

    private final String description;
    private final Negotiated negotiated;
    private final ConnectionLifecycle lifecycle;
    private final TaskSlots slots;
    private final CommandPath commands;
    private final PduReceiver receiver;
    private final NopResponder nopResponder;
    /** Read once at login, before the initiator is handed out. */
    private Capacity capacity;

    private IscsiInitiator(String description, Negotiated negotiated, ConnectionLifecycle lifecycle,
            TaskSlots slots, CommandPath commands, PduReceiver receiver, NopResponder nopResponder) {
        this.description = description;
        this.negotiated = negotiated;
        this.lifecycle = lifecycle;
        this.slots = slots;
        this.commands = commands;
        this.receiver = receiver;
        this.nopResponder = nopResponder;
    }

    /**
     * Connects, logs in to {@code url}'s target (CHAP when the URL carries a user and secret; the URL's secret
     * is not cleared here), clears the power-on UNIT ATTENTION and reads the capacity. The login as a whole
     * gets the command timeout ({@link LoginDeadline}), so a target that accepts but never answers fails it.
     *
     * @throws IscsiLoginException when the target refuses the login, naming the reason and the fix
     */
    public static IscsiInitiator login(IscsiUrl url, InitiatorOptions options) throws IOException {
        String description = url.toString();
        SocketChannel socket = PduChannel.connect(url, options.connectTimeout(), description);
        SessionSequence sequence = new SessionSequence();
        TaskSlots slots = new TaskSlots(options.maxTasks(), options.commandTimeout(), description);
        ConnectionLifecycle lifecycle = new ConnectionLifecycle(description, socket, sequence, slots);
        PduChannel pdus = new PduChannel(socket, lifecycle);
        Negotiated negotiated;
        LoginDeadline deadline = new LoginDeadline(lifecycle, options.commandTimeout());
        try {
            negotiated = LoginNegotiation.negotiate(pdus, sequence, url, options, description);
        } catch (IOException | RuntimeException e) {
            lifecycle.close();
            if (deadline.expired()) {
                throw new IOException(description + ": no answer to the login within "
                        + deadline.timeout().toSeconds() + " s (is the target hung?)", e);
            }
            throw e;
        } finally {
            deadline.close();
        }
        NopResponder nopResponder = new NopResponder(pdus, sequence, lifecycle);
        IscsiInitiator initiator = new IscsiInitiator(description, negotiated, lifecycle, slots,
                new CommandPath(options.commandTimeout(), url.lun(), negotiated, pdus, sequence, slots, lifecycle),
                new PduReceiver(pdus, sequence, slots, lifecycle, nopResponder, options.maxRecvDataSegmentLength(),
                        negotiated.maxBurstLength()), nopResponder);
        try {
            initiator.enterFullFeaturePhase();
            return initiator;
        } catch (IOException | RuntimeException e) {
            initiator.close();
            throw e;
        }
    }

    private void enterFullFeaturePhase() throws IOException {
        receiver.start();
        nopResponder.start();
        testUnitReady(); // a new nexus starts with a UNIT ATTENTION, which the retries clear
        capacity = commands.readCapacity16();
        commands.useBlockSize(capacity.blockSize());
    }

    public Negotiated negotiated() {
        return negotiated;
    }

    /** The capacity read at login. */
    public Capacity capacity() {
        return capacity;
    }

    /** The most commands this session ever had outstanding at once (each caller thread holds one). */
    public int peakCommandsInFlight() {
        return slots.peakInFlight();
    }

    public boolean isConnected() {
        return lifecycle.isOpen();
    }

    /**
     * What failed the connection, or null while it works: an {@link IscsiProtocolException} when the target
     * broke the protocol, any other IOException when the connection was lost (closed between PDUs, a timeout,
     * a write error) or closed by us.
     */
    public IOException failure() {
        return lifecycle.failure();
    }

    @Override
    public String toString() {
        return description;
    }

    /** READ(16) of {@code dst.remaining()} bytes (a multiple of the block size) at {@code lba}; fills dst. */
    public void read16(long lba, ByteBuffer dst) throws IOException {
        commands.execute(ScsiCdb.READ_16, lba, dst);
    }

    /** WRITE(16) of {@code src.remaining()} bytes at {@code lba}; src's position and limit are left as they were. */
    public void write16(long lba, ByteBuffer src) throws IOException {
        commands.execute(ScsiCdb.WRITE_16, lba, src);
    }

    /**
     * WRITE(16) with FUA: returns once the target has the bytes on its medium, without flushing anything else
     * it caches; src's position and limit are left as they were.
     */
    public void write16Fua(long lba, ByteBuffer src) throws IOException {
        commands.execute(ScsiCdb.WRITE_16, ScsiCdb.FUA, lba, src);
    }

    /** SYNCHRONIZE CACHE(16) of the whole LUN: returns when the target says everything written is durable. */
    public void synchronizeCache16() throws IOException {
        commands.execute(ScsiCdb.SYNCHRONIZE_CACHE_16, 0, null);
    }

    public void testUnitReady() throws IOException {
        commands.execute(ScsiCdb.TEST_UNIT_READY, 0, null);
    }

    public Capacity readCapacity16() throws IOException {
        return commands.readCapacity16();
    }

    /** Logs out (reason: close the session) and closes the connection. */
    public void logout() throws IOException {
        try {
            commands.logout();
        } finally {
            close();
        }
    }

    /** Closes the connection without logging out (the target sees the connection drop). */
    @Override
    public void close() {
        if (lifecycle.close()) {
            receiver.interrupt();
            nopResponder.interrupt();
        }
    }
}
