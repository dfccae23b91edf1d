package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.iscsi.proto.KeyNegotiation;
import io.stripestack.iscsi.proto.LoginKey;
import io.stripestack.iscsi.proto.TextKeys;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * The login phase of one connection (RFC 7143 sections 6 and 12-13): stage transitions, target and
 * initiator checks, CHAP, and operational key negotiation. Each key's sender, use and result function are
 * the shared {@link LoginKey} table's and {@link KeyNegotiation}'s; what is this target's own is its values
 * (the settings), which keys it records, and what it answers to keys out of place.
 * Knows nothing of PDUs or sockets: {@link #process} takes the keys of one login request and
 * returns the status, keys and transit of the response, so it is tested on its own.
 *
 * <p>Concurrency: one instance per connection, used on its event loop only.
 */
final class LoginNegotiator {
    static final int STAGE_SECURITY = Bhs.STAGE_SECURITY;
    static final int STAGE_OPERATIONAL = Bhs.STAGE_OPERATIONAL;
    static final int STAGE_FULL_FEATURE = Bhs.STAGE_FULL_FEATURE;

    static final int STATUS_SUCCESS = 0x0000;
    static final int STATUS_INITIATOR_ERROR = 0x0200;
    static final int STATUS_AUTHENTICATION_FAILURE = 0x0201;
    static final int STATUS_AUTHORIZATION_FAILURE = 0x0202;
    static final int STATUS_NOT_FOUND = 0x0203;
    static final int STATUS_UNSUPPORTED_VERSION = 0x0205;
    static final int STATUS_MISSING_PARAMETER = 0x0207;
    static final int STATUS_SESSION_TYPE_NOT_SUPPORTED = 0x0209;
    static final int STATUS_SESSION_DOES_NOT_EXIST = 0x020a;
    static final int STATUS_INVALID_DURING_LOGIN = 0x020b;
    /** Target error, service unavailable: the initiator retries the login later (RFC 7143 section 11.13.5). */
    static final int STATUS_SERVICE_UNAVAILABLE = 0x0301;
    static final int STATUS_OUT_OF_RESOURCES = 0x0302;

    private static final String IRRELEVANT = KeyNegotiation.IRRELEVANT;
    private static final String REJECT = KeyNegotiation.REJECT;
    private static final String NOT_UNDERSTOOD = KeyNegotiation.NOT_UNDERSTOOD;
    /** The one task reporting this target implements, answered whatever the initiator lists (as before RFC 7143). */
    private static final String TASK_REPORTING = "RFC3720";

    /** The answer to one login request. */
    static final class Step {
        final int status;
        final Map<String, String> keys;
        final boolean transit;
        final int nextStage;

        Step(int status, Map<String, String> keys, boolean transit, int nextStage) {
            this.status = status;
            this.keys = keys;
            this.transit = transit;
            this.nextStage = nextStage;
        }

        boolean failed() {
            return status != STATUS_SUCCESS;
        }

        boolean enteredFullFeature() {
            return !failed() && transit && nextStage == STAGE_FULL_FEATURE;
        }
    }

    private enum AuthState { NOT_STARTED, NONE_CHOSEN, CHAP_WAIT_ALGORITHM, CHAP_WAIT_RESPONSE, DONE }

    private final IscsiServerSettings settings;
    private final Function<String, IscsiTargetDefinition> targets;
    private final NegotiatedParameters params = new NegotiatedParameters();

    private boolean firstRequest = true;
    private int stage = STAGE_SECURITY;
    private boolean discovery;
    private IscsiTargetDefinition target;
    private String initiatorName;
    private AuthState auth = AuthState.NOT_STARTED;
    private ChapExchange chap;
    private boolean maxRecvDeclared;
    /** Every key the initiator has sent in this login, with its first value: each may come once only. */
    private final Map<String, String> declared = new HashMap<>();

    LoginNegotiator(IscsiServerSettings settings, Function<String, IscsiTargetDefinition> targets) {
        this.settings = settings;
        this.targets = targets;
        params.targetMaxRecvDataSegmentLength = settings.maxRecvDataSegmentLength();
    }

    NegotiatedParameters parameters() { return params; }
    boolean discovery() { return discovery; }
    /** The target logged in to; null for a discovery session. */
    IscsiTargetDefinition target() { return target; }
    String initiatorName() { return initiatorName; }
    /** The next request must carry the initiator's CHAP response (CHAP_N, CHAP_R). */
    boolean awaitsChapResponse() { return auth == AuthState.CHAP_WAIT_RESPONSE; }
    /** The initiator proved its CHAP secret (true only after a CHAP exchange). */
    boolean chapAuthenticated() { return chap != null && auth == AuthState.DONE; }

    /**
     * Processes one complete login request (continuations already joined).
     *
     * @param versionMin the request's Version-min; anything above 0 is unsupported
     */
    Step process(int currentStage, boolean transit, int requestedNextStage, int versionMin, Map<String, String> keys) {
        Map<String, String> response = new LinkedHashMap<>();
        if (versionMin > 0) {
            return fail(STATUS_UNSUPPORTED_VERSION);
        }
        int declaration = checkDeclarations(keys);
        if (declaration != STATUS_SUCCESS) {
            return fail(declaration);
        }
        if (currentStage != STAGE_SECURITY && currentStage != STAGE_OPERATIONAL
                || currentStage < stage
                || transit && (requestedNextStage <= currentStage || requestedNextStage == 2)) {
            return fail(STATUS_INITIATOR_ERROR);
        }
        if (firstRequest) {
            int status = identify(keys, response);
            if (status != STATUS_SUCCESS) {
                return fail(status);
            }
            firstRequest = false;
        }
        if (currentStage == STAGE_OPERATIONAL && stage == STAGE_SECURITY && !securityComplete()) {
            // skipping the security stage is only allowed when the target does not require CHAP
            if (chapRequired()) {
                return fail(STATUS_AUTHENTICATION_FAILURE);
            }
            auth = AuthState.DONE;
        }
        stage = currentStage;
        for (Map.Entry<String, String> e : keys.entrySet()) {
            String key = e.getKey();
            if (isDeclarationHandledByIdentify(key)) {
                continue;
            }
            LoginKey known = LoginKey.byName(key);
            int status = currentStage == STAGE_SECURITY && (known != null ? known.use() == LoginKey.Use.SECURITY
                    : key.startsWith("CHAP_"))
                    ? security(known, key, e.getValue(), keys, response)
                    : negotiate(known, key, e.getValue(), currentStage, response);
            if (status != STATUS_SUCCESS) {
                return fail(status);
            }
        }
        if (currentStage == STAGE_SECURITY && auth == AuthState.NOT_STARTED && transit) {
            // no AuthMethod offered: acceptable only if the target needs no authentication
            if (chapRequired()) {
                return fail(STATUS_AUTHENTICATION_FAILURE);
            }
            auth = AuthState.DONE;
        }
        boolean respondTransit = transit && (currentStage != STAGE_SECURITY || securityComplete());
        if (respondTransit && requestedNextStage == STAGE_FULL_FEATURE) {
            if (!maxRecvDeclared) {
                response.put("MaxRecvDataSegmentLength", Integer.toString(params.targetMaxRecvDataSegmentLength));
                maxRecvDeclared = true;
            }
            params.firstBurstLength = Math.min(params.firstBurstLength, params.maxBurstLength);
        }
        if (respondTransit) {
            stage = requestedNextStage;
        }
        return new Step(STATUS_SUCCESS, response, respondTransit, respondTransit ? requestedNextStage : currentStage);
    }

    private boolean chapRequired() {
        return target != null && target.chapRequired();
    }

    private boolean securityComplete() {
        return auth == AuthState.DONE || auth == AuthState.NONE_CHOSEN;
    }

    /**
     * RFC 7143 sections 6.1 and 6.2: keys and values within their lengths, and no key declared twice
     * in one login (a failure in the CHAP exchange is an authentication failure). The names the
     * first request identified with may be repeated unchanged, as libiscsi does after CHAP.
     */
    private int checkDeclarations(Map<String, String> keys) {
        for (Map.Entry<String, String> e : keys.entrySet()) {
            String key = e.getKey();
            String value = e.getValue();
            if (!TextKeys.withinLengths(key, value)) {
                return key.startsWith("CHAP_") ? STATUS_AUTHENTICATION_FAILURE : STATUS_INITIATOR_ERROR;
            }
            String earlier = declared.putIfAbsent(key, value);
            if (earlier != null && !(isDeclarationHandledByIdentify(key) && earlier.equals(value))) {
                return key.startsWith("CHAP_") ? STATUS_AUTHENTICATION_FAILURE : STATUS_INITIATOR_ERROR;
            }
        }
        return STATUS_SUCCESS;
    }

    private static Step fail(int status) {
        return new Step(status, Map.of(), false, STAGE_SECURITY);
    }

    /** First request: SessionType, InitiatorName, TargetName; lookup and access control. */
    private int identify(Map<String, String> keys, Map<String, String> response) {
        initiatorName = keys.get("InitiatorName");
        if (initiatorName == null || initiatorName.isEmpty()) {
            return STATUS_MISSING_PARAMETER;
        }
        if (TextKeys.utf8Length(initiatorName) > TextKeys.MAX_NAME_BYTES) {
            return STATUS_INITIATOR_ERROR;
        }
        String sessionType = keys.getOrDefault("SessionType", "Normal");
        if ("Discovery".equals(sessionType)) {
            discovery = true;
            return STATUS_SUCCESS;
        }
        if (!"Normal".equals(sessionType)) {
            return STATUS_SESSION_TYPE_NOT_SUPPORTED;
        }
        String targetName = keys.get("TargetName");
        if (targetName == null || targetName.isEmpty()) {
            return STATUS_MISSING_PARAMETER;
        }
        if (TextKeys.utf8Length(targetName) > TextKeys.MAX_NAME_BYTES) {
            return STATUS_INITIATOR_ERROR;
        }
        target = targets.apply(targetName);
        if (target == null) {
            return STATUS_NOT_FOUND;
        }
        if (!target.allows(initiatorName)) {
            return STATUS_AUTHORIZATION_FAILURE;
        }
        response.put("TargetPortalGroupTag", Integer.toString(settings.targetPortalGroupTag()));
        if (target.alias() != null) {
            response.put("TargetAlias", target.alias());
        }
        return STATUS_SUCCESS;
    }

    private static boolean isDeclarationHandledByIdentify(String key) {
        LoginKey known = LoginKey.byName(key);
        return known == LoginKey.INITIATOR_NAME || known == LoginKey.INITIATOR_ALIAS || known == LoginKey.TARGET_NAME
                || known == LoginKey.SESSION_TYPE;
    }

    /** A key of the security stage: AuthMethod, the CHAP keys; {@code known} is null for a CHAP_ key unknown. */
    private int security(LoginKey known, String key, String value, Map<String, String> keys,
            Map<String, String> response) {
        if (known == null) {
            response.put(key, NOT_UNDERSTOOD);
            return STATUS_SUCCESS;
        }
        switch (known) {
            case AUTH_METHOD:
                return chooseAuthMethod(value, response);
            case CHAP_A:
                if (auth != AuthState.CHAP_WAIT_ALGORITHM) {
                    return STATUS_INITIATOR_ERROR;
                }
                int algorithm = chap.chooseAlgorithm(value);
                if (algorithm < 0) {
                    return STATUS_AUTHENTICATION_FAILURE;
                }
                response.put(key, Integer.toString(algorithm));
                response.put(LoginKey.CHAP_I.keyName(), Integer.toString(chap.identifier()));
                response.put(LoginKey.CHAP_C.keyName(), chap.challengeText());
                auth = AuthState.CHAP_WAIT_RESPONSE;
                return STATUS_SUCCESS;
            case CHAP_N:
                if (auth != AuthState.CHAP_WAIT_RESPONSE) {
                    return STATUS_INITIATOR_ERROR;
                }
                if (!chap.verify(value, keys.get(LoginKey.CHAP_R.keyName()))) {
                    return STATUS_AUTHENTICATION_FAILURE;
                }
                String mutualId = keys.get(LoginKey.CHAP_I.keyName());
                String mutualChallenge = keys.get(LoginKey.CHAP_C.keyName());
                if (mutualId != null || mutualChallenge != null) {
                    String answer = chap.mutualResponse(mutualId == null ? "" : mutualId,
                            mutualChallenge == null ? "" : mutualChallenge);
                    if (answer == null) {
                        return STATUS_AUTHENTICATION_FAILURE;
                    }
                    response.put(LoginKey.CHAP_N.keyName(), target.mutualChapUser());
                    response.put(LoginKey.CHAP_R.keyName(), answer);
                }
                auth = AuthState.DONE;
                return STATUS_SUCCESS;
            default:
                // CHAP_R, CHAP_I, CHAP_C: consumed together with CHAP_N; a response without a name is an
                // authentication failure
                return keys.containsKey(LoginKey.CHAP_N.keyName()) ? STATUS_SUCCESS : STATUS_AUTHENTICATION_FAILURE;
        }
    }

    private int chooseAuthMethod(String offered, Map<String, String> response) {
        String key = LoginKey.AUTH_METHOD.keyName();
        if (chapRequired()) {
            if (KeyNegotiation.resolve(LoginKey.AUTH_METHOD, offered, "CHAP") == null) {
                return STATUS_AUTHENTICATION_FAILURE;
            }
            chap = new ChapExchange(target);
            auth = AuthState.CHAP_WAIT_ALGORITHM;
            response.put(key, "CHAP");
        } else if (KeyNegotiation.resolve(LoginKey.AUTH_METHOD, offered, "None") != null) {
            auth = AuthState.NONE_CHOSEN;
            response.put(key, "None");
        } else {
            return STATUS_AUTHENTICATION_FAILURE;
        }
        return STATUS_SUCCESS;
    }

    /**
     * A key outside the security stage's: the table says whether it is one to negotiate; this target answers an
     * unknown key NotUnderstood (an X# extension key not at all), a key the initiator may not send, or not in a
     * login, Reject, and one of the security stage's NotUnderstood. A negotiated key gets this target's value
     * and the result is recorded.
     */
    private int negotiate(LoginKey known, String key, String value, int currentStage, Map<String, String> response) {
        LoginKey.Phase phase = currentStage == STAGE_SECURITY ? LoginKey.Phase.SECURITY_STAGE
                : LoginKey.Phase.OPERATIONAL_STAGE;
        // every login here is a session's leading one: a second connection (a TSIH) is refused before this
        switch (KeyNegotiation.check(key, LoginKey.Sender.INITIATOR, phase, true, discovery)) {
            case UNKNOWN:
                if (!key.startsWith("X#")) {
                    response.put(key, NOT_UNDERSTOOD);
                }
                return STATUS_SUCCESS;
            case WRONG_SENDER:
                response.put(key, REJECT);
                return STATUS_SUCCESS;
            case WRONG_PHASE:
                response.put(key, known.use() == LoginKey.Use.SECURITY ? NOT_UNDERSTOOD : REJECT);
                return STATUS_SUCCESS;
            case IRRELEVANT:
                response.put(key, IRRELEVANT);
                return STATUS_SUCCESS;
            default:
                break;
        }
        if (known.has(LoginKey.Trait.OBSOLETE)) {
            response.put(key, known.defaultValue() != null ? known.defaultValue() : REJECT);
            return STATUS_SUCCESS;
        }
        switch (known) {
            case MAX_RECV_DATA_SEGMENT_LENGTH: {
                long n = KeyNegotiation.number(known, value);
                if (n < 0) {
                    response.put(key, REJECT);
                } else {
                    params.initiatorMaxRecvDataSegmentLength = (int) n;
                    response.put(key, Integer.toString(params.targetMaxRecvDataSegmentLength));
                    maxRecvDeclared = true;
                }
                return STATUS_SUCCESS;
            }
            case TASK_REPORTING:
                response.put(key, TASK_REPORTING);
                return STATUS_SUCCESS;
            case NODE_ARCHITECTURE:
                // a declaration of the initiator's that wants no answer
                return STATUS_SUCCESS;
            default:
                break;
        }
        String answer = KeyNegotiation.resolve(known, value, ours(known));
        if (answer == null) {
            response.put(key, REJECT);
            return STATUS_SUCCESS;
        }
        record(known, answer);
        response.put(key, answer);
        return STATUS_SUCCESS;
    }

    /** This target's value of a negotiated key: its settings, or the RFC default where it has none of its own. */
    private String ours(LoginKey key) {
        switch (key) {
            case HEADER_DIGEST:
                return settings.headerDigestAllowed() ? "None,CRC32C" : "None";
            case DATA_DIGEST:
                return settings.dataDigestAllowed() ? "None,CRC32C" : "None";
            case MAX_BURST_LENGTH:
                return Integer.toString(settings.maxBurstLength());
            case FIRST_BURST_LENGTH:
                return Integer.toString(settings.firstBurstLength());
            case MAX_OUTSTANDING_R2T:
                return Integer.toString(settings.maxOutstandingR2T());
            case INITIAL_R2T:
                return KeyNegotiation.yesNo(settings.initialR2T());
            case IMMEDIATE_DATA:
                return KeyNegotiation.yesNo(settings.immediateData());
            case DEFAULT_TIME_2_WAIT:
                return Integer.toString(params.defaultTime2Wait);
            case DEFAULT_TIME_2_RETAIN:
                return Integer.toString(params.defaultTime2Retain);
            default:
                // MaxConnections 1, ErrorRecoveryLevel 0, iSCSIProtocolLevel 1, DataPDUInOrder and
                // DataSequenceInOrder Yes: the defaults are what this target implements
                return key.defaultValue();
        }
    }

    /** Keeps the values in force that the connection uses after login. */
    private void record(LoginKey key, String value) {
        switch (key) {
            case HEADER_DIGEST -> params.headerDigest = "CRC32C".equals(value);
            case DATA_DIGEST -> params.dataDigest = "CRC32C".equals(value);
            case MAX_BURST_LENGTH -> params.maxBurstLength = Integer.parseInt(value);
            case FIRST_BURST_LENGTH -> params.firstBurstLength = Integer.parseInt(value);
            case MAX_OUTSTANDING_R2T -> params.maxOutstandingR2T = Integer.parseInt(value);
            case INITIAL_R2T -> params.initialR2T = KeyNegotiation.YES.equals(value);
            case IMMEDIATE_DATA -> params.immediateData = KeyNegotiation.YES.equals(value);
            case DEFAULT_TIME_2_WAIT -> params.defaultTime2Wait = Integer.parseInt(value);
            case DEFAULT_TIME_2_RETAIN -> params.defaultTime2Retain = Integer.parseInt(value);
            default -> {
                // negotiated, but this target runs with its own value whatever the result
            }
        }
    }
}
