package io.stripestack.initiator;

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
 * CHAP_R for one-way CHAP with MD5 (RFC 1994; RFC 7143 section 12.1.3): MD5 over the identifier byte, the
 * secret and the challenge, as 0x hex. The secret's bytes exist only in one local array, zeroed before
 * returning; it never passes through a String, and no message here names it. Stateless; login thread only.
 */
final class ChapResponse {
    private ChapResponse() {
    }

    static String compute(String identifier, char[] secret, String challengeText) throws IOException {
        byte[] challenge = decodeBinary(challengeText);
        CharsetEncoder utf8 = StandardCharsets.UTF_8.newEncoder()
                .onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);
        // room for the worst case, so the encoder never grows (and copies) the buffer holding the secret
        byte[] secretBytes = new byte[(int) Math.ceil(secret.length * (double) utf8.maxBytesPerChar())];
        try {
            ByteBuffer encoded = ByteBuffer.wrap(secretBytes);
            utf8.encode(CharBuffer.wrap(secret), encoded, true);
            utf8.flush(encoded);
            MessageDigest md5 = MessageDigest.getInstance("MD5");
            md5.update((byte) Integer.parseInt(identifier));
            md5.update(secretBytes, 0, encoded.position());
            md5.update(challenge);
            return "0x" + HexFormat.of().formatHex(md5.digest());
        } catch (NoSuchAlgorithmException | NumberFormatException e) {
            throw new IOException("CHAP: cannot compute the response (" + e.getClass().getSimpleName() + ")", e);
        } finally {
            Arrays.fill(secretBytes, (byte) 0);
        }
    }

    /** RFC 7143 section 6.1: binary values are 0x hex or 0b base64. */
    private static byte[] decodeBinary(String text) throws IOException {
        if (text.startsWith("0x") || text.startsWith("0X")) {
            return HexFormat.of().parseHex(text.length() % 2 == 1 ? "0" + text.substring(2) : text.substring(2));
        }
        if (text.startsWith("0b") || text.startsWith("0B")) {
            return Base64.getDecoder().decode(text.substring(2));
        }
        throw new IOException("CHAP: the target's challenge is neither 0x hex nor 0b base64");
    }
}
