package io.stripestack.iscsi.proto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

class ChapTest {
    private static final byte[] CHALLENGE = HexFormat.of().parseHex("0123456789abcdef");

    private static String expected(int identifier, String secret, byte[] challenge) throws Exception {
        MessageDigest md5 = MessageDigest.getInstance("MD5");
        md5.update((byte) identifier);
        md5.update(secret.getBytes(StandardCharsets.UTF_8));
        md5.update(challenge);
        return "0x" + HexFormat.of().formatHex(md5.digest());
    }

    @Test
    void hashesIdentifierSecretAndChallengeWithTheSecretInUtf8() throws Exception {
        String secret = "grüße-秘密-\uD83D\uDD11"; // two- three- and four-byte UTF-8 sequences
        String hex = "0x" + HexFormat.of().formatHex(CHALLENGE);
        assertEquals(expected(200, secret, CHALLENGE), Chap.md5Response("200", secret.toCharArray(), hex));
    }

    @Test
    void acceptsBase64AndOddLengthHexChallenges() throws Exception {
        char[] secret = "0123456789ab".toCharArray();
        String base64 = "0b" + Base64.getEncoder().encodeToString(CHALLENGE);
        assertEquals(expected(7, "0123456789ab", CHALLENGE), Chap.md5Response("7", secret, base64));
        assertEquals(expected(7, "0123456789ab", new byte[] {0x0a, (byte) 0xbc}),
                Chap.md5Response("7", secret, "0xabc"));
    }

    @Test
    void aBadIdentifierIsReportedWithoutTheSecret() {
        IOException e = assertThrows(IOException.class,
                () -> Chap.md5Response("x", "s3cret-value".toCharArray(), "0x00"));
        assertFalse(String.valueOf(e.getMessage()).contains("s3cret"));
        assertFalse(String.valueOf(e.getCause().getMessage()).contains("s3cret"));
    }

    @Test
    void anIdentifierOutsideOneByteIsRefusedNotWrapped() {
        assertThrows(IOException.class, () -> Chap.md5Response("256", "secret".toCharArray(), "0x00"));
        assertThrows(IOException.class, () -> Chap.md5Response("-1", "secret".toCharArray(), "0x00"));
        assertEquals(0x10, Chap.parseIdentifier("0x10"));
        assertEquals(-1, Chap.parseIdentifier(null));
    }

    @Test
    void aMalformedChallengeIsAnIoExceptionThatNamesNoSecret() {
        for (String challenge : new String[] {"0xzz", "0b!!", "0x", "abcd", "0b"}) {
            IOException e = assertThrows(IOException.class,
                    () -> Chap.md5Response("1", "s3cret-value".toCharArray(), challenge), challenge);
            assertFalse(String.valueOf(e.getMessage()).contains("s3cret"));
            assertNull(Chap.decodeBinary(challenge), challenge);
        }
    }

    @Test
    void choosesTheFirstSupportedAlgorithmOfTheList() {
        assertEquals(Chap.ALGORITHM_SHA256, Chap.chooseAlgorithm("6,7,5"));
        assertEquals(Chap.ALGORITHM_MD5, Chap.chooseAlgorithm(" 5 ,7"));
        assertEquals(-1, Chap.chooseAlgorithm("6,128"));
    }

    @Test
    void theSha256ResponseHashesIdentifierSecretAndChallenge() throws Exception {
        byte[] secret = "target-secret".getBytes(StandardCharsets.UTF_8);
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        sha.update((byte) 9);
        sha.update(secret);
        sha.update(CHALLENGE);
        assertArrayEquals(sha.digest(), Chap.response(Chap.ALGORITHM_SHA256, 9, secret, CHALLENGE));
        assertEquals("0x" + HexFormat.of().formatHex(CHALLENGE), Chap.encodeHex(CHALLENGE));
    }
}
