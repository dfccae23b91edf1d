package io.stripestack.initiator;

import static io.stripestack.iscsi.proto.LoginKey.AUTH_METHOD;
import static io.stripestack.iscsi.proto.LoginKey.CHAP_A;
import static io.stripestack.iscsi.proto.LoginKey.CHAP_C;
import static io.stripestack.iscsi.proto.LoginKey.CHAP_I;
import static io.stripestack.iscsi.proto.LoginKey.CHAP_N;
import static io.stripestack.iscsi.proto.LoginKey.CHAP_R;
import static io.stripestack.iscsi.proto.LoginKey.DATA_DIGEST;
import static io.stripestack.iscsi.proto.LoginKey.DATA_PDU_IN_ORDER;
import static io.stripestack.iscsi.proto.LoginKey.DATA_SEQUENCE_IN_ORDER;
import static io.stripestack.iscsi.proto.LoginKey.DEFAULT_TIME_2_RETAIN;
import static io.stripestack.iscsi.proto.LoginKey.DEFAULT_TIME_2_WAIT;
import static io.stripestack.iscsi.proto.LoginKey.ERROR_RECOVERY_LEVEL;
import static io.stripestack.iscsi.proto.LoginKey.FIRST_BURST_LENGTH;
import static io.stripestack.iscsi.proto.LoginKey.HEADER_DIGEST;
import static io.stripestack.iscsi.proto.LoginKey.IMMEDIATE_DATA;
import static io.stripestack.iscsi.proto.LoginKey.INITIAL_R2T;
import static io.stripestack.iscsi.proto.LoginKey.INITIATOR_NAME;
import static io.stripestack.iscsi.proto.LoginKey.MAX_BURST_LENGTH;
import static io.stripestack.iscsi.proto.LoginKey.MAX_CONNECTIONS;
import static io.stripestack.iscsi.proto.LoginKey.MAX_OUTSTANDING_R2T;
import static io.stripestack.iscsi.proto.LoginKey.MAX_RECV_DATA_SEGMENT_LENGTH;
import static io.stripestack.iscsi.proto.LoginKey.SESSION_TYPE;
import static io.stripestack.iscsi.proto.LoginKey.TARGET_NAME;

import io.stripestack.iscsi.proto.Chap;
import io.stripestack.iscsi.proto.KeyNegotiation;
import io.stripestack.iscsi.proto.LoginKey;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the initiator says at login and what it makes of the answers: the security stage (AuthMethod None, or
 * CHAP with MD5 when the URL carries a user and secret), the operational stage with the options' offers, and
 * the values in force afterwards, each resolved by the shared key table's result function over our offer and the
 * target's answer (RFC 7143 section 13: ImmediateData is ANDed, InitialR2T ORed, the burst lengths are the
 * minimum; a missing or unusable answer leaves the key's default). What is the initiator's own: its offers, and
 * that a digest asked for must be granted (section 13.1). Runs once on the login thread and keeps no state beyond
 * the call.
 */
final class LoginNegotiation {
    private static final Logger log = LoggerFactory.getLogger(LoginNegotiation.class);
    /** Rounds a target may take to grant a stage change before the login gives up. */
    private static final int TRANSIT_RETRIES = 4;
    private static final String CHAP_MD5 = Integer.toString(Chap.ALGORITHM_MD5);

    private LoginNegotiation() {
    }

    /** Logs in on {@code pdus} and opens {@code sequence}'s CmdSN window; the URL's secret is not cleared. */
    static IscsiInitiator.Negotiated negotiate(PduChannel pdus, SessionSequence sequence, IscsiUrl url,
            InitiatorOptions options, String description) throws IOException {
        LoginRound round = new LoginRound(pdus, description);
        authenticate(round, url, options, description);
        Map<LoginKey, String> offers = operationalOffers(options);
        Map<String, String> operational = new LinkedHashMap<>(round.send(LoginRound.OPERATIONAL, true,
                LoginRound.FULL_FEATURE, keys(offers)));
        operational.putAll(insistOnTransit(round, LoginRound.OPERATIONAL, LoginRound.FULL_FEATURE,
                description + ": the target did not enter full feature phase"));
        boolean immediate = KeyNegotiation.YES.equals(inForce(IMMEDIATE_DATA, offers, operational));
        boolean initialR2t = KeyNegotiation.YES.equals(inForce(INITIAL_R2T, offers, operational));
        int maxBurst = Integer.parseInt(inForce(MAX_BURST_LENGTH, offers, operational));
        int firstBurst = Math.min(maxBurst, Integer.parseInt(inForce(FIRST_BURST_LENGTH, offers, operational)));
        int targetMrdsl = Integer.parseInt(inForce(MAX_RECV_DATA_SEGMENT_LENGTH, offers, operational));
        boolean headerDigest = granted(operational, HEADER_DIGEST, options.headerDigest(), description);
        boolean dataDigest = granted(operational, DATA_DIGEST, options.dataDigest(), description);
        IscsiInitiator.Negotiated negotiated = new IscsiInitiator.Negotiated(immediate, initialR2t, targetMrdsl,
                maxBurst, firstBurst, headerDigest, dataDigest);
        sequence.open(round.expCmdSn(), round.maxCmdSn(), round.statSn());
        pdus.useDigests(headerDigest, dataDigest);
        log.debug("{}: logged in, {}", description, negotiated);
        return negotiated;
    }

