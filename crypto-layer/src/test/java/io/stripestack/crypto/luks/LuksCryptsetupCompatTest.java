package io.stripestack.crypto.luks;

import static io.stripestack.crypto.luks.LuksTestSupport.CHEAP_ARGON2;
import static io.stripestack.crypto.luks.LuksTestSupport.CHEAP_PBKDF2;
import static io.stripestack.crypto.luks.LuksTestSupport.cheap;
import static io.stripestack.crypto.luks.LuksTestSupport.dumpedVolumeKey;
import static io.stripestack.crypto.luks.LuksTestSupport.requireTool;
import static io.stripestack.crypto.luks.LuksTestSupport.run;
import static io.stripestack.crypto.luks.LuksTestSupport.runOk;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.crypto.CryptSpec;
import io.stripestack.crypto.CryptoBlockDevice;
import io.stripestack.crypto.SectorCipher;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Compatibility with the real cryptsetup (2.6), which works on plain files for everything but {@code open}:
 * headers we write pass {@code luksDump} and {@code open --test-passphrase} and yield our volume key through
 * {@code --dump-volume-key}; headers cryptsetup writes unlock here to the key it dumps; keyslots added or
 * killed by either side are honoured by the other. Under CI=true a missing cryptsetup fails the tests.
 */
class LuksCryptsetupCompatTest {
    private static final long FILE_BYTES = 20L << 20;

    @TempDir
    Path dir;
    private Path image;
    private Path passFile;
    private byte[] pass;

    @BeforeEach
    void setUp() throws IOException {
        requireTool("cryptsetup");
        image = dir.resolve("disk.img");
        passFile = dir.resolve("pass");
        pass = LuksTestSupport.bytes("p4ss phrase\nwith a newline");
        LuksTestSupport.writeSecret(passFile, pass);
    }

