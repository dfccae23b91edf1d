package io.stripestack.iscsi.proto;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;

/**
 * CHAP as RFC 7143 section 12.1.3 uses it (RFC 1994): the response is a hash (CHAP_A 5 = MD5, 7 = SHA-256) over
 * the identifier byte, the secret and the challenge; binary values travel as 0x hex or 0b base64 (section 6.1).
 * Both sides compute and decode here; what each keeps of an exchange (the target's challenge and identifier, the
 * initiator's secret) stays with it.
 *
 * <p>Secrets: a secret passes through no String, is named by no message, and the bytes of a char[] secret exist
 * only in one local array that is zeroed before returning. Stateless.
 */
public final class Chap {
    public static final int ALGORITHM_MD5 = 5;
    public static final int ALGORITHM_SHA256 = 7;
    /**
     * The shortest challenge of a peer's that the target answers (RFC 7143 section 12.1.3: challenges must be long
     * enough to be unpredictable): as long as an MD5 digest.
     */
    public static final int MIN_CHALLENGE_BYTES = 16;
    private static final HexFormat HEX = HexFormat.of();

    private Chap() {
    }

    /** The first algorithm of a CHAP_A list that is supported (MD5, SHA-256), or -1 when there is none. */
    public static int chooseAlgorithm(String offeredList) {
        for (String offered : offeredList.split(",")) {
            long number = TextKeys.parseNumber(offered.trim());
            if (number == ALGORITHM_MD5 || number == ALGORITHM_SHA256) {
                return (int) number;
            }
        }
        return -1;
    }

    /** A CHAP_I value: a number from 0 to 255, decimal or 0x hex; -1 if it is not one. */
    public static int parseIdentifier(String text) {
        long id = text == null ? -1 : TextKeys.parseNumber(text);
        return id < 0 || id > 255 ? -1 : (int) id;
    }

    /** Decodes a binary value: 0x hex (an odd number of digits allowed) or 0b base64; null if malformed. */
    public static byte[] decodeBinary(String text) {
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

    /** A binary value as 0x hex. */
    public static String encodeHex(byte[] bytes) {
        return "0x" + HEX.formatHex(bytes);
    }

    /** The response of {@code algorithm} to {@code challenge} with identifier {@code id} and {@code secret}. */
    public static byte[] response(int algorithm, int id, byte[] secret, byte[] challenge) {
        return response(algorithm, id, secret, secret.length, challenge);
    }

    /**
     * CHAP_R for MD5, as 0x hex, to the CHAP_I and CHAP_C values received, with a secret in characters (encoded
     * as UTF-8). A malformed identifier or challenge is an IOException that names neither the secret nor its
     * length.
     */
    public static String md5Response(String identifierText, char[] secret, String challengeText) throws IOException {
        int id = parseIdentifier(identifierText);
        if (id < 0) {
            throw new IOException("CHAP: cannot compute the response",
                    new IllegalArgumentException("CHAP_I is not a number from 0 to 255"));
        }
        byte[] challenge = decodeBinary(challengeText);
        if (challenge == null) {
            throw new IOException("CHAP: the target's challenge is neither 0x hex nor 0b base64");
        }
        CharsetEncoder utf8 = StandardCharsets.UTF_8.newEncoder()
                .onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);
        // room for the worst case, so the encoder never grows (and copies) the buffer holding the secret
        byte[] secretBytes = new byte[(int) Math.ceil(secret.length * (double) utf8.maxBytesPerChar())];
        try {
            ByteBuffer encoded = ByteBuffer.wrap(secretBytes);
            utf8.encode(CharBuffer.wrap(secret), encoded, true);
            utf8.flush(encoded);
            return encodeHex(response(ALGORITHM_MD5, id, secretBytes, encoded.position(), challenge));
        } finally {
            Arrays.fill(secretBytes, (byte) 0);
        }
    }

    private static byte[] response(int algorithm, int id, byte[] secret, int secretLength, byte[] challenge) {
        try {
            MessageDigest md = MessageDigest.getInstance(algorithm == ALGORITHM_MD5 ? "MD5" : "SHA-256");
            md.update((byte) id);
            md.update(secret, 0, secretLength);
            md.update(challenge);
            return md.digest();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK lacks MD5/SHA-256", e);
        }
    }
}
