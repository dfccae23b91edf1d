package io.stripestack.crypto.luks;

import static io.stripestack.crypto.luks.LuksTestSupport.CHEAP_ARGON2;
import static io.stripestack.crypto.luks.LuksTestSupport.CHEAP_PBKDF2;
import static io.stripestack.crypto.luks.LuksTestSupport.bytes;
import static io.stripestack.crypto.luks.LuksTestSupport.cheap;
import static io.stripestack.crypto.luks.LuksTestSupport.memory;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Formatting, unlocking and keyslot maintenance on in-memory devices (no external tools). */
class LuksHeaderTest {
    private static final byte[] PASS = bytes("correct horse");

    private static byte[] key(int length, long seed) {
        byte[] key = new byte[length];
        new Random(seed).nextBytes(key);
        return key;
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void formatThenUnlockGivesTheVolumeKey(int version) throws IOException {
        MemoryBlockDevice device = memory(24);
        LuksFormatOptions options = cheap(version == 1 ? LuksFormatOptions.luks1() : LuksFormatOptions.luks2());
        byte[] volumeKey = key(64, version);
        LuksFormatter.format(device, options, PASS, volumeKey);

        LuksHeader header = LuksHeader.read(device);
        assertEquals(version, header.version());
        assertEquals("aes-xts-plain64", header.cipherSpec());
        assertEquals(64, header.volumeKeyBytes());
        assertEquals(List.of(0), header.activeKeyslots());
        try (VolumeKey unlocked = header.unlock(PASS, "test")) {
            assertArrayEquals(volumeKey, unlocked.bytes());
            assertEquals(0, unlocked.keyslot());
        }
    }

    @Test
    void luks1PayloadHonoursAlignPayloadLikeCryptsetup() throws IOException {
        MemoryBlockDevice device = memory(4);
        LuksHeader header = LuksFormatter.format(device,
                cheap(LuksFormatOptions.luks1()).withCipher("aes-cbc-essiv:sha256", 256).withAlignPayload(2048), PASS);
        // 8 sectors of phdr + 8 keyslots x 256 sectors = 2056, rounded up to 2048-sector alignment
        assertEquals(4096, header.payloadOffsetSectors());
        assertEquals(2056L * 512, header.headerAreaBytes());
        LuksHeader xts = LuksFormatter.format(memory(4), cheap(LuksFormatOptions.luks1()).withAlignPayload(8), PASS);
        // 512-bit key: 8 + 8 x 504 = 4040, a multiple of 8
        assertEquals(4040, xts.payloadOffsetSectors());
    }

    @Test
    void luks2DataOffsetIs16MiBRoundedUpToTheOptimalIo() throws IOException {
        LuksHeader plain = LuksFormatter.format(memory(20), cheap(LuksFormatOptions.luks2()), PASS);
        assertEquals(16L << 20, plain.payloadOffsetSectors() * 512);
        assertEquals(16L << 20, plain.headerAreaBytes());
        // RAID-5 with 3 data disks of 512 KiB chunks: optimal I/O 1.5 MiB, and 1 MiB is not a multiple of it
        BlockDevice raid = LuksTestSupport.withOptimalIo(memory(20), 512 << 10, 3 * (512 << 10));
        LuksHeader aligned = LuksFormatter.format(raid, cheap(LuksFormatOptions.luks2()), PASS);
        assertEquals(33L << 19, aligned.payloadOffsetSectors() * 512);
    }

    @Test
    void wrongPassphraseIsRefusedNamingTheSourceNotTheSecret() throws IOException {
        MemoryBlockDevice device = memory(20);
        LuksHeader header = LuksFormatter.format(device, cheap(LuksFormatOptions.luks2()), PASS);
        LuksPassphraseException e = assertThrows(LuksPassphraseException.class,
                () -> header.unlock(bytes("wrong horse"), "/etc/lun0.pass"));
        assertTrue(e.getMessage().contains("no keyslot matches the passphrase from /etc/lun0.pass"), e.getMessage());
        assertFalse(e.getMessage().contains("horse"), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void addAndRemoveKeyslots(int version) throws IOException {
        MemoryBlockDevice device = memory(24);
        LuksFormatOptions options = cheap(version == 1 ? LuksFormatOptions.luks1() : LuksFormatOptions.luks2());
        LuksHeader header = LuksFormatter.format(device, options, PASS);
        byte[] second = bytes("second passphrase");
        int slot;
        try (VolumeKey key = header.unlock(PASS, "first")) {
            slot = header.addKeyslot(key, second, version == 1 ? CHEAP_PBKDF2 : CHEAP_ARGON2);
        }
        assertEquals(1, slot);
        LuksHeader reread = LuksHeader.read(device);
        assertEquals(List.of(0, 1), reread.activeKeyslots());
        byte[] first;
        try (VolumeKey a = reread.unlock(PASS, "first"); VolumeKey b = reread.unlock(second, "second")) {
            assertArrayEquals(a.bytes(), b.bytes());
            assertEquals(1, b.keyslot());
            first = a.bytes().clone();
        }
        reread.removeKeyslot(0);
        LuksHeader after = LuksHeader.read(device);
        assertEquals(List.of(1), after.activeKeyslots());
        assertThrows(LuksPassphraseException.class, () -> after.unlock(PASS, "first"));
        try (VolumeKey b = after.unlock(second, "second")) {
            assertArrayEquals(first, b.bytes());
        }
        assertThrows(IllegalArgumentException.class, () -> after.removeKeyslot(0));
    }

    @Test
    void luks2KeyslotWithArgon2idAndAFreedAreaIsReused() throws IOException {
        MemoryBlockDevice device = memory(20);
        LuksHeader header = LuksFormatter.format(device, cheap(LuksFormatOptions.luks2()), PASS);
        try (VolumeKey key = header.unlock(PASS, "pass")) {
            header.addKeyslot(key, bytes("b"), CHEAP_ARGON2);
            header.removeKeyslot(0);
            assertEquals(0, header.addKeyslot(key, bytes("c"), CHEAP_PBKDF2));
        }
        LuksHeader reread = LuksHeader.read(device);
        assertEquals(List.of(0, 1), reread.activeKeyslots());
        assertTrue(reread.dump().contains("Area offset:32768 [bytes]"), reread.dump());
        try (VolumeKey c = reread.unlock(bytes("c"), 0, "c")) {
            assertEquals(0, c.keyslot());
        }
    }

    @Test
    void luks1RefusesArgon2() throws IOException {
        LuksHeader header = LuksFormatter.format(memory(4), cheap(LuksFormatOptions.luks1()).withAlignPayload(8), PASS);
        try (VolumeKey key = header.unlock(PASS, "pass")) {
            assertThrows(IllegalArgumentException.class, () -> header.addKeyslot(key, bytes("x"), CHEAP_ARGON2));
        }
    }

    @Test
    void unlockingFromAPassphraseFileGivesTheStartUpParameters(@TempDir Path dir) throws IOException {
        MemoryBlockDevice device = memory(20);
        byte[] volumeKey = key(32, 7);
        LuksFormatter.format(device, cheap(LuksFormatOptions.luks2()).withCipher("aes-cbc-essiv:sha256", 256).withSectorSize(4096),
                PASS, volumeKey);
        Path file = dir.resolve("pass");
        LuksTestSupport.writeSecret(file, bytes("correct horse\n"));
        try (LuksVolume volume = LuksVolume.unlock(device, file, LuksVolume.SecretFile.PASSPHRASE_FILE)) {
            assertEquals("aes-cbc-essiv:sha256", volume.cipherSpec());
            assertArrayEquals(volumeKey, volume.volumeKey());
            assertEquals(32768, volume.payloadOffsetSectors());
            assertEquals(4096, volume.sectorSize());
            assertFalse(volume.toString().contains(LuksIo.hex(volumeKey).substring(0, 8)));
        }
        LuksPassphraseException e = assertThrows(LuksPassphraseException.class,
                () -> LuksVolume.unlock(device, file, LuksVolume.SecretFile.KEY_FILE));
        assertTrue(e.getMessage().contains("no keyslot matches the passphrase from " + file), e.getMessage());
    }

    @Test
    void backupHoldsTheHeaderArea(@TempDir Path dir) throws IOException {
        MemoryBlockDevice device = memory(4);
        LuksHeader header = LuksFormatter.format(device, cheap(LuksFormatOptions.luks1()).withCipher("aes-xts-plain64", 256),
                PASS);
        Path backup = dir.resolve("hdr.img");
        header.backup(backup);
        assertEquals(header.headerAreaBytes(), Files.size(backup));
        assertArrayEquals(LuksIo.read(device, 0, (int) header.headerAreaBytes()), Files.readAllBytes(backup));
        try (LuksHeader fromBackup = LuksHeader.open(backup, false); VolumeKey key = fromBackup.unlock(PASS, "pass")) {
            assertTrue(header.verifyVolumeKey(key.bytes()));
        }
        assertThrows(java.nio.file.FileAlreadyExistsException.class, () -> header.backup(backup));
    }

    @Test
    void formatRefusesADeviceTooSmallForHeaderAndPayload() {
        LuksHeaderException e = assertThrows(LuksHeaderException.class,
                () -> LuksFormatter.format(memory(16), cheap(LuksFormatOptions.luks2()), PASS));
        assertTrue(e.getMessage().contains("too small"), e.getMessage());
    }
}
