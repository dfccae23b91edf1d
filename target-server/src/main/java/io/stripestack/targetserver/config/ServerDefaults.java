package io.stripestack.targetserver.config;

/**
 * The server defaults that both a configuration without the key and the iSCSI transport's settings builder
 * fall back to, and the range of the buffer budgets both validate, so that each value is written once.
 * The configuration keys are documented in docs/configuration.md.
 */
public final class ServerDefaults {
    /** The iSCSI port IANA assigned (RFC 7143 section 13.2): listen and advertise port when none is given. */
    public static final int PORT = 3260;
    public static final int PORTAL_GROUP_TAG = 1;
    public static final int QUEUE_DEPTH = 128;
    public static final int MAX_RECV_DATA_SEGMENT_LENGTH = 262144;
    public static final int MAX_BURST_LENGTH = 1048576;
    public static final int FIRST_BURST_LENGTH = 262144;
    public static final boolean IMMEDIATE_DATA = true;
    public static final boolean INITIAL_R2T = false;
    public static final long WRITE_BUFFER_BUDGET = 256L << 20;
    public static final long DATA_IN_BUDGET = 256L << 20;
    public static final long DATA_IN_PER_SESSION = 32L << 20;
    /** Smallest buffer budget: 64 KiB (below 1 MiB the allowance holds less than a default first burst). */
    public static final long MIN_BUDGET = 64L << 10;
    public static final long MAX_BUDGET = 1L << 36;
    public static final int MAX_CONNECTIONS = 256;
    public static final int MAX_CONNECTIONS_PER_ADDRESS = 64;
    public static final int MAX_SESSIONS_PER_INITIATOR = 64;
    /** A session's share of the write buffer budget (capped at the budget). */
    public static final long WRITE_BUFFER_PER_SESSION = 64L << 20;
    /** Seconds a connection still logging in may stay silent. */
    public static final int LOGIN_IDLE_TIMEOUT_SECONDS = 5;
    /** Seconds of silence on a connection before the target pings it with a NOP-In (0: never). */
    public static final int NOP_IN_INTERVAL_SECONDS = 10;
    public static final int AUTH_FAILURE_DELAY_MILLIS = 1000;

    private ServerDefaults() {
    }
}