    /**
     * What this initiator offers: the options' digests, data and burst settings; one connection, error recovery
     * level 0, data in order, and no waiting or retaining after a connection drops (a remote member logs in anew).
     */
    private static Map<LoginKey, String> operationalOffers(InitiatorOptions options) {
        Map<LoginKey, String> offers = new LinkedHashMap<>();
        offers.put(HEADER_DIGEST, options.headerDigest().keyValue());
        offers.put(DATA_DIGEST, options.dataDigest().keyValue());
        offers.put(MAX_CONNECTIONS, "1");
        offers.put(INITIAL_R2T, KeyNegotiation.yesNo(options.initialR2T()));
        offers.put(IMMEDIATE_DATA, KeyNegotiation.yesNo(options.immediateData()));
        offers.put(MAX_RECV_DATA_SEGMENT_LENGTH, Integer.toString(options.maxRecvDataSegmentLength()));
        offers.put(MAX_BURST_LENGTH, Integer.toString(options.maxBurstLength()));
        offers.put(FIRST_BURST_LENGTH, Integer.toString(options.firstBurstLength()));
        offers.put(DEFAULT_TIME_2_WAIT, "0");
        offers.put(DEFAULT_TIME_2_RETAIN, "0");
        offers.put(MAX_OUTSTANDING_R2T, "1");
        offers.put(DATA_PDU_IN_ORDER, KeyNegotiation.YES);
        offers.put(DATA_SEQUENCE_IN_ORDER, KeyNegotiation.YES);
        offers.put(ERROR_RECOVERY_LEVEL, "0");
        return offers;
    }

    /** The security stage, up to the target's agreement to move to the operational stage. */
    private static void authenticate(LoginRound round, IscsiUrl url, InitiatorOptions options, String description)
            throws IOException {
        if (url.chapUser() != null && url.chapSecret() != null) {
            Map<String, String> answer = round.send(LoginRound.SECURITY, false, LoginRound.SECURITY,
                    openingKeys(url, options, "CHAP,None"));
            if ("CHAP".equals(KeyNegotiation.inForce(AUTH_METHOD, "CHAP,None", answer.get(AUTH_METHOD.keyName())))) {
                answerChallenge(round, url, description);
            } else if (!round.transit()) {
                round.send(LoginRound.SECURITY, true, LoginRound.OPERATIONAL, Map.of());
            }
        } else {
            round.send(LoginRound.SECURITY, true, LoginRound.OPERATIONAL, openingKeys(url, options, "None"));
        }
        insistOnTransit(round, LoginRound.SECURITY, LoginRound.OPERATIONAL,
                description + ": the target did not leave the security stage");
    }

    private static Map<String, String> openingKeys(IscsiUrl url, InitiatorOptions options, String authMethods) {
        Map<LoginKey, String> keys = new LinkedHashMap<>();
        keys.put(INITIATOR_NAME, options.initiatorIqn());
        keys.put(TARGET_NAME, url.targetIqn());
        keys.put(SESSION_TYPE, "Normal");
        keys.put(AUTH_METHOD, authMethods);
        return keys(keys);
    }

    private static void answerChallenge(LoginRound round, IscsiUrl url, String description) throws IOException {
        Map<String, String> challenge = round.send(LoginRound.SECURITY, false, LoginRound.SECURITY,
                Map.of(CHAP_A.keyName(), CHAP_MD5));
        String identifier = challenge.get(CHAP_I.keyName());
        String challengeText = challenge.get(CHAP_C.keyName());
        if (!CHAP_MD5.equals(challenge.get(CHAP_A.keyName())) || identifier == null || challengeText == null) {
            throw new IscsiLoginException(description + ": the target did not offer CHAP with MD5 (CHAP_A=5);"
                    + " got " + challenge.keySet(), -1, -1);
        }
        String response = Chap.md5Response(identifier, url.chapSecret(), challengeText);
        Map<String, String> keys = new LinkedHashMap<>();
        keys.put(CHAP_N.keyName(), url.chapUser());
        keys.put(CHAP_R.keyName(), response);
        round.send(LoginRound.SECURITY, true, LoginRound.OPERATIONAL, keys);
    }

    /**
     * Asks again, a few times, for the stage change the target has not granted yet (a target may need more
     * rounds to finish its side); returns the keys it answered on the way.
     */
    private static Map<String, String> insistOnTransit(LoginRound round, int stage, int nextStage, String refusal)
            throws IOException {
        Map<String, String> answers = new LinkedHashMap<>();
        for (int i = 0; !round.transit() && i < TRANSIT_RETRIES; i++) {
            answers.putAll(round.send(stage, true, nextStage, Map.of()));
        }
        if (!round.transit()) {
            throw new IscsiLoginException(refusal, -1, -1);
        }
        return answers;
    }

    /** The value in force of an operational key we offered, by the table's result function over the answer. */
    private static String inForce(LoginKey key, Map<LoginKey, String> offers, Map<String, String> answers) {
        return KeyNegotiation.inForce(key, offers.get(key), answers.get(key.keyName()));
    }

    /**
     * Whether the digest {@code key} is in force: we offer one value only, so the target either takes it or
     * answers None, Reject or NotUnderstood, and a refused CRC32C ends the login.
     */
    private static boolean granted(Map<String, String> keys, LoginKey key, Digest asked, String description)
            throws IscsiLoginException {
        if (asked == Digest.NONE) {
            return false;
        }
        String answer = keys.getOrDefault(key.keyName(), key.defaultValue());
        if (KeyNegotiation.inForce(key, asked.keyValue(), answer) == null) {
            throw new IscsiLoginException(description + ": " + key.keyName() + "=" + asked.keyValue()
                    + " was asked for but the target answered " + key.keyName() + "=" + answer
                    + "; enable the digest on the target or stop asking for it", -1, -1);
        }
        return true;
    }

    private static Map<String, String> keys(Map<LoginKey, String> values) {
        Map<String, String> named = new LinkedHashMap<>();
        values.forEach((key, value) -> named.put(key.keyName(), value));
        return named;
    }
}
