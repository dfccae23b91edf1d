package io.stripestack.iscsi.proto;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * Every login and text key either side of stripestack negotiates or declares (RFC 7143 sections 12 and 13), with
 * what the RFC says of it: its result function ({@link Kind}), who may send it ({@link Sender}), where it may be
 * used ({@link Use}), whether a discovery session ignores it, its default, and, for numbers, its valid range. The
 * result functions themselves are {@link KeyNegotiation}'s. What each side offers and accepts (its own limits) is
 * that side's, not the table's. Immutable.
 */
public enum LoginKey {
    AUTH_METHOD("AuthMethod", Kind.LIST, Sender.BOTH, Use.SECURITY, "None"),
    CHAP_A("CHAP_A", Kind.LIST, Sender.BOTH, Use.SECURITY, null),
    CHAP_I("CHAP_I", Kind.DECLARATIVE, Sender.BOTH, Use.SECURITY, null, 0, 255),
    CHAP_C("CHAP_C", Kind.DECLARATIVE, Sender.BOTH, Use.SECURITY, null, Trait.BINARY),
    CHAP_N("CHAP_N", Kind.DECLARATIVE, Sender.BOTH, Use.SECURITY, null),
    CHAP_R("CHAP_R", Kind.DECLARATIVE, Sender.BOTH, Use.SECURITY, null, Trait.BINARY),
    HEADER_DIGEST("HeaderDigest", Kind.LIST, Sender.BOTH, Use.LOGIN, "None"),
    DATA_DIGEST("DataDigest", Kind.LIST, Sender.BOTH, Use.LOGIN, "None"),
    MAX_CONNECTIONS("MaxConnections", Kind.NUMERIC_MIN, Sender.BOTH, Use.LEADING, "1", 1, 65535,
            Trait.NORMAL_SESSION_ONLY),
    SEND_TARGETS("SendTargets", Kind.DECLARATIVE, Sender.INITIATOR, Use.FULL_FEATURE, null),
    TARGET_NAME("TargetName", Kind.DECLARATIVE, Sender.BOTH, Use.ANY, null),
    INITIATOR_NAME("InitiatorName", Kind.DECLARATIVE, Sender.INITIATOR, Use.LOGIN, null),
    TARGET_ALIAS("TargetAlias", Kind.DECLARATIVE, Sender.TARGET, Use.ANY, null),
    INITIATOR_ALIAS("InitiatorAlias", Kind.DECLARATIVE, Sender.INITIATOR, Use.ANY, null),
    TARGET_ADDRESS("TargetAddress", Kind.DECLARATIVE, Sender.TARGET, Use.ANY, null),
    TARGET_PORTAL_GROUP_TAG("TargetPortalGroupTag", Kind.DECLARATIVE, Sender.TARGET, Use.LOGIN, null,
            0, 65535),
    INITIAL_R2T("InitialR2T", Kind.BOOLEAN_OR, Sender.BOTH, Use.LEADING, "Yes", Trait.NORMAL_SESSION_ONLY),
    IMMEDIATE_DATA("ImmediateData", Kind.BOOLEAN_AND, Sender.BOTH, Use.LEADING, "Yes",
            Trait.NORMAL_SESSION_ONLY),
    MAX_RECV_DATA_SEGMENT_LENGTH("MaxRecvDataSegmentLength", Kind.DECLARATIVE, Sender.BOTH, Use.ANY, "8192",
            512, 16777215),
    MAX_BURST_LENGTH("MaxBurstLength", Kind.NUMERIC_MIN, Sender.BOTH, Use.LEADING, "262144", 512, 16777215,
            Trait.NORMAL_SESSION_ONLY),
    FIRST_BURST_LENGTH("FirstBurstLength", Kind.NUMERIC_MIN, Sender.BOTH, Use.LEADING, "65536", 512, 16777215,
            Trait.NORMAL_SESSION_ONLY),
    DEFAULT_TIME_2_WAIT("DefaultTime2Wait", Kind.NUMERIC_MAX, Sender.BOTH, Use.LEADING, "2", 0, 3600),
    DEFAULT_TIME_2_RETAIN("DefaultTime2Retain", Kind.NUMERIC_MIN, Sender.BOTH, Use.LEADING, "20", 0, 3600),
    MAX_OUTSTANDING_R2T("MaxOutstandingR2T", Kind.NUMERIC_MIN, Sender.BOTH, Use.LEADING, "1", 1, 65535,
            Trait.NORMAL_SESSION_ONLY),
    DATA_PDU_IN_ORDER("DataPDUInOrder", Kind.BOOLEAN_OR, Sender.BOTH, Use.LEADING, "Yes",
            Trait.NORMAL_SESSION_ONLY),
    DATA_SEQUENCE_IN_ORDER("DataSequenceInOrder", Kind.BOOLEAN_OR, Sender.BOTH, Use.LEADING, "Yes",
            Trait.NORMAL_SESSION_ONLY),
    ERROR_RECOVERY_LEVEL("ErrorRecoveryLevel", Kind.NUMERIC_MIN, Sender.BOTH, Use.LEADING, "0", 0, 2),
    SESSION_TYPE("SessionType", Kind.DECLARATIVE, Sender.INITIATOR, Use.LEADING, "Normal"),
    TASK_REPORTING("TaskReporting", Kind.LIST, Sender.BOTH, Use.LEADING, "RFC3720"),
    ISCSI_PROTOCOL_LEVEL("iSCSIProtocolLevel", Kind.NUMERIC_MIN, Sender.BOTH, Use.LEADING, "1", 0, 31),
    NODE_ARCHITECTURE("X#NodeArchitecture", Kind.DECLARATIVE, Sender.BOTH, Use.LEADING, null),
    // RFC 7143 section 13.25: obsolete; a responder answers the markers No (which RFC 3720 initiators accept)
    // and their intervals Reject
    IF_MARKER("IFMarker", Kind.BOOLEAN_AND, Sender.BOTH, Use.LOGIN, "No", Trait.OBSOLETE),
    OF_MARKER("OFMarker", Kind.BOOLEAN_AND, Sender.BOTH, Use.LOGIN, "No", Trait.OBSOLETE),
    IF_MARK_INT("IFMarkInt", Kind.DECLARATIVE, Sender.BOTH, Use.LOGIN, null, Trait.OBSOLETE),
    OF_MARK_INT("OFMarkInt", Kind.DECLARATIVE, Sender.BOTH, Use.LOGIN, null, Trait.OBSOLETE);