    static Stream<Arguments> ourFormats() {
        return Stream.of(
                Arguments.of("luks1 xts-512", cheap(LuksFormatOptions.luks1())),
                Arguments.of("luks1 cbc-essiv-256 align 2048",
                        cheap(LuksFormatOptions.luks1()).withCipher("aes-cbc-essiv:sha256", 256).withAlignPayload(2048)),
                Arguments.of("luks1 sha1", cheap(LuksFormatOptions.luks1().withHash(LuksHash.SHA1))
                        .withCipher("aes-xts-plain64", 256)),
                Arguments.of("luks2 xts-512 pbkdf2", cheap(LuksFormatOptions.luks2()).withKdf(CHEAP_PBKDF2)),
                Arguments.of("luks2 cbc-essiv argon2id 4096", cheap(LuksFormatOptions.luks2())
                        .withCipher("aes-cbc-essiv:sha256", 256).withSectorSize(4096).withLabel("lun0")),
                Arguments.of("luks2 explicit offset", cheap(LuksFormatOptions.luks2()).withPayloadOffset(4096)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("ourFormats")
    void cryptsetupAcceptsOurHeaders(String name, LuksFormatOptions options) throws Exception {
        byte[] volumeKey = new byte[options.keyBytes()];
        new Random(name.hashCode()).nextBytes(volumeKey);
        long payload;
        try (FileBlockDevice device = FileBlockDevice.create(image, FILE_BYTES, 512)) {
            payload = LuksFormatter.format(device, options, pass, volumeKey).payloadOffsetSectors();
        }
        String dump = runOk("cryptsetup", "luksDump", image.toString());
        assertTrue(dump.contains("Version:       \t" + options.version()), dump);
        if (options.version() == 1) {
            String spec = options.cipherSpec();
            assertTrue(dump.contains("Cipher mode:   \t" + spec.substring(spec.indexOf('-') + 1)), dump);
            assertTrue(dump.contains("Payload offset:\t" + payload), dump);
            assertTrue(dump.contains("MK bits:       \t" + options.keyBytes() * 8), dump);
            assertTrue(dump.contains("Key Slot 0: ENABLED") && dump.contains("Key Slot 1: DISABLED"), dump);
        } else {
            assertTrue(dump.contains("offset: " + payload * 512 + " [bytes]"), dump);
            assertTrue(dump.contains("cipher: " + options.cipherSpec()), dump);
            assertTrue(dump.contains("sector: " + options.sectorSize() + " [bytes]"), dump);
            assertTrue(dump.contains("  0: luks2") && dump.contains("Key:        " + options.keyBytes() * 8 + " bits"), dump);
            assertTrue(dump.contains("PBKDF:      " + options.kdf().typeName()), dump);
            if (options.label() != null) {
                assertTrue(dump.contains("Label:         \t" + options.label()), dump);
            }
        }
        runOk("cryptsetup", "open", "--test-passphrase", "--key-file", passFile.toString(), image.toString());
        String keyDump = runOk("cryptsetup", "luksDump", "--dump-volume-key", "--batch-mode", "--key-file",
                passFile.toString(), image.toString());
        assertArrayEquals(volumeKey, dumpedVolumeKey(keyDump));

        Path wrong = dir.resolve("wrong");
        LuksTestSupport.writeSecret(wrong, LuksTestSupport.bytes("p4ss phrase"));
        assertNotEquals(0, run("cryptsetup", "open", "--test-passphrase", "--key-file", wrong.toString(),
                image.toString()).exitCode());
    }

    static Stream<Arguments> cryptsetupFormats() {
        return Stream.of(
                Arguments.of("luks1 xts", List.of("--type", "luks1", "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000")),
                Arguments.of("luks1 cbc-essiv sha512", List.of("--type", "luks1", "--pbkdf-force-iterations", "1000",
                        "-c", "aes-cbc-essiv:sha256", "-s", "256", "--hash", "sha512", "--align-payload", "2048")),
                Arguments.of("luks2 pbkdf2", List.of("--type", "luks2", "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000")),
                Arguments.of("luks2 argon2id 4096", List.of("--type", "luks2", "--pbkdf", "argon2id", "--pbkdf-memory", "32",
                        "--pbkdf-force-iterations", "4", "--pbkdf-parallel", "2", "--sector-size", "4096")),
                Arguments.of("luks2 argon2i cbc-essiv", List.of("--type", "luks2", "--pbkdf", "argon2i", "--pbkdf-memory",
                        "64", "--pbkdf-force-iterations", "4", "-c", "aes-cbc-essiv:sha256", "-s", "256",
                        "--sector-size", "512")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cryptsetupFormats")
    void cryptsetupHeadersUnlockToTheKeyCryptsetupDumps(String name, List<String> formatOptions) throws Exception {
        cryptsetupFormat(formatOptions);
        byte[] expected = dumpedVolumeKey(runOk("cryptsetup", "luksDump", "--dump-volume-key", "--batch-mode",
                "--key-file", passFile.toString(), image.toString()));
        String dump = runOk("cryptsetup", "luksDump", image.toString());
        try (LuksHeader header = LuksHeader.open(image, false); VolumeKey key = header.unlock(pass, passFile.toString())) {
            assertArrayEquals(expected, key.bytes());
            if (header.version() == 1) {
                assertTrue(dump.contains("Payload offset:\t" + header.payloadOffsetSectors()), dump);
            } else {
                assertTrue(dump.contains("offset: " + header.payloadOffsetSectors() * 512 + " [bytes]"), dump);
                assertTrue(dump.contains("sector: " + header.sectorSize() + " [bytes]"), dump);
                assertTrue(dump.contains("cipher: " + header.cipherSpec()), dump);
            }
            assertTrue(header.dump().contains(header.uuid()) && dump.contains(header.uuid()));
        }
    }

    static Stream<Arguments> layouts() {
        return Stream.of(
                Arguments.of(cheap(LuksFormatOptions.luks1()).withCipher("aes-xts-plain64", 256),
                        List.of("--type", "luks1", "-s", "256")),
                Arguments.of(cheap(LuksFormatOptions.luks1()).withAlignPayload(3072), List.of("--type", "luks1", "--align-payload", "3072")),
                Arguments.of(cheap(LuksFormatOptions.luks1()).withAlignPayload(8), List.of("--type", "luks1", "--align-payload", "8")),
                Arguments.of(cheap(LuksFormatOptions.luks2()).withAlignPayload(3072),
                        List.of("--type", "luks2", "--align-payload", "3072", "--sector-size", "512")),
                Arguments.of(cheap(LuksFormatOptions.luks2()).withPayloadOffset(33000),
                        List.of("--type", "luks2", "--offset", "33000", "--sector-size", "512")),
                Arguments.of(cheap(LuksFormatOptions.luks2()).withCipher("aes-cbc-essiv:sha256", 256),
                        List.of("--type", "luks2", "-c", "aes-cbc-essiv:sha256", "-s", "256", "--sector-size", "512")));
    }

    /** The same options give the same payload offset, keyslots area and keyslot placement as cryptsetup. */
    @ParameterizedTest
    @MethodSource("layouts")
    void layoutMatchesCryptsetups(LuksFormatOptions ours, List<String> theirs) throws Exception {
        List<String> options = new ArrayList<>(theirs);
        options.addAll(List.of("--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"));
        cryptsetupFormat(options);
        String expected = layoutLines(runOk("cryptsetup", "luksDump", image.toString()));
        Files.delete(image);
        try (FileBlockDevice device = FileBlockDevice.create(image, FILE_BYTES, 512)) {
            LuksFormatter.format(device, ours.withKdf(CHEAP_PBKDF2), pass);
        }
        assertEquals(expected, layoutLines(runOk("cryptsetup", "luksDump", image.toString())));
    }

    private static String layoutLines(String dump) {
        StringBuilder out = new StringBuilder();
        for (String line : dump.split("\n")) {
            if (line.matches("(?i).*(offset|area|length|MK bits|Key:|cipher|sector).*") && !line.contains("UUID")) {
                out.append(line.strip()).append('\n');
            }
        }
        return out.toString();
    }

    @Test
    void keyslotChangesOnEitherSideAreHonouredByTheOther() throws Exception {
        cryptsetupFormat(List.of("--type", "luks2", "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"));
        Path cryptsetupKey = dir.resolve("cs-key");
        LuksTestSupport.writeSecret(cryptsetupKey, LuksTestSupport.bytes("added by cryptsetup"));
        runOk("cryptsetup", "luksAddKey", "--batch-mode", "--key-file", passFile.toString(), "--pbkdf", "argon2id",
                "--pbkdf-memory", "32", "--pbkdf-force-iterations", "4", image.toString(), cryptsetupKey.toString());
        byte[] ours = LuksTestSupport.bytes("added by stripestack");
        Path oursFile = dir.resolve("our-key");
        LuksTestSupport.writeSecret(oursFile, ours);
        try (LuksHeader header = LuksHeader.open(image, true)) {
            assertEquals(List.of(0, 1), header.activeKeyslots());
            try (VolumeKey key = header.unlock(Files.readAllBytes(cryptsetupKey), cryptsetupKey.toString())) {
                assertEquals(1, key.keyslot());
                assertEquals(2, header.addKeyslot(key, ours, CHEAP_ARGON2));
            }
            header.removeKeyslot(0);
        }
        runOk("cryptsetup", "open", "--test-passphrase", "--key-slot", "2", "--key-file", oursFile.toString(), image.toString());
        assertNotEquals(0, run("cryptsetup", "open", "--test-passphrase", "--key-file", passFile.toString(),
                image.toString()).exitCode(), "the removed keyslot 0 still opens");
        runOk("cryptsetup", "luksKillSlot", "--batch-mode", image.toString(), "1");
        try (LuksHeader header = LuksHeader.open(image, false)) {
            assertEquals(List.of(2), header.activeKeyslots());
            assertThrowsPassphrase(header, Files.readAllBytes(cryptsetupKey));
            header.unlock(ours, oursFile.toString()).close();
        }
    }

    /** The advice in the refusal works: cryptsetup repair restores a damaged primary copy from the secondary. */
    @Test
    void damagedPrimaryCopyIsRefusedAndCryptsetupRepairFixesIt() throws Exception {
        try (FileBlockDevice device = FileBlockDevice.create(image, FILE_BYTES, 512)) {
            LuksFormatter.format(device, cheap(LuksFormatOptions.luks2()), pass);
            LuksTestSupport.flip(device, 4096 + 100, 0x01); // primary JSON
        }
        LuksHeaderException e = org.junit.jupiter.api.Assertions.assertThrows(LuksHeaderException.class,
                () -> LuksHeader.open(image, false));
        assertTrue(e.getMessage().contains("checksum mismatch") && e.getMessage().contains("cryptsetup repair"), e.getMessage());
        runOk("cryptsetup", "repair", "--batch-mode", image.toString());
        try (LuksHeader header = LuksHeader.open(image, false)) {
            header.unlock(pass, passFile.toString()).close();
        }
    }

    /** Keyslot priorities set by {@code cryptsetup config}: "ignore" slots are skipped unless named. */
    @Test
    void keyslotPrioritySetByCryptsetupIsHonoured() throws Exception {
        cryptsetupFormat(List.of("--type", "luks2", "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"));
        runOk("cryptsetup", "config", "--priority", "ignore", "--key-slot", "0", image.toString());
        try (LuksHeader header = LuksHeader.open(image, false)) {
            assertTrue(header.dump().contains("Priority:   ignored"), header.dump());
            assertThrowsPassphrase(header, pass);
            try (VolumeKey key = header.unlock(pass, 0, passFile.toString())) {
                assertEquals(0, key.keyslot());
            }
        }
    }

    @Test
    void luks1KeyslotAddedHereOpensInCryptsetup() throws Exception {
        cryptsetupFormat(List.of("--type", "luks1", "--pbkdf-force-iterations", "1000", "-s", "256"));
        byte[] ours = LuksTestSupport.bytes("luks1 second key");
        Path oursFile = dir.resolve("our-key");
        LuksTestSupport.writeSecret(oursFile, ours);
        try (LuksHeader header = LuksHeader.open(image, true); VolumeKey key = header.unlock(pass, "pass")) {
            header.addKeyslot(key, ours, CHEAP_PBKDF2, 5);
        }
        assertTrue(runOk("cryptsetup", "luksDump", image.toString()).contains("Key Slot 5: ENABLED"));
        runOk("cryptsetup", "open", "--test-passphrase", "--key-slot", "5", "--key-file", oursFile.toString(), image.toString());
    }

    @Test
    void headerBackupMatchesCryptsetups() throws Exception {
        for (String type : new String[] {"luks1", "luks2"}) {
            Files.deleteIfExists(image);
            cryptsetupFormat(List.of("--type", type, "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"));
            Path theirs = dir.resolve(type + "-cryptsetup.hdr");
            Path ours = dir.resolve(type + "-ours.hdr");
            runOk("cryptsetup", "luksHeaderBackup", image.toString(), "--header-backup-file", theirs.toString());
            try (LuksHeader header = LuksHeader.open(image, false)) {
                header.backup(ours);
            }
            assertArrayEquals(Files.readAllBytes(theirs), Files.readAllBytes(ours), type);
            runOk("cryptsetup", "luksDump", ours.toString());
        }
    }

    /**
     * The unlocked key encrypts payload sectors as dm-crypt would: checked against openssl's AES-CBC with the
     * ESSIV IV computed by openssl too (openssl enc has no XTS; XTS is covered by decrypting cryptsetup's
     * aes-xts-plain64 keyslot material above).
     */
    @Test
    void payloadSectorsEncryptLikeDmCryptPerOpenssl() throws Exception {
        requireTool("openssl");
        cryptsetupFormat(List.of("--type", "luks2", "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000",
                "-c", "aes-cbc-essiv:sha256", "-s", "256", "--sector-size", "4096"));
        Path unlockFile = passFile;
        try (FileBlockDevice device = FileBlockDevice.open(image, 512, false, false);
             LuksVolume volume = LuksVolume.unlock(device, unlockFile, LuksVolume.SecretFile.KEY_FILE)) {
            byte[] plain = new byte[volume.sectorSize()];
            new Random(3).nextBytes(plain);
            long ivSector = 5L * volume.sectorSize() / 512; // the 6th 4 KiB sector of the payload, in 512-byte IV units
            ByteBuffer data = ByteBuffer.wrap(plain.clone());
            try (SectorCipher cipher = SectorCipher.create(CryptSpec.parse(volume.cipherSpec()), volume.volumeKey(),
                    volume.sectorSize(), false)) {
                cipher.encrypt(data, ivSector);
            }
            byte[] plain64 = new byte[16];
            ByteBuffer.wrap(plain64).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(ivSector);
            HexFormat hex = HexFormat.of();
            String essivKey = hex.formatHex(MessageDigest.getInstance("SHA-256").digest(volume.volumeKey()));
            byte[] iv = openssl(plain64, "-aes-256-ecb", "-K", essivKey);
            byte[] expected = openssl(plain, "-aes-256-cbc", "-K", hex.formatHex(volume.volumeKey()), "-iv", hex.formatHex(iv));
            assertArrayEquals(expected, data.array());
        }
    }

    /**
     * End to end through cryptsetup's own sector encryption: {@code cryptsetup reencrypt --encrypt} (offline, in
     * user space) turns a plaintext file into a LUKS2 device, moving the data behind a new header; the crypto
     * layer, configured only from what {@link LuksVolume} unlocks from that header, reads the plaintext back.
     */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"aes-xts-plain64/512/4096", "aes-cbc-essiv:sha256/256/512"})
    void payloadEncryptedByCryptsetupReadsBackThroughTheUnlockedHeader(String variant) throws Exception {
        String[] parts = variant.split("/");
        byte[] plain = new byte[1 << 20];
        new Random(11).nextBytes(plain);
        try (FileBlockDevice device = FileBlockDevice.create(image, FILE_BYTES, 512)) {
            device.write(0, ByteBuffer.wrap(plain));
        }
        runOk("cryptsetup", "reencrypt", "--encrypt", "--force-offline-reencrypt", "--type", "luks2",
                "--reduce-device-size", "4M", "--luks2-metadata-size", "16k", "--luks2-keyslots-size", "1M",
                "--cipher", parts[0], "--key-size", parts[1], "--sector-size", parts[2], "--pbkdf", "pbkdf2",
                "--pbkdf-force-iterations", "1000", "--key-file", passFile.toString(), "--batch-mode", image.toString());
        FileBlockDevice below = FileBlockDevice.open(image, 512, false, true);
        ByteBuffer read = ByteBuffer.allocate(plain.length);
        try (LuksVolume volume = LuksVolume.unlock(below, passFile, LuksVolume.SecretFile.KEY_FILE);
             CryptoBlockDevice crypto = new CryptoBlockDevice("crypt-test", below,
                     SectorCipher.create(CryptSpec.parse(volume.cipherSpec()), volume.volumeKey(), volume.sectorSize(), false),
                     volume.payloadOffsetSectors(), 0, false)) {
            assertEquals(parts[0], volume.cipherSpec());
            assertEquals(Integer.parseInt(parts[2]), volume.sectorSize());
            crypto.read(0, read);
        }
        assertArrayEquals(plain, read.array());
    }

    private byte[] openssl(byte[] input, String... args) throws Exception {
        Path in = Files.write(dir.resolve("ossl-in"), input);
        Path out = dir.resolve("ossl-out");
        List<String> command = new ArrayList<>(List.of("openssl", "enc", "-nopad", "-in", in.toString(), "-out", out.toString()));
        command.addAll(List.of(args));
        runOk(command.toArray(new String[0]));
        return Files.readAllBytes(out);
    }

    private void cryptsetupFormat(List<String> options) throws Exception {
        try (FileBlockDevice ignored = FileBlockDevice.create(image, FILE_BYTES, 512)) {
            // sized sparse file for cryptsetup
        }
        List<String> command = new ArrayList<>(List.of("cryptsetup", "luksFormat", "--batch-mode", "--key-file",
                passFile.toString()));
        command.addAll(options);
        command.add(image.toString());
        runOk(command.toArray(new String[0]));
    }

    private void assertThrowsPassphrase(LuksHeader header, byte[] passphrase) {
        org.junit.jupiter.api.Assertions.assertThrows(LuksPassphraseException.class, () -> header.unlock(passphrase, "x"));
    }
}
