package io.stripestack.crypto.luks;

import static io.stripestack.crypto.luks.LuksTestSupport.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.FileBlockDevice;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * LUKS2's persistent activation flags (config.flags): cryptsetup stores "allow-discards" there with
 * {@code open --persistent --allow-discards}; the crypto layer then passes discards down like dm-crypt would.
 * Setting the flag needs device-mapper, so the tests write it into the JSON the way cryptsetup does, and
 * cryptsetup's luksDump confirms it reads the flag from the header written that way.
 */
class LuksPersistentFlagsTest {
    @TempDir
    Path dir;

    @Test
    void theAllowDiscardsFlagOfALuks2HeaderIsRead() throws Exception {
        Path image = dir.resolve("luks2.img");
        Path pass = writeSecret(dir.resolve("pass"), bytes("flags passphrase\n"));
        try (FileBlockDevice device = FileBlockDevice.create(image, 32L << 20, 512)) {
            LuksFormatter.format(device, cheap(LuksFormatOptions.luks2().withKdf(CHEAP_PBKDF2)), bytes("flags passphrase"));
            try (LuksVolume volume = LuksVolume.unlock(device, pass, LuksVolume.SecretFile.PASSPHRASE_FILE)) {
                assertFalse(volume.allowDiscards(), "a new header has no flags");
            }
            assertEquals(List.of(), ((Luks2Header) LuksHeader.read(device)).persistentFlags());

            addPersistentFlags(device, "no-read-workqueue", "allow-discards");
            assertEquals(List.of("no-read-workqueue", "allow-discards"), ((Luks2Header) LuksHeader.read(device)).persistentFlags());
            try (LuksVolume volume = LuksVolume.unlock(device, pass, LuksVolume.SecretFile.PASSPHRASE_FILE)) {
                assertTrue(volume.allowDiscards());
            }
        }
        requireTool("cryptsetup");
        String dump = runOk("cryptsetup", "luksDump", image.toString());
        assertTrue(dump.matches("(?s).*Flags:\\s+no-read-workqueue allow-discards\\s*\n.*"), dump);
    }

    @Test
    void luks1HasNoPersistentFlags() throws Exception {
        Path pass = writeSecret(dir.resolve("pass1"), bytes("one"));
        try (var device = memory(4)) {
            LuksFormatter.format(device, cheap(LuksFormatOptions.luks1()), bytes("one"));
            try (LuksVolume volume = LuksVolume.unlock(device, pass, LuksVolume.SecretFile.KEY_FILE)) {
                assertFalse(volume.allowDiscards());
            }
        }
    }
}