    /** A key's result function (RFC 7143 section 6.2). */
    public enum Kind {
        /** The responder picks the first value of the offered list it supports (or answers Reject). */
        LIST,
        /** A number: the smaller of the offer and the responder's value. */
        NUMERIC_MIN,
        /** A number: the larger of the offer and the responder's value. */
        NUMERIC_MAX,
        /** Yes or No: Yes only when both say Yes. */
        BOOLEAN_AND,
        /** Yes or No: Yes when either says Yes. */
        BOOLEAN_OR,
        /** No negotiation: each side states its own value, which binds only itself (or informs). */
        DECLARATIVE
    }

    /** Who may send the key in a request or offer. */
    public enum Sender {
        INITIATOR, TARGET, BOTH;

        public boolean includes(Sender side) {
            return this == BOTH || this == side;
        }
    }

    /** Where the key may be used: RFC 7143's "Use" (LO, IO, ALL, FFPO) and the security stage's keys. */
    public enum Use {
        /** In the security stage of a login only (AuthMethod and the CHAP keys). */
        SECURITY,
        /** In the login of a session's leading connection only (session-wide values; "LO"). */
        LEADING,
        /** In any connection's login, not in the full feature phase ("IO"). */
        LOGIN,
        /** In a login and in full feature phase text ("ALL"). */
        ANY,
        /** In full feature phase text only ("FFPO"). */
        FULL_FEATURE
    }

    /** What else the RFC says of a key. */
    public enum Trait {
        /** Carries a binary value (0x hex or 0b base64), which may be longer than other values. */
        BINARY,
        /** "Irrelevant when: SessionType=Discovery": a discovery session answers Irrelevant. */
        NORMAL_SESSION_ONLY,
        /** RFC 7143 section 13.25: obsolete (markers), answered only so that RFC 3720 initiators go on. */
        OBSOLETE
    }

    /** Where a key was received. */
    public enum Phase {
        SECURITY_STAGE, OPERATIONAL_STAGE, FULL_FEATURE
    }

    private static final Map<String, LoginKey> BY_NAME = new HashMap<>();

    static {
        for (LoginKey k : values()) {
            BY_NAME.put(k.keyName, k);
        }
    }

    private final String keyName;
    private final Kind kind;
    private final Sender sender;
    private final Use use;
    private final String defaultValue;
    private final long min;
    private final long max;
    private final Set<Trait> traits;

    LoginKey(String keyName, Kind kind, Sender sender, Use use, String defaultValue, Trait... traits) {
        this(keyName, kind, sender, use, defaultValue, -1, -1, traits);
    }

    LoginKey(String keyName, Kind kind, Sender sender, Use use, String defaultValue, long min, long max,
            Trait... traits) {
        this.keyName = keyName;
        this.kind = kind;
        this.sender = sender;
        this.use = use;
        this.defaultValue = defaultValue;
        this.min = min;
        this.max = max;
        this.traits = traits.length == 0 ? Set.of() : Set.copyOf(Arrays.asList(traits));
    }

    /** The key of that name (names are case-sensitive), or null for a key this table does not know. */
    public static LoginKey byName(String name) {
        return BY_NAME.get(name);
    }

    /** The name as it goes on the wire. */
    public String keyName() {
        return keyName;
    }

    public Kind kind() {
        return kind;
    }

    public Sender sender() {
        return sender;
    }

    public Use use() {
        return use;
    }

    /** The value in force when the key is not negotiated; null when the key has none. */
    public String defaultValue() {
        return defaultValue;
    }

    /** Whether the key carries a number (and so has {@link #min()} and {@link #max()}). */
    public boolean numeric() {
        return min >= 0;
    }

    public long min() {
        return min;
    }

    public long max() {
        return max;
    }

    public boolean has(Trait trait) {
        return traits.contains(trait);
    }

    /** Whether {@code side} may send this key at all. */
    public boolean sendableBy(Sender side) {
        return sender.includes(side);
    }

    /** Whether this key may be received in {@code phase}, on a session's leading connection or another one. */
    public boolean usableIn(Phase phase, boolean leadingConnection) {
        return switch (use) {
            case SECURITY -> phase == Phase.SECURITY_STAGE;
            case LEADING -> phase != Phase.FULL_FEATURE && leadingConnection;
            case LOGIN -> phase != Phase.FULL_FEATURE;
            case ANY -> true;
            case FULL_FEATURE -> phase == Phase.FULL_FEATURE;
        };
    }
}
