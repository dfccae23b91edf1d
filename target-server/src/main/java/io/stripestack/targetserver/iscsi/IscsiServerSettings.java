package io.stripestack.targetserver.iscsi;

import io.stripestack.targetserver.config.ServerDefaults;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Transport-wide settings of an {@link IscsiServer}: where to listen, what to advertise, and the
 * limits this target offers in login negotiation (RFC 7143 section 13). Immutable; build with
 * {@link #builder()}. Every limit is validated by {@link Builder#build()} with a message naming the
 * setting and the legal range.
 */
public final class IscsiServerSettings {
    private final List<InetSocketAddress> bindAddresses;
    private final List<String> portalAddresses;
    private final int targetPortalGroupTag;
    private final int maxRecvDataSegmentLength;
    private final int maxBurstLength;
    private final int firstBurstLength;
    private final boolean immediateData;
    private final boolean initialR2T;
    private final int maxOutstandingR2T;
    private final int queueDepth;
    private final long writeBufferBudget;
    private final long dataInBudget;
    private final long dataInPerSession;
    private final int maxConnections;
    private final int maxConnectionsPerAddress;
    private final int maxSessionsPerInitiator;
    private final long writeBufferPerSession;
    private final Duration loginIdleTimeout;
    private final Duration authFailureDelay;
    private final Duration nopInInterval;
    private final Duration loginTimeout;
    private final Duration drainTimeout;
    private final boolean headerDigestAllowed;
    private final boolean dataDigestAllowed;

    private IscsiServerSettings(Builder b) {
        this.bindAddresses = List.copyOf(b.bindAddresses);
        this.portalAddresses = List.copyOf(b.portalAddresses);
        this.targetPortalGroupTag = b.targetPortalGroupTag;
        this.maxRecvDataSegmentLength = b.maxRecvDataSegmentLength;
        this.maxBurstLength = b.maxBurstLength;
        this.firstBurstLength = b.firstBurstLength;
        this.immediateData = b.immediateData;
        this.initialR2T = b.initialR2T;
        this.maxOutstandingR2T = b.maxOutstandingR2T;
        this.queueDepth = b.queueDepth;
        this.writeBufferBudget = b.writeBufferBudget;
        this.dataInBudget = b.dataInBudget;
        this.dataInPerSession = b.dataInPerSession;
        this.maxConnections = b.maxConnections;
        this.maxConnectionsPerAddress = b.maxConnectionsPerAddress;
        this.maxSessionsPerInitiator = b.maxSessionsPerInitiator;
        this.writeBufferPerSession = b.writeBufferPerSession;
        this.loginIdleTimeout = b.loginIdleTimeout;
        this.authFailureDelay = b.authFailureDelay;
        this.nopInInterval = b.nopInInterval;
        this.loginTimeout = b.loginTimeout;
        this.drainTimeout = b.drainTimeout;
        this.headerDigestAllowed = b.headerDigestAllowed;
        this.dataDigestAllowed = b.dataDigestAllowed;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Socket addresses to listen on (port 0 = any free port, see {@link IscsiServer#boundPorts()}). */
    public List<InetSocketAddress> bindAddresses() { return bindAddresses; }
    /**
     * "host:port" portals SendTargets advertises (IPv6 hosts in brackets); empty = the local address
     * the asking connection arrived on.
     */
    public List<String> portalAddresses() { return portalAddresses; }
    public int targetPortalGroupTag() { return targetPortalGroupTag; }
    public int maxRecvDataSegmentLength() { return maxRecvDataSegmentLength; }
    public int maxBurstLength() { return maxBurstLength; }
    public int firstBurstLength() { return firstBurstLength; }
    public boolean immediateData() { return immediateData; }
    public boolean initialR2T() { return initialR2T; }
    public int maxOutstandingR2T() { return maxOutstandingR2T; }
    /** Commands a session may have in flight: the CmdSN window (MaxCmdSN - ExpCmdSN + 1). */
    public int queueDepth() { return queueDepth; }
    /**
     * Bytes all sessions' write (Data-Out) buffers may hold at once; commands beyond it wait before
     * their R2Ts. A quarter more is allowed for unsolicited data of waiting commands (see
     * {@code WriteBufferBudget}).
     */
    public long writeBufferBudget() { return writeBufferBudget; }
    /**
     * Bytes of Data-In all sessions may hold at once, from a read's dispatch until its last Data-In
     * PDU is written to the socket; a read beyond it waits (and its connection stops reading) until
     * an initiator takes its data. One read always fits when nothing is held.
     */
    public long dataInBudget() { return dataInBudget; }
    /** The share of {@link #dataInBudget()} one session may hold, so a slow reader cannot take it all. */
    public long dataInPerSession() { return dataInPerSession; }
    /**
     * TCP connections served at once (logging in or logged in); when all are taken, a new one displaces the oldest
     * connection still logging in or in a discovery session, and is closed at once only when every one is a
     * normal session (see {@code ConnectionSlots}).
     */
    public int maxConnections() { return maxConnections; }
    /** TCP connections one remote address may hold at once, in any phase; one more is closed at once. */
    public int maxConnectionsPerAddress() { return maxConnectionsPerAddress; }
    /** Normal sessions one initiator name may hold at once; one more login is refused (out of resources). */
    public int maxSessionsPerInitiator() { return maxSessionsPerInitiator; }
    /**
     * The share of {@link #writeBufferBudget()} one session's writes may hold (whole buffers and unsolicited
     * data); a write beyond it waits for the session's own writes, without holding up other sessions'. One
     * write always fits when the session holds nothing.
     */
    public long writeBufferPerSession() { return writeBufferPerSession; }
    /** How long a connection still logging in may stay silent (from connect, or from its latest request or answer). */
    public Duration loginIdleTimeout() { return loginIdleTimeout; }
    /**
     * The answer to a failed CHAP login waits this long, doubled for each further failure of the
     * same source address or initiator name (up to a minute); zero disables the delay.
     */
    public Duration authFailureDelay() { return authFailureDelay; }
    /**
     * How long a connection may stay silent before the target pings it, and how long a write may
     * leave an R2T unanswered before the connection is closed; zero disables both.
     */
    public Duration nopInInterval() { return nopInInterval; }
    public Duration loginTimeout() { return loginTimeout; }
    /** How long {@link IscsiServer#close()} waits for in-flight commands before closing connections. */
    public Duration drainTimeout() { return drainTimeout; }
    public boolean headerDigestAllowed() { return headerDigestAllowed; }
    public boolean dataDigestAllowed() { return dataDigestAllowed; }

    /** Mutable builder; defaults listen on 0.0.0.0:3260 with the values documented per setter. */
    public static final class Builder {
        private final List<InetSocketAddress> bindAddresses = new ArrayList<>();
        private final List<String> portalAddresses = new ArrayList<>();
        private int targetPortalGroupTag = ServerDefaults.PORTAL_GROUP_TAG;
        private int maxRecvDataSegmentLength = ServerDefaults.MAX_RECV_DATA_SEGMENT_LENGTH;
        private int maxBurstLength = ServerDefaults.MAX_BURST_LENGTH;
        private int firstBurstLength = ServerDefaults.FIRST_BURST_LENGTH;
        private boolean immediateData = ServerDefaults.IMMEDIATE_DATA;
        private boolean initialR2T = ServerDefaults.INITIAL_R2T;
        private int maxOutstandingR2T = 4;
        private int queueDepth = ServerDefaults.QUEUE_DEPTH;
        private long writeBufferBudget = ServerDefaults.WRITE_BUFFER_BUDGET;
        private long dataInBudget = ServerDefaults.DATA_IN_BUDGET;
        private long dataInPerSession = ServerDefaults.DATA_IN_PER_SESSION;
        private int maxConnections = ServerDefaults.MAX_CONNECTIONS;
        private int maxConnectionsPerAddress = ServerDefaults.MAX_CONNECTIONS_PER_ADDRESS;
        private int maxSessionsPerInitiator = ServerDefaults.MAX_SESSIONS_PER_INITIATOR;
        private long writeBufferPerSession = ServerDefaults.WRITE_BUFFER_PER_SESSION;
        private Duration loginIdleTimeout = Duration.ofSeconds(ServerDefaults.LOGIN_IDLE_TIMEOUT_SECONDS);
        private Duration authFailureDelay = Duration.ofMillis(ServerDefaults.AUTH_FAILURE_DELAY_MILLIS);
        private Duration nopInInterval = Duration.ofSeconds(ServerDefaults.NOP_IN_INTERVAL_SECONDS);
        private Duration loginTimeout = Duration.ofSeconds(15);
        private Duration drainTimeout = Duration.ofSeconds(10);
        private boolean headerDigestAllowed = true;
        private boolean dataDigestAllowed = true;

        private Builder() {
        }

        /** Adds a listening address; without any, the server listens on 0.0.0.0:3260. */
        public Builder bind(InetSocketAddress address) {
            bindAddresses.add(Objects.requireNonNull(address, "bind address"));
            return this;
        }

        /** Adds an advertised portal "host:port" (IPv6 host in brackets) for SendTargets. */
        public Builder portal(String hostAndPort) {
            portalAddresses.add(Objects.requireNonNull(hostAndPort, "portal address"));
            return this;
        }

        /** Target portal group tag, 1..65535 (default 1). */
        public Builder targetPortalGroupTag(int tag) { this.targetPortalGroupTag = tag; return this; }
        /** MaxRecvDataSegmentLength this target declares, 512..16777215 (default 262144). */
        public Builder maxRecvDataSegmentLength(int bytes) { this.maxRecvDataSegmentLength = bytes; return this; }
        /** Largest MaxBurstLength accepted, 512..16777215 (default 1 MiB). */
        public Builder maxBurstLength(int bytes) { this.maxBurstLength = bytes; return this; }
        /** Largest FirstBurstLength accepted, 512..MaxBurstLength (default 262144). */
        public Builder firstBurstLength(int bytes) { this.firstBurstLength = bytes; return this; }
        /** Whether ImmediateData=Yes is acceptable (default true; the result is the AND of both sides). */
        public Builder immediateData(boolean allowed) { this.immediateData = allowed; return this; }
        /** Whether this target demands InitialR2T=Yes (default false; the result is the OR of both sides). */
        public Builder initialR2T(boolean required) { this.initialR2T = required; return this; }
        /** Largest MaxOutstandingR2T accepted, 1..65535 (default 4). */
        public Builder maxOutstandingR2T(int count) { this.maxOutstandingR2T = count; return this; }
        /** Commands in flight per session, 1..65536 (default 128). */
        public Builder queueDepth(int commands) { this.queueDepth = commands; return this; }
        /** Write buffer budget of the whole server, 64 KiB..64 GiB in bytes (default 256 MiB). */
        public Builder writeBufferBudget(long bytes) { this.writeBufferBudget = bytes; return this; }
        /** Data-In budget of the whole server, 64 KiB..64 GiB in bytes (default 256 MiB). */
        public Builder dataInBudget(long bytes) { this.dataInBudget = bytes; return this; }
        /** Data-In one session may hold, 64 KiB..dataInBudget in bytes (default 32 MiB). */
        public Builder dataInPerSession(long bytes) { this.dataInPerSession = bytes; return this; }
        /** TCP connections at once, 1..65536 (default 256). */
        public Builder maxConnections(int connections) { this.maxConnections = connections; return this; }
        /** TCP connections from one remote address at once, 1..65536 (default 64). */
        public Builder maxConnectionsPerAddress(int connections) {
            this.maxConnectionsPerAddress = connections;
            return this;
        }
        /** Normal sessions of one initiator name at once, 1..65536 (default 64). */
        public Builder maxSessionsPerInitiator(int sessions) { this.maxSessionsPerInitiator = sessions; return this; }
        /** Write buffer bytes one session may hold, 64 KiB..writeBufferBudget (default 64 MiB, at most the budget). */
        public Builder writeBufferPerSession(long bytes) { this.writeBufferPerSession = bytes; return this; }
        /** Silence allowed during login before the connection is closed (default 5 s). */
        public Builder loginIdleTimeout(Duration timeout) {
            this.loginIdleTimeout = Objects.requireNonNull(timeout);
            return this;
        }
        /** First delay of a failed CHAP login's answer (default 1 s; zero disables). */
        public Builder authFailureDelay(Duration delay) { this.authFailureDelay = Objects.requireNonNull(delay); return this; }
        /** Idle time before a NOP-In ping (default {@link ServerDefaults#NOP_IN_INTERVAL_SECONDS} s, as a configured server; zero disables; a second silent interval drops the connection). */
        public Builder nopInInterval(Duration interval) { this.nopInInterval = Objects.requireNonNull(interval); return this; }
        /** Time allowed from TCP connect to full feature phase (default 15 s). */
        public Builder loginTimeout(Duration timeout) { this.loginTimeout = Objects.requireNonNull(timeout); return this; }
        /** Time {@link IscsiServer#close()} waits for in-flight commands (default 10 s). */
        public Builder drainTimeout(Duration timeout) { this.drainTimeout = Objects.requireNonNull(timeout); return this; }
        /** Whether HeaderDigest=CRC32C may be negotiated (default true). */
        public Builder headerDigestAllowed(boolean allowed) { this.headerDigestAllowed = allowed; return this; }
        /** Whether DataDigest=CRC32C may be negotiated (default true). */
        public Builder dataDigestAllowed(boolean allowed) { this.dataDigestAllowed = allowed; return this; }

        public IscsiServerSettings build() {
            if (bindAddresses.isEmpty()) {
                bindAddresses.add(new InetSocketAddress(ServerDefaults.PORT));
            }
            requireRange("targetPortalGroupTag", targetPortalGroupTag, 1, 65535);
            requireRange("maxRecvDataSegmentLength", maxRecvDataSegmentLength, 512, 16777215);
            requireRange("maxBurstLength", maxBurstLength, 512, 16777215);
            requireRange("firstBurstLength", firstBurstLength, 512, maxBurstLength);
            requireRange("maxOutstandingR2T", maxOutstandingR2T, 1, 65535);
            requireRange("queueDepth", queueDepth, 1, 65536);
            requireRange("writeBufferBudget", writeBufferBudget, ServerDefaults.MIN_BUDGET, ServerDefaults.MAX_BUDGET);
            requireRange("dataInBudget", dataInBudget, ServerDefaults.MIN_BUDGET, ServerDefaults.MAX_BUDGET);
            requireRange("dataInPerSession", dataInPerSession, ServerDefaults.MIN_BUDGET, dataInBudget);
            requireRange("maxConnections", maxConnections, 1, 65536);
            requireRange("maxConnectionsPerAddress", maxConnectionsPerAddress, 1, 65536);
            requireRange("maxSessionsPerInitiator", maxSessionsPerInitiator, 1, 65536);
            writeBufferPerSession = Math.min(writeBufferPerSession, writeBufferBudget);
            requireRange("writeBufferPerSession", writeBufferPerSession, ServerDefaults.MIN_BUDGET, writeBufferBudget);
            if (loginIdleTimeout.isNegative() || loginIdleTimeout.isZero()) {
                throw new IllegalArgumentException("iSCSI setting loginIdleTimeout = " + loginIdleTimeout
                        + " is out of range: use a positive duration");
            }
            if (authFailureDelay.isNegative() || authFailureDelay.compareTo(Duration.ofMinutes(1)) > 0) {
                throw new IllegalArgumentException("iSCSI setting authFailureDelay = " + authFailureDelay
                        + " is out of range: use 0 to 60 seconds");
            }
            if (nopInInterval.isNegative() || loginTimeout.isNegative() || loginTimeout.isZero() || drainTimeout.isNegative()) {
                throw new IllegalArgumentException("iSCSI settings: nopInInterval and drainTimeout must be >= 0 and loginTimeout > 0");
            }
            return new IscsiServerSettings(this);
        }

        private static void requireRange(String name, long value, long min, long max) {
            if (value < min || value > max) {
                throw new IllegalArgumentException("iSCSI setting " + name + " = " + value
                        + " is out of range: use a value from " + min + " to " + max);
            }
        }
    }
}
