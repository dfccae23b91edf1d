package io.stripestack.targetserver.iscsi;

import io.stripestack.iscsi.proto.Chap;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;

/**
 * The target side of one CHAP exchange (RFC 1994 as used by RFC 7143 section 12.1.3): picks the
 * algorithm (CHAP_A 5 = MD5, 7 = SHA-256), issues the challenge, verifies the initiator's response
 * and, for mutual CHAP, answers the initiator's challenge. The hashing and the encodings are the shared
 * {@link Chap}'s; what is the target's own is the exchange's state and its policy on the initiator's challenge.
 *
 * <p>Secrets are read from the {@link IscsiTargetDefinition} straight into the digest, never copied
 * or logged. One instance per login, used on the connection's event loop only.
 */
final class ChapExchange {
    private static final SecureRandom RANDOM = new SecureRandom();

    private final IscsiTargetDefinition target;
    private int algorithm;
    private int identifier;
    private byte[] challenge;

    ChapExchange(IscsiTargetDefinition target) {
        this.target = target;
    }

    /**
     * Chooses the first algorithm of the initiator's CHAP_A list this target supports and creates
     * the challenge; returns the chosen algorithm number, or -1 when none is supported.
     */
    int chooseAlgorithm(String offeredList) {
        int chosen = Chap.chooseAlgorithm(offeredList);
        if (chosen < 0) {
            return -1;
        }
        algorithm = chosen;
        identifier = RANDOM.nextInt(256);
        challenge = new byte[algorithm == Chap.ALGORITHM_MD5 ? 16 : 32];
        RANDOM.nextBytes(challenge);
        return algorithm;
    }

    int identifier() {
        return identifier;
    }

    String challengeText() {
        return Chap.encodeHex(challenge);
    }

    /** Whether CHAP_N/CHAP_R prove knowledge of the target's CHAP secret. */
    boolean verify(String name, String responseText) {
        byte[] response = Chap.decodeBinary(responseText);
        if (response == null || !target.chapUser().equals(name)) {
            return false;
        }
        byte[] expected = Chap.response(algorithm, identifier, target.chapSecret(), challenge);
        return MessageDigest.isEqual(expected, response);
    }

    /**
     * The target's answer to the initiator's mutual challenge, as a CHAP_R value, or null when it
     * must fail: no mutual secret configured, malformed values, a challenge shorter than
     * {@link Chap#MIN_CHALLENGE_BYTES}, or the initiator reflecting the target's own challenge back.
     */
    String mutualResponse(String identifierText, String challengeText) {
        int id = Chap.parseIdentifier(identifierText);
        byte[] initiatorChallenge = Chap.decodeBinary(challengeText);
        if (!target.mutualChapConfigured() || id < 0 || initiatorChallenge == null
                || initiatorChallenge.length < Chap.MIN_CHALLENGE_BYTES
                || Arrays.equals(initiatorChallenge, challenge)) {
            return null;
        }
        return Chap.encodeHex(Chap.response(algorithm, id, target.mutualChapSecret(), initiatorChallenge));
    }
}
