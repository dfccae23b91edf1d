package io.stripestack.crypto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/**
 * XTS-AES against the IEEE 1619-2007 Annex B vectors whose data units are 512 bytes (the only ones a
 * dm-crypt sector can carry): vector 4 (AES-128, data unit 0) and vector 10 (AES-256, data unit 0xff).
 * The data unit sequence number is the plain64 IV, so it is the sector number passed to the cipher.
 */
class XtsIeee1619VectorsTest {

    /** Annex B plaintext of vectors 4 to 14: bytes 00..ff twice. */
    private static byte[] plaintext512() {
        byte[] p = new byte[512];
        for (int i = 0; i < p.length; i++) {
            p[i] = (byte) i;
        }
        return p;
    }

    private static final String V4_KEY = "27182818284590452353602874713526" + "31415926535897932384626433832795";
    private static final String V4_CTX =
            "27a7479befa1d476489f308cd4cfa6e2a96e4bbe3208ff25287dd3819616e89cc78cf7f5e543445f8333d8fa7f560000"
            + "05279fa5d8b5e4ad40e736ddb4d35412328063fd2aab53e5ea1e0a9f332500a5df9487d07a5c92cc512c8866c7e860ce"
            + "93fdf166a24912b422976146ae20ce846bb7dc9ba94a767aaef20c0d61ad02655ea92dc4c4e41a8952c651d33174be51"
            + "a10c421110e6d81588ede82103a252d8a750e8768defffed9122810aaeb99f9172af82b604dc4b8e51bcb08235a6f434"
            + "1332e4ca60482a4ba1a03b3e65008fc5da76b70bf1690db4eae29c5f1badd03c5ccf2a55d705ddcd86d449511ceb7ec3"
            + "0bf12b1fa35b913f9f747a8afd1b130e94bff94effd01a91735ca1726acd0b197c4e5b03393697e126826fb6bbde8ecc"
            + "1e08298516e2c9ed03ff3c1b7860f6de76d4cecd94c8119855ef5297ca67e9f3e7ff72b1e99785ca0a7e7720c5b36dc6"
            + "d72cac9574c8cbbc2f801e23e56fd344b07f22154beba0f08ce8891e643ed995c94d9a69c9f1b5f499027a78572aeebd"
            + "74d20cc39881c213ee770b1010e4bea718846977ae119f7a023ab58cca0ad752afe656bb3c17256a9f6e9bf19fdd5a38"
            + "fc82bbe872c5539edb609ef4f79c203ebb140f2e583cb2ad15b4aa5b655016a8449277dbd477ef2c8d6c017db738b18d"
            + "eb4a427d1923ce3ff262735779a418f20a282df920147beabe421ee5319d0568";

    private static final String V10_KEY = "2718281828459045235360287471352662497757247093699959574966967627"
            + "3141592653589793238462643383279502884197169399375105820974944592";
    private static final String V10_CTX =
            "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b5d31e276f8fe4a8d66b317f9ac683f44"
            + "680a86ac35adfc3345befecb4bb188fd5776926c49a3095eb108fd1098baec70aaa66999a72a82f27d848b21d4a741b0"
            + "c5cd4d5fff9dac89aeba122961d03a757123e9870f8acf1000020887891429ca2a3e7a7d7df7b10355165c8b9a6d0a7d"
            + "e8b062c4500dc4cd120c0f7418dae3d0b5781c34803fa75421c790dfe1de1834f280d7667b327f6c8cd7557e12ac3a0f"
            + "93ec05c52e0493ef31a12d3d9260f79a289d6a379bc70c50841473d1a8cc81ec583e9645e07b8d9670655ba5bbcfecc6"
            + "dc3966380ad8fecb17b6ba02469a020a84e18e8f84252070c13e9f1f289be54fbc481457778f616015e1327a02b140f1"
            + "505eb309326d68378f8374595c849d84f4c333ec4423885143cb47bd71c5edae9be69a2ffeceb1bec9de244fbe15992b"
            + "11b77c040f12bd8f6a975a44a0f90c29a9abc3d4d893927284c58754cce294529f8614dcd2aba991925fedc4ae74ffac"
            + "6e333b93eb4aff0479da9a410e4450e0dd7ae4c6e2910900575da401fc07059f645e8b7e9bfdef33943054ff84011493"
            + "c27b3429eaedb4ed5376441a77ed43851ad77f16f541dfd269d50d6a5f14fb0aab1cbb4c1550be97f7ab4066193c4caa"
            + "773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151";

    @Test
    void vector4Aes128() {
        check(V4_KEY, 0, V4_CTX);
    }

    @Test
    void vector10Aes256() {
        check(V10_KEY, 0xff, V10_CTX);
    }

    private static void check(String keyHex, long dataUnit, String ctxHex) {
        byte[] expected = Hex.decode(ctxHex);
        try (SectorCipher cipher = SectorCipher.create(CryptSpec.parse("aes-xts-plain64"), Hex.decode(keyHex), 512, false)) {
            for (boolean direct : new boolean[] {false, true}) {
                ByteBuffer buf = direct ? ByteBuffer.allocateDirect(512) : ByteBuffer.allocate(512);
                buf.put(plaintext512()).flip();
                cipher.encrypt(buf, dataUnit);
                byte[] actual = new byte[512];
                buf.get(0, actual);
                assertArrayEquals(expected, actual, "ciphertext, direct=" + direct);
                cipher.decrypt(buf, dataUnit);
                buf.get(0, actual);
                assertArrayEquals(plaintext512(), actual, "decrypted, direct=" + direct);
            }
        }
    }
}
