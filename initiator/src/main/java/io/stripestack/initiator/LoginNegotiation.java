package io.stripestack.initiator;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the initiator says at login and what it makes of the answers: the security stage (AuthMethod None, or
 * CHAP with MD5 when the URL carries a user and secret), the operational stage with the options' offers, and
 * the values in force afterwards (RFC 7143 section 13: ImmediateData is ANDed, InitialR2T ORed, the burst
 * lengths are the minimum; a digest asked for must be granted, section 13.1). Runs once on the login thread and keeps no state beyond the call.
 */
final class LoginNegotiation {
    private static final Logger log = LoggerFactory.getLogger(LoginNegotiation.class);
    /** Rounds a target may take to grant a stage change before the login gives up. */
    private static final int TRANSIT_RETRIES = 4;

    private LoginNegotiation() {
    }

    /** Logs in on {@code pdus} and opens {@code sequence}'s CmdSN window; the URL's secret is not cleared. */
    static IscsiInitiator.Negotiated negotiate(PduChannel pdus, SessionSequence sequence, IscsiUrl url,
            InitiatorOptions options, String description) throws IOException {
        LoginRound round = new LoginRound(pdus, description);
        authenticate(round, url, options, description);
        Map<String, String> operational = new LinkedHashMap<>(round.send(LoginRound.OPERATIONAL, true,
                LoginRound.FULL_FEATURE,
                "HeaderDigest=" + options.headerDigest().keyValue(),
                "DataDigest=" + options.dataDigest().keyValue(), "MaxConnections=1",
                "InitialR2T=" + yesNo(options.initialR2T()), "ImmediateData=" + yesNo(options.immediateData()),
                "MaxRecvDataSegmentLength=" + options.maxRecvDataSegmentLength(),
                "MaxBurstLength=" + options.maxBurstLength(), "FirstBurstLength=" + options.firstBurstLength(),
                "DefaultTime2Wait=0", "DefaultTime2Retain=0", "MaxOutstandingR2T=1", "DataPDUInOrder=Yes",
                "DataSequenceInOrder=Yes", "ErrorRecoveryLevel=0"));
        operational.putAll(insistOnTransit(round, LoginRound.OPERATIONAL, LoginRound.FULL_FEATURE,
                description + ": the target did not enter full feature phase"));
        boolean immediate = options.immediateData()
                && !"No".equals(operational.getOrDefault("ImmediateData", "Yes"));
        boolean initialR2t = options.initialR2T() || !"No".equals(operational.getOrDefault("InitialR2T", "Yes"));
        int maxBurst = Math.min(options.maxBurstLength(), number(operational, "MaxBurstLength", 262144));
        int firstBurst = Math.min(Math.min(options.firstBurstLength(), maxBurst),
                number(operational, "FirstBurstLength", 65536));
        int targetMrdsl = number(operational, "MaxRecvDataSegmentLength", 8192);
        boolean headerDigest = granted(operational, "HeaderDigest", options.headerDigest(), description);
        boolean dataDigest = granted(operational, "DataDigest", options.dataDigest(), description);
        IscsiInitiator.Negotiated negotiated = new IscsiInitiator.Negotiated(immediate, initialR2t, targetMrdsl,
                maxBurst, firstBurst, headerDigest, dataDigest);
        sequence.open(round.expCmdSn(), round.maxCmdSn(), round.statSn());
        pdus.useDigests(headerDigest, dataDigest);
        log.debug("{}: logged in, {}", description, negotiated);
        return negotiated;
    }

    /** The security stage, up to the target's agreement to move to the operational stage. */
    private static void authenticate(LoginRound round, IscsiUrl url, InitiatorOptions options, String description)
            throws IOException {
        if (url.chapUser() != null && url.chapSecret() != null) {
            Map<String, String> answer = round.send(LoginRound.SECURITY, false, LoginRound.SECURITY,
                    openingKeys(url, options, "CHAP,None"));
            if (answer.getOrDefault("AuthMethod", "None").equals("CHAP")) {
                answerChallenge(round, url, description);
            } else if (!round.transit()) {
                round.send(LoginRound.SECURITY, true, LoginRound.OPERATIONAL);
            }
        } else {
            round.send(LoginRound.SECURITY, true, LoginRound.OPERATIONAL, openingKeys(url, options, "None"));
        }
        insistOnTransit(round, LoginRound.SECURITY, LoginRound.OPERATIONAL,
                description + ": the target did not leave the security stage");
    }

    private static String[] openingKeys(IscsiUrl url, InitiatorOptions options, String authMethods) {
        return new String[] {"InitiatorName=" + options.initiatorIqn(), "TargetName=" + url.targetIqn(),
                "SessionType=Normal", "AuthMethod=" + authMethods};
    }

    private static void answerChallenge(LoginRound round, IscsiUrl url, String description) throws IOException {
        Map<String, String> challenge = round.send(LoginRound.SECURITY, false, LoginRound.SECURITY, "CHAP_A=5");
        if (!"5".equals(challenge.get("CHAP_A")) || challenge.get("CHAP_I") == null
                || challenge.get("CHAP_C") == null) {
            throw new IscsiLoginException(description + ": the target did not offer CHAP with MD5 (CHAP_A=5);"
                    + " got " + challenge.keySet(), -1, -1);
        }
        String response = ChapResponse.compute(challenge.get("CHAP_I"), url.chapSecret(), challenge.get("CHAP_C"));
        round.send(LoginRound.SECURITY, true, LoginRound.OPERATIONAL, "CHAP_N=" + url.chapUser(), "CHAP_R=" + response);
    }

    /**
     * Asks again, a few times, for the stage change the target has not granted yet (a target may need more
     * rounds to finish its side); returns the keys it answered on the way.
     */
    private static Map<String, String> insistOnTransit(LoginRound round, int stage, int nextStage, String refusal)
            throws IOException {
        Map<String, String> answers = new LinkedHashMap<>();
        for (int i = 0; !round.transit() && i < TRANSIT_RETRIES; i++) {
            answers.putAll(round.send(stage, true, nextStage));
        }
        if (!round.transit()) {
            throw new IscsiLoginException(refusal, -1, -1);
        }
        return answers;
    }

    /**
     * Whether the digest {@code key} is in force: we offer one value only, so the target either takes it or
     * answers None, Reject or NotUnderstood, and a refused CRC32C ends the login.
     */
    private static boolean granted(Map<String, String> keys, String key, Digest asked, String description)
            throws IscsiLoginException {
        String answer = keys.getOrDefault(key, Digest.NONE.keyValue());
        if (asked == Digest.NONE) {
            return false;
        }
        if (!asked.keyValue().equalsIgnoreCase(answer)) {
            throw new IscsiLoginException(description + ": " + key + "=" + asked.keyValue()
                    + " was asked for but the target answered " + key + "=" + answer
                    + "; enable the digest on the target or stop asking for it", -1, -1);
        }
        return true;
    }

    private static String yesNo(boolean b) {
        return b ? "Yes" : "No";
    }

    private static int number(Map<String, String> keys, String key, int rfcDefault) {
        String v = keys.get(key);
        if (v == null) {
            return rfcDefault;
        }
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            return rfcDefault; // NotUnderstood, Irrelevant, Reject: the default stands
        }
    }
}
