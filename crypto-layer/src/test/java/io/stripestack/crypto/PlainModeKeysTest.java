package io.stripestack.crypto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * cryptsetup plain-mode key derivation (lib/crypt_plain.c): round r hashes r 'A' bytes then the passphrase;
 * key = round0 || round1 || ... cut to the key size. Expected values are computed here from the digests of
 * the literal strings, not through the class under test.
 */
class PlainModeKeysTest {
    private static final byte[] PASS = "correct horse".getBytes(StandardCharsets.UTF_8);

    @TempDir
    Path dir;

    @Test
    void sha256KeyOfDigestSizeIsOneDigest() throws Exception {
        assertArrayEquals(sha("SHA-256", "correct horse"), PlainModeKeys.hashPassphrase(PASS, "sha256", 32));
    }

    @Test
    void longerKeysAppendRoundsPrefixedWithA() throws Exception {
        byte[] expected = concat(sha("SHA-256", "correct horse"), sha("SHA-256", "Acorrect horse"));
        assertArrayEquals(expected, PlainModeKeys.hashPassphrase(PASS, "sha256", 64));
        byte[] sha1Key = concat(sha("SHA-1", "correct horse"), sha("SHA-1", "Acorrect horse"), sha("SHA-1", "AAcorrect horse"));
        assertArrayEquals(Arrays.copyOf(sha1Key, 48), PlainModeKeys.hashPassphrase(PASS, "sha1", 48));
    }

    @Test
    void shorterKeysTakeTheDigestPrefix() throws Exception {
        assertArrayEquals(Arrays.copyOf(sha("SHA-512", "correct horse"), 32), PlainModeKeys.hashPassphrase(PASS, "sha512", 32));
    }

    @Test
    void ripemd160MatchesKnownDigest() {
        // RIPEMD-160("abc") from the algorithm's published test vectors
        byte[] key = PlainModeKeys.hashPassphrase("abc".getBytes(StandardCharsets.US_ASCII), "ripemd160", 20);
        assertEquals("8eb208f7e05d987a9b044a8e98c6b087f15a0bfc", Hex.encode(key));
    }

    @Test
    void hashLengthSuffixZeroFillsTheRest() throws Exception {
        byte[] key = PlainModeKeys.hashPassphrase(PASS, "sha256:16", 32);
        assertArrayEquals(Arrays.copyOf(sha("SHA-256", "correct horse"), 16), Arrays.copyOf(key, 16));
        assertArrayEquals(new byte[16], Arrays.copyOfRange(key, 16, 32));
    }

    @Test
    void plainHashUsesPassphraseBytes() {
        byte[] pass = "0123456789abcdef0123".getBytes(StandardCharsets.US_ASCII);
        assertArrayEquals(Arrays.copyOf(pass, 16), PlainModeKeys.hashPassphrase(pass, "plain", 16));
        assertThrows(IllegalArgumentException.class, () -> PlainModeKeys.hashPassphrase(pass, "plain", 32));
    }

    @Test
    void unknownHashIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PlainModeKeys.hashPassphrase(PASS, "whirlpool9", 32));
        assertTrue(e.getMessage().contains("whirlpool9"));
    }

    @Test
    void keyFileBytesAreTheKey() throws IOException {
        byte[] content = new byte[100];
        for (int i = 0; i < content.length; i++) {
            content[i] = (byte) (i * 7 + 3);
        }
        Path file = privateFile("key.bin", content);
        assertArrayEquals(Arrays.copyOf(content, 64), PlainModeKeys.readKeyFile(file, 64));
    }

    @Test
    void shortKeyFileIsRefusedWithoutShowingIt() throws IOException {
        Path file = privateFile("short.bin", new byte[] {0x5a, 0x5a, 0x5a});
        IOException e = assertThrows(IOException.class, () -> PlainModeKeys.readKeyFile(file, 32));
        assertTrue(e.getMessage().contains(file.toString()) && e.getMessage().contains("3 bytes"), e.getMessage());
        assertTrue(!e.getMessage().toLowerCase().contains("5a"), e.getMessage());
    }

    @Test
    void keyFileReadableByOthersIsRefusedWithChmodFix() throws IOException {
        Path file = privateFile("open.bin", new byte[32]);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        IOException e = assertThrows(IOException.class, () -> PlainModeKeys.readKeyFile(file, 32));
        assertTrue(e.getMessage().contains("chmod 600 " + file), e.getMessage());
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r-----"));
        assertThrows(IOException.class, () -> PlainModeKeys.readKeyFile(file, 32));
    }

    @Test
    void keyFilesAreCreatedOwnerOnlyAndNeverOverwritten() throws IOException {
        Path file = dir.resolve("new.key");
        PlainModeKeys.createRandomKeyFile(file, 32);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        assertEquals(32, PlainModeKeys.readKeyFile(file, 32).length);
        assertThrows(java.nio.file.FileAlreadyExistsException.class, () -> PlainModeKeys.createKeyFile(file, new byte[32]));
    }

    @Test
    void passphraseFileFirstLineIsHashed() throws Exception {
        byte[] expected = sha("SHA-256", "correct horse");
        String[] contents = {"correct horse", "correct horse\n", "correct horse\r\nsecond line\n"};
        for (int i = 0; i < contents.length; i++) {
            String content = contents[i];
            Path file = privateFile("pass" + i + ".txt", content.getBytes(StandardCharsets.UTF_8));
            assertArrayEquals(expected, PlainModeKeys.keyFromPassphraseFile(file, "sha256", 32), content);
        }
        Path empty = privateFile("empty.txt", "\nsecret\n".getBytes(StandardCharsets.UTF_8));
        IOException e = assertThrows(IOException.class, () -> PlainModeKeys.keyFromPassphraseFile(empty, "sha256", 32));
        assertTrue(e.getMessage().contains(empty.toString()), e.getMessage());
        Path open = privateFile("open.txt", "secret".getBytes(StandardCharsets.UTF_8));
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rw----r--"));
        assertThrows(IOException.class, () -> PlainModeKeys.keyFromPassphraseFile(open, "sha256", 32));
    }

    private Path privateFile(String name, byte[] content) throws IOException {
        Path file = dir.resolve(name);
        PlainModeKeys.createKeyFile(file, content);
        return file;
    }

    private static byte[] sha(String algorithm, String text) throws Exception {
        return MessageDigest.getInstance(algorithm).digest(text.getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }
}
