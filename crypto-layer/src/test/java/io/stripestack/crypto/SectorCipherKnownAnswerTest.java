package io.stripestack.crypto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every spec and key size, 512- and 4096-byte sectors with and without iv_large_sectors, sector numbers
 * near zero and beyond 2^32 (where plain wraps and plain64 does not): each sector the layer encrypts must
 * equal OpenSSL's encryption of that sector under the dm-crypt IV computed independently in the test.
 */
class SectorCipherKnownAnswerTest {

    static Stream<Arguments> cases() {
        List<Arguments> cases = new ArrayList<>();
        String[] specs = {"aes-cbc-essiv:sha256", "aes-cbc-plain64", "aes-cbc-plain", "aes-cbc-plain64be", "aes-xts-plain64"};
        for (String spec : specs) {
            int[] keySizes = spec.contains("xts") ? new int[] {32, 64} : new int[] {16, 32};
            for (int keyBytes : keySizes) {
                cases.add(Arguments.of(spec, keyBytes, 512, false, 0L));
                cases.add(Arguments.of(spec, keyBytes, 512, false, (1L << 32) - 1));
                cases.add(Arguments.of(spec, keyBytes, 4096, false, 8L * 5 + 8));
                cases.add(Arguments.of(spec, keyBytes, 4096, true, 8L * ((1L << 32) - 1)));
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} key {1} sector {2} large {3} at {4}")
    @MethodSource("cases")
    void sectorsMatchOpenSsl(String specText, int keyBytes, int sectorSize, boolean ivLarge, long firstSector)
            throws Exception {
        CryptSpec spec = CryptSpec.parse(specText);
        Random random = new Random(specText.hashCode() * 31L + keyBytes + sectorSize + firstSector);
        byte[] key = new byte[keyBytes];
        random.nextBytes(key);
        int sectors = 2;
        byte[] plain = new byte[sectors * sectorSize];
        random.nextBytes(plain);

        ByteBuffer buf = ByteBuffer.allocateDirect(plain.length);
        buf.put(plain).flip();
        byte[] ciphertext = new byte[plain.length];
        try (SectorCipher cipher = SectorCipher.create(spec, key, sectorSize, ivLarge)) {
            cipher.encrypt(buf, firstSector);
            buf.get(0, ciphertext);
            cipher.decrypt(buf, firstSector);
            byte[] decrypted = new byte[plain.length];
            buf.get(0, decrypted);
            assertArrayEquals(plain, decrypted, "decrypt(encrypt(x))");
        }

        int units = sectorSize / 512;
        List<byte[]> ivs = new ArrayList<>();
        List<byte[]> plainSectors = new ArrayList<>();
        for (int i = 0; i < sectors; i++) {
            long unit = firstSector + (long) i * units;
            ivs.add(ReferenceCipher.dmCryptIv(spec, key, ivLarge ? unit / units : unit));
            plainSectors.add(Arrays.copyOfRange(plain, i * sectorSize, (i + 1) * sectorSize));
        }
        List<byte[]> expected = ReferenceCipher.encrypt(spec, key, ivs, plainSectors);
        for (int i = 0; i < sectors; i++) {
            byte[] actual = Arrays.copyOfRange(ciphertext, i * sectorSize, (i + 1) * sectorSize);
            assertArrayEquals(expected.get(i), actual, "sector " + i);
        }
    }
}
