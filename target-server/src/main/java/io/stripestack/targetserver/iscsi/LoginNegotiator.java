package io.stripestack.targetserver.iscsi;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import java.util.function.IntConsumer;

/**
 * The login phase of one connection (RFC 7143 sections 6 and 12-13): stage transitions, target and
 * initiator checks, CHAP, and operational key negotiation with each key's result function.
 * Knows nothing of PDUs or sockets: {@link #process} takes the keys of one login request and
 * returns the status, keys and transit of the response, so it is tested on its own.
 *
 * <p>Concurrency: one instance per connection, used on its event loop only.
 */
final class LoginNegotiator {
    static final int STAGE_SECURITY = 0;
    static final int STAGE_OPERATIONAL = 1;
    static final int STAGE_FULL_FEATURE = 3;

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

    /** RFC 7143 section 4.2.7.1: an iSCSI name is at most 223 bytes. */
    static final int MAX_NAME_BYTES = 223;
    /** RFC 7143 section 6.1: key names are at most 63 bytes, simple values at most 255. */
    static final int MAX_KEY_BYTES = 63;
    static final int MAX_VALUE_BYTES = 255;
    /** CHAP challenges and responses are binary values: 1024 bytes at most, hex-encoded here. */
    static final int MAX_CHAP_VALUE_BYTES = 2 + 2 * 1024;

