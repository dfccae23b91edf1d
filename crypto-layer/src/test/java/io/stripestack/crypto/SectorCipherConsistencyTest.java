package io.stripestack.crypto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Random;
import javax.crypto.Cipher;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * A sector's ciphertext depends only on key, sector number and plaintext: encrypting a region spanning
 * several internal chunks in one call equals encrypting its sectors one by one, in any order, from heap or
 * direct buffers, and the running CBC chain state of a thread never leaks from one call into the next.
 * CBC encryption by interleaved lanes (chunks of {@link SectorCipher#MIN_LANES} sectors or more) and by the
 * serial path (fewer) both equal the JCE's CBC run per sector with the dm-crypt IV computed independently.
 */
class SectorCipherConsistencyTest {

    @ParameterizedTest
    @ValueSource(strings = {"aes-cbc-essiv:sha256", "aes-cbc-plain64", "aes-xts-plain64"})
    void wholeRegionEqualsSectorBySector(String specText) {
        CryptSpec spec = CryptSpec.parse(specText);
        Random random = new Random(42);
        byte[] key = new byte[spec.mode() == CryptSpec.Mode.XTS ? 64 : 32];
        random.nextBytes(key);
        for (int sectorSize : new int[] {512, 4096}) {
            int length = SectorCipher.CHUNK * 2 + 3 * sectorSize; // crosses chunk boundaries
            byte[] plain = new byte[length];
            random.nextBytes(plain);
            long first = 1000L * (sectorSize / 512);
            try (SectorCipher cipher = SectorCipher.create(spec, key, sectorSize, sectorSize > 512)) {
                ByteBuffer whole = ByteBuffer.allocateDirect(length).put(plain).flip();
                cipher.encrypt(whole, first);
                byte[] expected = new byte[length];
                whole.get(0, expected);

                ByteBuffer pieces = ByteBuffer.wrap(plain.clone());
                int sectors = length / sectorSize;
                for (int k = 0; k < sectors; k++) {
                    int s = (k * 7919) % sectors; // a fixed permutation: sectorCount is not a multiple of 7919
                    cipher.encrypt(pieces, s * sectorSize, pieces, s * sectorSize, sectorSize, first + (long) s * (sectorSize / 512));
                }
                assertArrayEquals(expected, pieces.array(), spec + " sector " + sectorSize);

                ByteBuffer plainCopy = ByteBuffer.wrap(new byte[length]);
                cipher.decrypt(ByteBuffer.wrap(expected), 0, plainCopy, 0, length, first);
                assertArrayEquals(plain, plainCopy.array(), "decrypt into another buffer");
                byte[] untouched = expected.clone();
                ByteBuffer source = ByteBuffer.wrap(expected);
                cipher.decrypt(source, 0, ByteBuffer.allocate(length), 0, length, first);
                assertArrayEquals(untouched, expected, "the source of a copying call is not modified");
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"aes-cbc-essiv:sha256", "aes-cbc-plain64", "aes-cbc-plain", "aes-cbc-plain64be"})
    void cbcEncryptionEqualsCbcPerSectorForEveryLaneCount(String specText) throws Exception {
        CryptSpec spec = CryptSpec.parse(specText);
        Random random = new Random(7);
        byte[] key = new byte[32];
        random.nextBytes(key);
        Cipher cbc = Cipher.getInstance("AES/CBC/NoPadding");
        for (int sectorSize : new int[] {512, 4096}) {
            int perChunk = SectorCipher.CHUNK / sectorSize;
            for (int sectors : new int[] {1, SectorCipher.MIN_LANES - 1, SectorCipher.MIN_LANES, perChunk - 1, perChunk,
                    perChunk + SectorCipher.MIN_LANES - 1, 3 * perChunk + 5}) {
                for (boolean ivLarge : new boolean[] {false, true}) {
                    int units = sectorSize / 512;
                    long first = (0xffff_fff0L / units) * units; // IVs cross 2^32, where plain wraps
                    byte[] plain = new byte[sectors * sectorSize];
                    random.nextBytes(plain);
                    ByteBuffer region = ByteBuffer.allocateDirect(plain.length).put(plain).flip();
                    try (SectorCipher cipher = SectorCipher.create(spec, key, sectorSize, ivLarge)) {
                        cipher.encrypt(region, first);
                    }
                    byte[] expected = new byte[plain.length];
                    for (int i = 0; i < sectors; i++) {
                        long unit = first + (long) i * units;
                        byte[] iv = ReferenceCipher.dmCryptIv(spec, key, ivLarge ? unit / units : unit);
                        cbc.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "AES"), new IvParameterSpec(iv));
                        cbc.doFinal(plain, i * sectorSize, sectorSize, expected, i * sectorSize);
                    }
                    byte[] actual = new byte[plain.length];
                    region.get(0, actual);
                    assertArrayEquals(expected, actual, spec + ", " + sectors + " sectors of " + sectorSize
                            + (ivLarge ? ", iv_large_sectors" : ""));
                }
            }
        }
    }

    @Test
    void refusesPartialSectorsAndMisalignedLargeSectorStarts() {
        try (SectorCipher cipher = SectorCipher.create(CryptSpec.parse("aes-xts-plain64"), new byte[64], 4096, true)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> cipher.encrypt(ByteBuffer.allocate(512), 0));
            assertTrue(e.getMessage().contains("4096"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> cipher.encrypt(ByteBuffer.allocate(4096), 3));
        }
    }

    @Test
    void closedCipherRefusesWork() {
        SectorCipher cipher = SectorCipher.create(CryptSpec.parse("aes-cbc-essiv:sha256"), new byte[32], 512, false);
        cipher.encrypt(ByteBuffer.allocate(512), 0);
        cipher.close();
        assertThrows(IllegalStateException.class, () -> cipher.encrypt(ByteBuffer.allocate(512), 0));
    }

    @Test
    void refusesBadSectorSizeAndKeyLength() {
        CryptSpec spec = CryptSpec.parse("aes-cbc-plain64");
        assertThrows(IllegalArgumentException.class, () -> SectorCipher.create(spec, new byte[32], 768, false));
        assertThrows(IllegalArgumentException.class, () -> SectorCipher.create(spec, new byte[32], 8192, false));
        assertThrows(IllegalArgumentException.class, () -> SectorCipher.create(spec, new byte[20], 512, false));
    }
}
