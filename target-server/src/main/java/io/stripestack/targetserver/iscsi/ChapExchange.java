package io.stripestack.targetserver.iscsi;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;

/**
 * The target side of one CHAP exchange (RFC 1994 as used by RFC 7143 section 12.1.3): picks the
 * algorithm (CHAP_A 5 = MD5, 7 = SHA-256), issues the challenge, verifies the initiator's response
 * and, for mutual CHAP, answers the initiator's challenge.
 *
 * <p>Secrets are read from the {@link IscsiTargetDefinition} straight into the digest, never copied
 * or logged. One instance per login, used on the connection's event loop only.
 */
final class ChapExchange {
    static final int ALGORITHM_MD5 = 5;
    static final int ALGORITHM_SHA256 = 7;
    /**
     * The shortest challenge of the initiator's that is answered (RFC 7143 section 12.1.3: challenges
     * must be long enough to be unpredictable): as long as an MD5 digest.
     */
    static final int MIN_CHALLENGE_BYTES = 16;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final HexFormat HEX = HexFormat.of();

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
        for (String offered : offeredList.split(",")) {
            long number = TextParameters.parseNumber(offered.trim());
            if (number == ALGORITHM_MD5 || number == ALGORITHM_SHA256) {
                algorithm = (int) number;
                identifier = RANDOM.nextInt(256);
                challenge = new byte[algorithm == ALGORITHM_MD5 ? 16 : 32];
                RANDOM.nextBytes(challenge);
                return algorithm;
            }
        }
        return -1;
    }

    int identifier() {
        return identifier;
    }

    String challengeText() {
        return "0x" + HEX.formatHex(challenge);
    }

    /** Whether CHAP_N/CHAP_R prove knowledge of the target's CHAP secret. */
    boolean verify(String name, String responseText) {
        byte[] response = decodeBinary(responseText);
        if (response == null || !target.chapUser().equals(name)) {
            return false;
        }
        byte[] expected = digest(identifier, target.chapSecret(), challenge);
        return MessageDigest.isEqual(expected, response);
    }

    /**
     * The target's answer to the initiator's mutual challenge, as a CHAP_R value, or null when it
     * must fail: no mutual secret configured, malformed values, a challenge shorter than
     * {@link #MIN_CHALLENGE_BYTES}, or the initiator reflecting the target's own challenge back.
     */
    String mutualResponse(String identifierText, String challengeText) {
        long id = TextParameters.parseNumber(identifierText);
        byte[] initiatorChallenge = decodeBinary(challengeText);
        if (!target.mutualChapConfigured() || id < 0 || id > 255 || initiatorChallenge == null
                || initiatorChallenge.length < MIN_CHALLENGE_BYTES || Arrays.equals(initiatorChallenge, challenge)) {
            return null;
        }
        return "0x" + HEX.formatHex(digest((int) id, target.mutualChapSecret(), initiatorChallenge));
    }

    private byte[] digest(int id, byte[] secret, byte[] challengeBytes) {
        try {
            MessageDigest md = MessageDigest.getInstance(algorithm == ALGORITHM_MD5 ? "MD5" : "SHA-256");
            md.update((byte) id);
            md.update(secret);
            md.update(challengeBytes);
            return md.digest();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK lacks MD5/SHA-256", e);
        }
    }

    /** Decodes a binary value: 0x hex or 0b base64 (RFC 7143 section 6.1); null if malformed. */
    static byte[] decodeBinary(String text) {
        if (text == null || text.length() < 3) {
            return null;
        }
        String body = text.substring(2);
        try {
            if (text.startsWith("0x") || text.startsWith("0X")) {
                return HEX.parseHex(body.length() % 2 == 0 ? body : "0" + body);
            }
            if (text.startsWith("0b") || text.startsWith("0B")) {
                return Base64.getDecoder().decode(body);
            }
        } catch (IllegalArgumentException e) {
            return null;
        }
        return null;
    }
}
