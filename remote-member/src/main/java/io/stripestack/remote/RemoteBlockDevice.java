package io.stripestack.remote;

import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MediumErrorException;
import io.stripestack.blockdev.MeteredBlockDevice;
import io.stripestack.blockdev.RateLimitedLog;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiProtocolException;
import io.stripestack.initiator.ScsiCommandException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A block device on a LUN of a remote iSCSI target (tgt, LIO, another stripestack), reached through the
 * project's initiator: an array member on another machine, as md runs over open-iscsi disks.
 *
 * <ul>
 *   <li>Size and block size come from READ CAPACITY(16) at open.</li>
 *   <li>Requests are cut into commands of at most the negotiated MaxBurstLength, so every command's data is one
 *       burst; the initiator keeps each PDU within the target's MaxRecvDataSegmentLength and FirstBurstLength
 *       and sends R2T-driven data as the target asks.</li>
 *   <li>{@link #flush} is SYNCHRONIZE CACHE(16) (the target's cache is per LUN, so one session's flush covers
 *       the writes every session completed); {@link #writeDurable} is WRITE(16) with FUA.</li>
 *   <li>Several commands are in flight: {@code connections} sessions used round-robin, each with
 *       {@code queueDepth} task slots; every caller thread has one command outstanding.</li>
 *   <li>A lost connection (dropped, or a command unanswered for the command timeout) is logged in again by
 *       {@link RemoteSession} while the I/O waits, for up to the retry timeout; the command is then issued
 *       again (READ and WRITE are idempotent, and the caller still owns its range). After the window the I/O
 *       fails with an IOException, which an array takes as a failing disk. A CHECK CONDITION on a live
 *       connection fails at once: MEDIUM ERROR as {@link MediumErrorException}, anything else as IOException.</li>
 *   <li>A target that breaks the protocol ({@link IscsiProtocolException}: Data-In not covering the transfer
 *       exactly, an oversized segment, a wrong ITT, a close inside a PDU, a bad R2T) loses its connection, and
 *       that counts against the same retry window, with the same backoff between logins: a login that works does
 *       not end the trouble, a command that completes does ({@link Outage}). A READ answered with fewer bytes
 *       than asked fails at once (the array rebuilds the range from parity) and counts the same way. A member
 *       given up after protocol errors is not tried again by itself ({@link #reconnect}).</li>
 *   <li>While no command was issued for {@value #PROBE_IDLE_SECONDS} s, every session is probed with TEST UNIT
 *       READY, so a target lost while the array is idle shows in {@link #status} (reconnecting, then failed
 *       when the retry window passes) without waiting for the next I/O.</li>
 *   <li>Connection trouble is logged through one {@link RateLimitedLog} per member (a line per 10 s at most,
 *       with the count of lines held back); the member's give-up is always logged.</li>
 * </ul>
 *
 * <p>Threads. Any number of callers at once, as the contract says, and the member's own {@code remote-probe}
 * thread. The request is cut by moving the caller's own buffer's position and limit, so a command allocates
 * nothing; the counters are adders and atomics, the last command's time a volatile; the sessions and the outage
 * guard their own state.
 */
public final class RemoteBlockDevice extends MeteredBlockDevice {
    private static final Logger log = LoggerFactory.getLogger(RemoteBlockDevice.class);
    private static final int READ = 0;
    private static final int WRITE = 1;
    private static final int WRITE_FUA = 2;
    private static final int FLUSH = 4;
    private static final int PROBE = 3;
    private static final int SENSE_MEDIUM_ERROR = 0x3;
    static final int PROBE_IDLE_SECONDS = 5;

    private final RemoteEndpoint endpoint;
    private final RemoteMemberOptions options;
    private final RemoteSession[] sessions;
    private final Outage outage;
    private final long size;
    private final int blockSize;
    private final int maxTransfer;
    private final Geometry geometry;
    private final AtomicInteger nextSession = new AtomicInteger();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final LongAdder commands = new LongAdder();
    private final LongAdder commandNanos = new LongAdder();
    private final LongAdder retries = new LongAdder();
    private final ScheduledExecutorService prober;
    /** System.nanoTime() when the last command was issued; the idle probe runs only after a quiet interval. */
    private volatile long lastIssued = System.nanoTime();

    private RemoteBlockDevice(RemoteEndpoint endpoint, RemoteMemberOptions options, RemoteSession[] sessions,
            Outage outage, IscsiInitiator.Capacity capacity, int maxTransfer) {
        super(endpoint.toString());
        this.outage = outage;
        this.endpoint = endpoint;
        this.options = options;
        this.sessions = sessions;
        this.size = capacity.bytes();
        this.blockSize = capacity.blockSize();
        this.maxTransfer = maxTransfer;
        this.geometry = new Geometry(blockSize, blockSize, 0, maxTransfer);
        this.prober = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "remote-probe " + endpoint);
            t.setDaemon(true);
            return t;
        });
    }

    private void startProbing(long intervalNanos) {
        prober.scheduleWithFixedDelay(() -> probeIfIdle(intervalNanos), intervalNanos, intervalNanos,
                TimeUnit.NANOSECONDS);
    }

    /** Logs in every session; fails (nothing left open) when the target cannot be reached or refuses. */
    public static RemoteBlockDevice open(RemoteEndpoint endpoint, RemoteMemberOptions options) throws IOException {
        return open(endpoint, options, TimeUnit.SECONDS.toNanos(PROBE_IDLE_SECONDS));
    }

    /** As {@link #open(RemoteEndpoint, RemoteMemberOptions)}, probing after {@code probeIdleNanos} of quiet. */
    static RemoteBlockDevice open(RemoteEndpoint endpoint, RemoteMemberOptions options, long probeIdleNanos)
            throws IOException {
        RemoteSession[] sessions = new RemoteSession[options.connections()];
        Outage outage = new Outage(options.retryTimeout().toNanos());
        RateLimitedLog noise = RemoteSession.troubleLog();
        try {
            for (int i = 0; i < sessions.length; i++) {
                sessions[i] = RemoteSession.open(endpoint, options, i, outage, noise);
            }
            IscsiInitiator first = sessions[0].currentConnection();
            IscsiInitiator.Capacity capacity = first.capacity();
            if (capacity.blockSize() != 512 && capacity.blockSize() != 4096) {
                throw new IOException(endpoint + ": the LUN's block size is " + capacity.blockSize()
                        + " bytes; members need 512 or 4096");
            }
            int burst = first.negotiated().maxBurstLength();
            int maxTransfer = Math.max(capacity.blockSize(), burst - burst % capacity.blockSize());
            log.info("{}: {} bytes in {}-byte blocks, {} sessions of {} commands, {} KiB per command", endpoint,
                    capacity.bytes(), capacity.blockSize(), sessions.length, options.queueDepth(), maxTransfer / 1024);
            RemoteBlockDevice device = new RemoteBlockDevice(endpoint, options, sessions, outage, capacity,
                    maxTransfer);
            device.startProbing(probeIdleNanos);
            return device;
        } catch (IOException | RuntimeException e) {
            for (RemoteSession s : sessions) {
                if (s != null) {
                    s.close();
                }
            }
            throw e;
        }
    }

    @Override
    public String name() {
        return endpoint.toString();
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public int logicalBlockSize() {
        return blockSize;
    }

    @Override
    public Geometry geometry() {
        return geometry;
    }

    @Override
    protected void readBlocks(long offset, ByteBuffer dst) throws IOException {
        transfer(READ, offset, dst);
    }

    @Override
    protected void writeBlocks(long offset, ByteBuffer src) throws IOException {
        transfer(WRITE, offset, src);
    }

    @Override
    protected void writeBlocksDurable(long offset, ByteBuffer src) throws IOException {
        transfer(WRITE_FUA, offset, src);
    }

    @Override
    protected void flushDevice() throws IOException {
        command(pickSession(), FLUSH, 0, null, 0, 0);
    }

    /** Cuts the request into commands of at most {@link #maxTransfer} bytes on the caller's own buffer. */
    private void transfer(int kind, long offset, ByteBuffer buffer) throws IOException {
        int start = buffer.position();
        int end = buffer.limit();
        try {
            for (int at = start; at < end; at += maxTransfer) {
                int n = Math.min(maxTransfer, end - at);
                command(pickSession(), kind, offset + (at - start), buffer, at, n);
            }
        } finally {
            buffer.limit(end);
            buffer.position(end);
        }
    }

    /**
     * One command on {@code session} (of bytes {@code [at, at + n)} of {@code buffer} when it moves data), again
     * on a new connection when one is lost or broken, within the retry window.
     */
    private void command(RemoteSession session, int kind, long offset, ByteBuffer buffer, int at, int n)
            throws IOException {
        try {
            issue(session, kind, offset, buffer, at, n);
        } catch (IOException e) {
            if (outage.isGivenUp()) {
                for (RemoteSession s : sessions) {
                    s.disconnect(); // a given-up member keeps no connection to its target
                }
            }
            throw e;
        }
    }

    private void issue(RemoteSession session, int kind, long offset, ByteBuffer buffer, int at, int n)
            throws IOException {
        if (kind != PROBE) {
            lastIssued = System.nanoTime();
        }
        IscsiInitiator c = session.connection();
        long lba = offset / blockSize;
        for (;;) {
            if (buffer != null) {
                buffer.limit(at + n);
                buffer.position(at);
            }
            inFlight.incrementAndGet();
            long started = System.nanoTime();
            try {
                switch (kind) {
                    case READ -> c.read16(lba, buffer);
                    case WRITE -> c.write16(lba, buffer);
                    case WRITE_FUA -> c.write16Fua(lba, buffer);
                    case FLUSH -> c.synchronizeCache16();
                    default -> c.testUnitReady();
                }
                if (kind != PROBE) {
                    commandNanos.add(System.nanoTime() - started);
                    commands.increment();
                }
                long lasted = outage.commandSucceeded();
                if (lasted >= 0) {
                    log.info("{}: working again; the trouble lasted {} ms", name(),
                            TimeUnit.NANOSECONDS.toMillis(lasted));
                }
                return;
            } catch (ScsiCommandException e) {
                if (e.senseKey() == SENSE_MEDIUM_ERROR) {
                    throw new MediumErrorException(name() + ": " + e.getMessage(), offset, kind != READ, e);
                }
                throw e;
            } catch (IOException e) {
                if (c.isConnected()) {
                    if (e instanceof IscsiProtocolException broken) {
                        session.protocolErrorOnLiveConnection(broken);
                    }
                    throw e;
                }
                retries.increment();
            } finally {
                inFlight.decrementAndGet();
            }
            c = session.recover(c);
        }
    }

    /** The idle probe: TEST UNIT READY on every session once no command was issued for an interval. */
    private void probeIfIdle(long intervalNanos) {
        if (outage.isGivenUp() || System.nanoTime() - lastIssued < intervalNanos) {
            return;
        }
        for (RemoteSession s : sessions) {
            try {
                command(s, PROBE, 0, null, 0, 0);
            } catch (IOException e) {
                log.debug("{}: idle probe: {}", name(), e.getMessage()); // the session logged the trouble
            } catch (RuntimeException e) {
                log.warn("{}: idle probe failed: {}", name(), e.toString());
            }
        }
    }

    private RemoteSession pickSession() {
        return sessions[Math.floorMod(nextSession.getAndIncrement(), sessions.length)];
    }

    /**
     * Tries to connect every given-up or lost session once, now (a returning target before its member is
     * added back); true when all are connected.
     */
    public boolean reconnect() {
        if (outage.misbehaved()) {
            return false;
        }
        boolean all = true;
        for (RemoteSession s : sessions) {
            all &= s.revive();
        }
        return all;
    }

    /** Connection state, load and history, for status and metrics. */
    public RemoteMemberStatus status() {
        int up = 0;
        boolean givenUp = outage.givenUp() != null;
        long reconnects = 0;
        int peak = 0;
        for (RemoteSession s : sessions) {
            up += s.isConnected() ? 1 : 0;
            reconnects += s.reconnects();
            peak = Math.max(peak, s.peakInFlight());
        }
        RemoteMemberStatus.State state = givenUp ? RemoteMemberStatus.State.FAILED
                : up == sessions.length ? RemoteMemberStatus.State.CONNECTED : RemoteMemberStatus.State.RECONNECTING;
        long count = commands.sum();
        return new RemoteMemberStatus(name(), state, up, sessions.length, options.queueDepth(), inFlight.get(), peak,
                count, count == 0 ? 0 : commandNanos.sum() / count / 1000, retries.sum(), reconnects,
                outage.protocolErrorCount());
    }

    @Override
    public void close() {
        prober.shutdownNow();
        for (RemoteSession s : sessions) {
            s.close();
        }
    }
}