    private static final String IRRELEVANT = "Irrelevant";
    private static final String REJECT = "Reject";
    private static final String NOT_UNDERSTOOD = "NotUnderstood";

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
    private final Map<String, String> declared = new java.util.HashMap<>();

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
            int status = currentStage == STAGE_SECURITY && isSecurityKey(key)
                    ? security(key, e.getValue(), keys, response)
                    : negotiate(key, e.getValue(), response);
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
            boolean chapValue = key.equals("CHAP_R") || key.equals("CHAP_C");
            if (utf8Length(key) > MAX_KEY_BYTES
                    || utf8Length(value) > (chapValue ? MAX_CHAP_VALUE_BYTES : MAX_VALUE_BYTES)) {
                return key.startsWith("CHAP_") ? STATUS_AUTHENTICATION_FAILURE : STATUS_INITIATOR_ERROR;
            }
            String earlier = declared.putIfAbsent(key, value);
            if (earlier != null && !(isDeclarationHandledByIdentify(key) && earlier.equals(value))) {
                return key.startsWith("CHAP_") ? STATUS_AUTHENTICATION_FAILURE : STATUS_INITIATOR_ERROR;
            }
        }
        return STATUS_SUCCESS;
    }

    private static int utf8Length(String text) {
        return text.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
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
        if (utf8Length(initiatorName) > MAX_NAME_BYTES) {
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
        if (utf8Length(targetName) > MAX_NAME_BYTES) {
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
        switch (key) {
            case "InitiatorName":
            case "InitiatorAlias":
            case "TargetName":
            case "SessionType":
                return true;
            default:
                return false;
        }
    }

    private static boolean isSecurityKey(String key) {
        return key.equals("AuthMethod") || key.startsWith("CHAP_");
    }

    private int security(String key, String value, Map<String, String> keys, Map<String, String> response) {
        switch (key) {
            case "AuthMethod":
                return chooseAuthMethod(value, response);
            case "CHAP_A":
                if (auth != AuthState.CHAP_WAIT_ALGORITHM) {
                    return STATUS_INITIATOR_ERROR;
                }
                int algorithm = chap.chooseAlgorithm(value);
                if (algorithm < 0) {
                    return STATUS_AUTHENTICATION_FAILURE;
                }
                response.put("CHAP_A", Integer.toString(algorithm));
                response.put("CHAP_I", Integer.toString(chap.identifier()));
                response.put("CHAP_C", chap.challengeText());
                auth = AuthState.CHAP_WAIT_RESPONSE;
                return STATUS_SUCCESS;
            case "CHAP_N":
                if (auth != AuthState.CHAP_WAIT_RESPONSE) {
                    return STATUS_INITIATOR_ERROR;
                }
                if (!chap.verify(value, keys.get("CHAP_R"))) {
                    return STATUS_AUTHENTICATION_FAILURE;
                }
                if (keys.containsKey("CHAP_I") || keys.containsKey("CHAP_C")) {
                    String answer = chap.mutualResponse(keys.getOrDefault("CHAP_I", ""), keys.getOrDefault("CHAP_C", ""));
                    if (answer == null) {
                        return STATUS_AUTHENTICATION_FAILURE;
                    }
                    response.put("CHAP_N", target.mutualChapUser());
                    response.put("CHAP_R", answer);
                }
                auth = AuthState.DONE;
                return STATUS_SUCCESS;
            case "CHAP_R":
            case "CHAP_I":
            case "CHAP_C":
                // consumed together with CHAP_N; a response without a name is an authentication failure
                return keys.containsKey("CHAP_N") ? STATUS_SUCCESS : STATUS_AUTHENTICATION_FAILURE;
            default:
                response.put(key, NOT_UNDERSTOOD);
                return STATUS_SUCCESS;
        }
    }

    private int chooseAuthMethod(String offered, Map<String, String> response) {
        boolean chapOffered = false;
        boolean noneOffered = false;
        for (String method : offered.split(",")) {
            chapOffered |= method.equals("CHAP");
            noneOffered |= method.equals("None");
        }
        if (chapRequired()) {
            if (!chapOffered) {
                return STATUS_AUTHENTICATION_FAILURE;
            }
            chap = new ChapExchange(target);
            auth = AuthState.CHAP_WAIT_ALGORITHM;
            response.put("AuthMethod", "CHAP");
        } else if (noneOffered) {
            auth = AuthState.NONE_CHOSEN;
            response.put("AuthMethod", "None");
        } else {
            return STATUS_AUTHENTICATION_FAILURE;
        }
        return STATUS_SUCCESS;
    }

    /** Operational keys: each key's result function of RFC 7143 section 13. */
    private int negotiate(String key, String value, Map<String, String> response) {
        switch (key) {
            case "HeaderDigest":
                params.headerDigest = chooseDigest(key, value, settings.headerDigestAllowed(), response);
                return STATUS_SUCCESS;
            case "DataDigest":
                params.dataDigest = chooseDigest(key, value, settings.dataDigestAllowed(), response);
                return STATUS_SUCCESS;
            case "MaxRecvDataSegmentLength": {
                long n = numberInRange(value, 512, 16777215);
                if (n < 0) {
                    response.put(key, REJECT);
                } else {
                    params.initiatorMaxRecvDataSegmentLength = (int) n;
                    response.put(key, Integer.toString(params.targetMaxRecvDataSegmentLength));
                    maxRecvDeclared = true;
                }
                return STATUS_SUCCESS;
            }
            case "ErrorRecoveryLevel":
                return minimum(key, value, 0, 2, 0, response, null);
            case "DefaultTime2Wait": {
                long n = numberInRange(value, 0, 3600);
                if (n < 0) {
                    response.put(key, REJECT);
                } else {
                    params.defaultTime2Wait = (int) Math.max(n, params.defaultTime2Wait);
                    response.put(key, Integer.toString(params.defaultTime2Wait));
                }
                return STATUS_SUCCESS;
            }
            case "DefaultTime2Retain":
                return minimum(key, value, 0, 3600, params.defaultTime2Retain, response, r -> params.defaultTime2Retain = r);
            case "IFMarker":
            case "OFMarker":
                // RFC 7143 section 13.25: obsolete; "No" is the allowed alternative to Reject that RFC 3720 initiators accept
                response.put(key, "No");
                return STATUS_SUCCESS;
            case "IFMarkInt":
            case "OFMarkInt":
                response.put(key, REJECT);
                return STATUS_SUCCESS;
            case "TaskReporting":
                response.put(key, "RFC3720");
                return STATUS_SUCCESS;
            case "iSCSIProtocolLevel":
                return minimum(key, value, 0, 31, 1, response, null);
            default:
                break;
        }
        if (isSessionWideNormalKey(key)) {
            if (discovery) {
                response.put(key, IRRELEVANT);
                return STATUS_SUCCESS;
            }
            return negotiateNormalSessionKey(key, value, response);
        }
        if (key.startsWith("X#")) {
            // IANA-registered declarative keys such as X#NodeArchitecture want no answer
            return STATUS_SUCCESS;
        }
        response.put(key, isTargetDeclaration(key) ? REJECT : NOT_UNDERSTOOD);
        return STATUS_SUCCESS;
    }

    private static boolean isSessionWideNormalKey(String key) {
        switch (key) {
            case "MaxConnections":
            case "InitialR2T":
            case "ImmediateData":
            case "MaxBurstLength":
            case "FirstBurstLength":
            case "MaxOutstandingR2T":
            case "DataPDUInOrder":
            case "DataSequenceInOrder":
                return true;
            default:
                return false;
        }
    }

    private static boolean isTargetDeclaration(String key) {
        return key.equals("TargetAlias") || key.equals("TargetAddress") || key.equals("TargetPortalGroupTag")
                || key.equals("SendTargets");
    }

    private int negotiateNormalSessionKey(String key, String value, Map<String, String> response) {
        switch (key) {
            case "MaxConnections":
                return minimum(key, value, 1, 65535, 1, response, null);
            case "MaxBurstLength":
                return minimum(key, value, 512, 16777215, settings.maxBurstLength(), response, r -> params.maxBurstLength = r);
            case "FirstBurstLength":
                return minimum(key, value, 512, 16777215, settings.firstBurstLength(), response, r -> params.firstBurstLength = r);
            case "MaxOutstandingR2T":
                return minimum(key, value, 1, 65535, settings.maxOutstandingR2T(), response, r -> params.maxOutstandingR2T = r);
            case "InitialR2T": {
                Boolean offered = yesNo(value);
                if (offered == null) {
                    response.put(key, REJECT);
                } else {
                    params.initialR2T = offered || settings.initialR2T();
                    response.put(key, params.initialR2T ? "Yes" : "No");
                }
                return STATUS_SUCCESS;
            }
            case "ImmediateData": {
                Boolean offered = yesNo(value);
                if (offered == null) {
                    response.put(key, REJECT);
                } else {
                    params.immediateData = offered && settings.immediateData();
                    response.put(key, params.immediateData ? "Yes" : "No");
                }
                return STATUS_SUCCESS;
            }
            default:
                // DataPDUInOrder, DataSequenceInOrder: OR with this target's Yes, so always Yes
                response.put(key, yesNo(value) == null ? REJECT : "Yes");
                return STATUS_SUCCESS;
        }
    }

    private boolean chooseDigest(String key, String offeredList, boolean crcAllowed, Map<String, String> response) {
        for (String offered : offeredList.split(",")) {
            if (offered.equals("None")) {
                response.put(key, "None");
                return false;
            }
            if (offered.equals("CRC32C") && crcAllowed) {
                response.put(key, "CRC32C");
                return true;
            }
        }
        response.put(key, REJECT);
        return false;
    }

    private static int minimum(String key, String value, long min, long max, int ours,
            Map<String, String> response, IntConsumer result) {
        long n = numberInRange(value, min, max);
        if (n < 0) {
            response.put(key, REJECT);
            return STATUS_SUCCESS;
        }
        int chosen = (int) Math.min(n, ours);
        if (result != null) {
            result.accept(chosen);
        }
        response.put(key, Integer.toString(chosen));
        return STATUS_SUCCESS;
    }

    private static long numberInRange(String value, long min, long max) {
        long n = TextParameters.parseNumber(value);
        return n < min || n > max ? -1 : n;
    }

    private static Boolean yesNo(String value) {
        if (value.equals("Yes")) {
            return Boolean.TRUE;
        }
        return value.equals("No") ? Boolean.FALSE : null;
    }
}
