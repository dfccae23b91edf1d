package io.stripestack.crypto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.stripestack.blockdev.FileBlockDevice;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Interoperability with cryptsetup's own sector encryption. {@code cryptsetup reencrypt} encrypts and
 * decrypts LUKS2 data offline in user space (its dm-crypt reimplementation), so it works on plain files
 * without device-mapper:
 * <ul>
 *   <li>cryptsetup encrypts a file in place (header in front, payload at a data offset); the layer, given the
 *       volume key from {@code luksDump --dump-volume-key} and the segment's offset and sector size, reads the
 *       original plaintext back;</li>
 *   <li>the layer writes plaintext under a detached header's volume key; {@code cryptsetup reencrypt --decrypt}
 *       turns the file into exactly that plaintext.</li>
 * </ul>
 * LUKS2 never sets iv_large_sectors: with 4096-byte sectors its IVs count 512-byte units.
 */
class CryptsetupInteropTest {
    private static final int MIB = 1024 * 1024;
    private static final byte[] PASSPHRASE = "interop passphrase".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    Path dir;
    private Path passFile;

    @BeforeEach
    void passphraseFile() throws Exception {
        ReferenceCipher.requireTool("cryptsetup", "--version");
        passFile = dir.resolve("pass");
        PlainModeKeys.createKeyFile(passFile, PASSPHRASE);
    }

    @ParameterizedTest(name = "{0} {1}-bit sector {2}")
    @CsvSource({"aes-xts-plain64, 512, 512", "aes-xts-plain64, 256, 4096", "aes-cbc-essiv:sha256, 256, 512",
            "aes-cbc-plain64, 128, 4096"})
    void volumeEncryptedByCryptsetupReadsAsTheOriginal(String spec, int keyBits, int sectorSize) throws Exception {
        Path image = dir.resolve("image");
        byte[] original = new byte[12 * MIB];
        new Random(keyBits + sectorSize).nextBytes(original);
        Files.write(image, original);
        int reduce = 4 * MIB;
        cryptsetup("reencrypt", "--encrypt", "--force-offline-reencrypt", "--type", "luks2",
                "--reduce-device-size", reduce / MIB + "M", "--luks2-metadata-size", "16k", "--luks2-keyslots-size", "1M",
                "--cipher", spec, "--key-size", String.valueOf(keyBits), "--sector-size", String.valueOf(sectorSize),
                "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", "--key-file", passFile.toString(),
                "--batch-mode", image.toString());
        String dump = cryptsetup("luksDump", image.toString());
        long offsetBytes = Long.parseLong(field(dump, "offset:\\s+(\\d+) \\[bytes\\]"));
        assertEquals(sectorSize, Integer.parseInt(field(dump, "sector:\\s+(\\d+) \\[bytes\\]")));
        byte[] key = volumeKey(image);
        assertEquals(keyBits / 8, key.length);

        int dataLength = original.length - reduce;
        try (CryptoBlockDevice crypt = new CryptoBlockDevice("interop", FileBlockDevice.open(image, 512, false, true),
                SectorCipher.create(CryptSpec.parse(spec), key, sectorSize, false), offsetBytes / 512, 0, false)) {
            ByteBuffer plain = ByteBuffer.allocateDirect(dataLength);
            crypt.read(0, plain);
            byte[] got = new byte[dataLength];
            plain.get(0, got);
            assertArrayEquals(Arrays.copyOf(original, dataLength), got, "payload decrypted by the layer");
        }
    }

    @ParameterizedTest(name = "{0} {1}-bit sector {2}")
    @CsvSource({"aes-xts-plain64, 512, 4096", "aes-cbc-essiv:sha256, 256, 4096", "aes-cbc-plain, 256, 512"})
    void cryptsetupDecryptsWhatTheLayerWrote(String spec, int keyBits, int sectorSize) throws Exception {
        Path data = dir.resolve("data");
        Path header = dir.resolve("header");
        Files.write(data, new byte[4 * MIB]);
        cryptsetup("luksFormat", "--type", "luks2", "--header", header.toString(), "--cipher", spec,
                "--key-size", String.valueOf(keyBits), "--sector-size", String.valueOf(sectorSize),
                "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", "--key-file", passFile.toString(),
                "--batch-mode", data.toString());
        byte[] key = volumeKey(header);
        byte[] plain = new byte[4 * MIB];
        new Random(keyBits * 3L + sectorSize).nextBytes(plain);
        try (CryptoBlockDevice crypt = new CryptoBlockDevice("interop", FileBlockDevice.open(data, 512, false, false),
                SectorCipher.create(CryptSpec.parse(spec), key, sectorSize, false), 0, 0, false)) {
            crypt.write(0, ByteBuffer.wrap(plain, 0, MIB)); // large: split across cores
            for (int at = MIB; at < plain.length; at += 64 * 1024) {
                crypt.write(at, ByteBuffer.wrap(plain, at, 64 * 1024));
            }
            crypt.flush();
        }
        cryptsetup("reencrypt", "--decrypt", "--force-offline-reencrypt", "--header", header.toString(),
                "--key-file", passFile.toString(), "--batch-mode", data.toString());
        assertArrayEquals(plain, Files.readAllBytes(data), "file after cryptsetup decrypted it");
    }

    private byte[] volumeKey(Path headerOrImage) throws Exception {
        String dump = cryptsetup("luksDump", "--dump-volume-key", "--key-file", passFile.toString(), "--batch-mode",
                headerOrImage.toString());
        int at = dump.indexOf("MK dump:");
        assertTrue(at >= 0, "no volume key in luksDump output");
        List<String> hex = new ArrayList<>();
        for (String line : dump.substring(at + "MK dump:".length()).split("\n")) {
            if (!line.trim().matches("([0-9a-f]{2}\\s*)+")) {
                break;
            }
            hex.addAll(Arrays.asList(line.trim().split("\\s+")));
        }
        return Hex.decode(String.join("", hex));
    }

    private static String field(String text, String regex) {
        Matcher m = Pattern.compile(regex).matcher(text);
        assertTrue(m.find(), "no match for " + regex + " in:\n" + text);
        return m.group(1);
    }

    private static String cryptsetup(String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add("cryptsetup");
        command.addAll(Arrays.asList(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            fail(String.join(" ", command) + " failed:\n" + out);
        }
        return out;
    }
}
