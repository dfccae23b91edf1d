package io.stripestack.crypto.luks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import org.bouncycastle.crypto.generators.PKCS5S2ParametersGenerator;
import org.bouncycastle.crypto.params.KeyParameter;
import org.junit.jupiter.api.Test;

/** PBKDF2, the AF splitter, the JSON reader/writer and the KDF benchmark, each against an independent reference. */
class LuksPrimitivesTest {
    private static final HexFormat HEX = HexFormat.of();

    @Test
    void pbkdf2MatchesRfc7914Vector() {
        byte[] out = LuksHash.SHA256.pbkdf2("passwd".getBytes(StandardCharsets.US_ASCII),
                "salt".getBytes(StandardCharsets.US_ASCII), 1, 64);
        assertEquals("55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
                + "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783", HEX.formatHex(out));
    }

    @Test
    void pbkdf2MatchesTheJdkForTextPasswords() throws Exception {
        byte[] salt = new byte[32];
        new Random(1).nextBytes(salt);
        SecretKeyFactory jdk = SecretKeyFactory.getInstance("PBKDF2WithHmacSHA512");
        byte[] expected = jdk.generateSecret(new PBEKeySpec("hunter2".toCharArray(), salt, 1234, 80 * 8)).getEncoded();
        assertArrayEquals(expected, LuksHash.SHA512.pbkdf2("hunter2".getBytes(StandardCharsets.UTF_8), salt, 1234, 80));
    }

    @Test
    void pbkdf2MatchesBouncyCastleForEveryHashAndAnEmptyPassword() {
        byte[] salt = new byte[32];
        new Random(3).nextBytes(salt);
        for (LuksHash hash : LuksHash.values()) {
            for (byte[] password : new byte[][] {new byte[0], "binary\0key\n".getBytes(StandardCharsets.ISO_8859_1)}) {
                PKCS5S2ParametersGenerator reference = new PKCS5S2ParametersGenerator(hash.newDigest());
                reference.init(password, salt, 77);
                byte[] expected = ((KeyParameter) reference.generateDerivedParameters(100 * 8)).getKey();
                assertArrayEquals(expected, hash.pbkdf2(password, salt, 77, 100), hash.luksName());
            }
        }
    }

    @Test
    void afMergeWithTwoStripesIsDiffusedFirstStripeXorSecond() throws Exception {
        byte[] material = new byte[2 * 40]; // 40 bytes: one full sha256 piece and an 8-byte tail piece
        new Random(2).nextBytes(material);
        MessageDigest sha256 = MessageDigest.getInstance("SHA-256");
        byte[] diffused = new byte[40];
        sha256.update(new byte[] {0, 0, 0, 0});
        sha256.update(material, 0, 32);
        System.arraycopy(sha256.digest(), 0, diffused, 0, 32);
        sha256.update(new byte[] {0, 0, 0, 1});
        sha256.update(material, 32, 8);
        System.arraycopy(sha256.digest(), 0, diffused, 32, 8);
        byte[] expected = new byte[40];
        for (int i = 0; i < 40; i++) {
            expected[i] = (byte) (diffused[i] ^ material[40 + i]);
        }
        assertArrayEquals(expected, AfSplitter.merge(material, 40, 2, LuksHash.SHA256));
    }

    @Test
    void afSplitThenMergeRecoversTheKeyAndAnyDamageLosesIt() {
        for (LuksHash hash : LuksHash.values()) {
            byte[] key = new byte[24];
            new Random(hash.ordinal()).nextBytes(key);
            byte[] material = new byte[24 * 4000];
            AfSplitter.split(key, 4000, hash, new SecureRandom(), material);
            assertArrayEquals(key, AfSplitter.merge(material, 24, 4000, hash), hash.luksName());
            material[12345] ^= 1;
            assertFalse(java.util.Arrays.equals(key, AfSplitter.merge(material, 24, 4000, hash)), hash.luksName());
        }
    }

    @Test
    void jsonWriterIsCompactAndRoundTrips() throws Exception {
        Map<String, Object> tree = new LinkedHashMap<>();
        tree.put("a", "x\"y\\z/");
        tree.put("n", 4000);
        tree.put("big", 1L << 40);
        tree.put("list", List.of("0", "1"));
        tree.put("empty", new LinkedHashMap<>());
        tree.put("t", true);
        String json = LuksJson.write(tree);
        assertEquals("{\"a\":\"x\\\"y\\\\z/\",\"n\":4000,\"big\":1099511627776,\"list\":[\"0\",\"1\"],\"empty\":{},\"t\":true}", json);
        assertEquals(tree, LuksJson.parseObject(json, "test"));
    }

    @Test
    void jsonReaderTakesEscapedSlashesAndRefusesNonJson() throws Exception {
        assertEquals("ab/c+=", LuksJson.parseObject("{\"salt\":\"ab\\/c+=\"}", "test").get("salt"));
        assertEquals("a\\/b", LuksJson.parseObject("{\"s\":\"a\\\\\\/b\"}", "test").get("s"));
        assertThrows(LuksHeaderException.class, () -> LuksJson.parseObject("[1,2]", "test"));
        assertThrows(LuksHeaderException.class, () -> LuksJson.parseObject("{\"a\":1,\"a\":2}", "test"));
        assertThrows(LuksHeaderException.class, () -> LuksJson.parseObject("{\"a\":[1,}", "test"));
        LuksHeaderException e = assertThrows(LuksHeaderException.class, () -> LuksJson.parseObject("key: value", "area X"));
        assertTrue(e.getMessage().startsWith("area X"), e.getMessage());
    }

    @Test
    void benchmarkScalesCostWithTheTarget() {
        Kdf.Pbkdf2 quick = KdfBenchmark.pbkdf2(LuksHash.SHA256, Duration.ofMillis(10), 64);
        Kdf.Pbkdf2 slow = KdfBenchmark.pbkdf2(LuksHash.SHA256, Duration.ofMillis(400), 64);
        assertTrue(quick.iterations() >= KdfBenchmark.MIN_PBKDF2_ITERATIONS);
        assertTrue(slow.iterations() > quick.iterations(), quick + " vs " + slow);

        Kdf.Argon2 argon = KdfBenchmark.argon2id(Duration.ofMillis(50), 64 * 1024, 1);
        assertTrue(argon.idVariant());
        assertTrue(argon.time() >= KdfBenchmark.MIN_ARGON2_TIME, argon.describe());
        assertTrue(argon.memoryKiB() <= 64 * 1024 && argon.memoryKiB() >= 32, argon.describe());
    }
}
