package io.stripestack.iscsi.proto;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
}
