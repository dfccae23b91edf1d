package io.stripestack.crypto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.stripestack.blockdev.MemoryBlockDevice;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The layout arithmetic against OpenSSL: plaintext written through the layer at payload offset X must sit
 * below at {@code offset * 512 + X}, each sector encrypted (by OpenSSL, in the test) under the dm-crypt IV
 * of sector {@code X / 512 + skip} (divided by sectorSize / 512 with iv_large_sectors).
 */
class CryptoBlockDeviceKnownAnswerTest {

    @ParameterizedTest(name = "{0} key {1} sector {2} large {3} offset {4} skip {5}")
    @CsvSource({
            "aes-cbc-essiv:sha256, 32, 512, false, 3, 5",
            "aes-cbc-plain, 16, 512, false, 2048, 4294967290",
            "aes-cbc-plain64be, 32, 512, false, 1, 0",
            "aes-xts-plain64, 64, 4096, false, 8, 3",
            "aes-xts-plain64, 32, 4096, true, 16, 24",
            "aes-cbc-plain64, 32, 4096, true, 8, 8",
    })
    void bytesBelowMatchOpenSsl(String specText, int keyBytes, int sectorSize, boolean ivLarge, long offsetSectors,
                                long skipSectors) throws Exception {
        CryptSpec spec = CryptSpec.parse(specText);
        Random random = new Random(keyBytes * 1000L + offsetSectors + skipSectors);
        byte[] key = new byte[keyBytes];
        random.nextBytes(key);
        MemoryBlockDevice below = new MemoryBlockDevice("mem", 2 * 1024 * 1024, 512);
        int sectors = 2;
        long at = 5L * sectorSize; // payload-relative byte offset of the write
        byte[] plain = new byte[sectors * sectorSize];
        random.nextBytes(plain);
        try (CryptoBlockDevice crypt = new CryptoBlockDevice("crypt0", below,
                SectorCipher.create(spec, key, sectorSize, ivLarge), offsetSectors, skipSectors, false)) {
            crypt.write(at, ByteBuffer.wrap(plain));

            ByteBuffer raw = ByteBuffer.allocate(plain.length);
            below.read(offsetSectors * 512 + at, raw);

            int units = sectorSize / 512;
            List<byte[]> ivs = new ArrayList<>();
            List<byte[]> plainSectors = new ArrayList<>();
            for (int i = 0; i < sectors; i++) {
                long dmSector = (at + (long) i * sectorSize) / 512 + skipSectors;
                ivs.add(ReferenceCipher.dmCryptIv(spec, key, ivLarge ? dmSector / units : dmSector));
                plainSectors.add(Arrays.copyOfRange(plain, i * sectorSize, (i + 1) * sectorSize));
            }
            List<byte[]> expected = ReferenceCipher.encrypt(spec, key, ivs, plainSectors);
            for (int i = 0; i < sectors; i++) {
                assertArrayEquals(expected.get(i), Arrays.copyOfRange(raw.array(), i * sectorSize, (i + 1) * sectorSize),
                        "sector " + i + " below");
            }
        }
    }
}
