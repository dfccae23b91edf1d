package io.stripestack.crypto;

import io.stripestack.secrets.FilePermissions;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Locale;
import org.bouncycastle.crypto.Digest;
import org.bouncycastle.crypto.digests.RIPEMD160Digest;

/**
 * Volume keys as cryptsetup's plain mode derives them (lib/setup.c process_key, lib/crypt_plain.c).
 *
 * <ul>
 *   <li>Key file ({@code cryptsetup open --type plain --key-file FILE}): the file's first {@code keyBytes}
 *       bytes are the key, unhashed. A file shorter than the key is refused here (cryptsetup would pad it
 *       with zeros, which only ever hides a mistake). A file group or others can read is refused with the
 *       {@code chmod} that fixes it: the key decrypts the whole volume.</li>
 *   <li>Passphrase (typed, or the first line of a passphrase file) with {@code --hash H}: round {@code r} (from 0) hashes {@code r} bytes 'A' followed by the
 *       passphrase; the digests are concatenated and cut to the key size. {@code H:n} hashes only {@code n}
 *       key bytes and zero-fills the rest; {@code plain} takes the passphrase bytes themselves.</li>
 * </ul>
 *
 * <p>Returned arrays belong to the caller, who zeroes them once the {@link SectorCipher} holds its copy.
 * Intermediate copies made here are zeroed before returning. Key bytes never appear in messages.
 * Stateless and thread-safe.
 */
public final class PlainModeKeys {
    private PlainModeKeys() {
    }

    /**
     * Reads a raw key file.
     *
     * @throws IOException naming the file when it cannot be read, is shorter than the key, or is readable by
     *                     group or others (the message gives the chmod command)
     */
    public static byte[] readKeyFile(Path keyFile, int keyBytes) throws IOException {
        requirePrivate(keyFile);
        byte[] key;
        try (InputStream in = Files.newInputStream(keyFile)) {
            key = in.readNBytes(keyBytes);
        }
        if (key.length < keyBytes) {
            int got = key.length;
            Arrays.fill(key, (byte) 0);
            throw new IOException("key file " + keyFile + " holds " + got + " bytes but the key needs " + keyBytes
                    + " (" + keyBytes * 8 + " bits); create it with e.g. 'head -c " + keyBytes
                    + " /dev/urandom > " + keyFile + "' or lower the key size");
        }
        return key;
    }

    /**
     * Writes a key or passphrase file that is readable by its owner only from its creation on, as
     * {@link #readKeyFile} and {@link #keyFromPassphraseFile} require.
     *
     * @throws java.nio.file.FileAlreadyExistsException if {@code file} exists: a key file is never overwritten
     */
    public static void createKeyFile(Path file, byte[] content) throws IOException {
        Files.write(FilePermissions.createPrivate(file), content);
    }

    /** {@link #createKeyFile} with a new random key of {@code keyBytes} bytes, zeroed in memory once written. */
    public static void createRandomKeyFile(Path file, int keyBytes) throws IOException {
        byte[] key = new byte[keyBytes];
        try {
            new SecureRandom().nextBytes(key);
            createKeyFile(file, key);
        } finally {
            Arrays.fill(key, (byte) 0);
        }
    }

    /** Longest passphrase file accepted; a passphrase is typed, not a blob. */
    static final int MAX_PASSPHRASE_FILE = 8192;

    /**
     * Reads a passphrase file and hashes its passphrase into a key as {@link #hashPassphrase} does. The
     * passphrase is the file's first line without its line ending ({@code \n} or {@code \r\n}): what typing it
     * at cryptsetup's prompt, or {@code echo secret | cryptsetup open --type plain ...}, gives. (A
     * {@code --key-file} is different: cryptsetup does not hash it; use {@link #readKeyFile}.)
     *
     * @throws IOException naming the file when it cannot be read, is readable by group or others (with the
     *                     chmod fix), is empty, or is longer than {@value #MAX_PASSPHRASE_FILE} bytes
     */
    public static byte[] keyFromPassphraseFile(Path passphraseFile, String hash, int keyBytes) throws IOException {
        requirePrivate(passphraseFile);
        byte[] content;
        try (InputStream in = Files.newInputStream(passphraseFile)) {
            content = in.readNBytes(MAX_PASSPHRASE_FILE + 1);
        }
        byte[] passphrase = null;
        try {
            if (content.length > MAX_PASSPHRASE_FILE) {
                throw new IOException("passphrase file " + passphraseFile + " is longer than " + MAX_PASSPHRASE_FILE
                        + " bytes; for a binary key use key_file (cryptsetup --key-file) instead");
            }
            int end = 0;
            while (end < content.length && content[end] != '\n') {
                end++;
            }
            if (end > 0 && end < content.length && content[end - 1] == '\r') {
                end--;
            }
            if (end == 0) {
                throw new IOException("passphrase file " + passphraseFile + " has an empty first line; "
                        + "write the passphrase on its first line");
            }
            passphrase = Arrays.copyOf(content, end);
            return hashPassphrase(passphrase, hash, keyBytes);
        } finally {
            Arrays.fill(content, (byte) 0);
            if (passphrase != null) {
                Arrays.fill(passphrase, (byte) 0);
            }
        }
    }

    /**
     * Hashes a passphrase into a key of {@code keyBytes} bytes as {@code cryptsetup --type plain --hash hash}
     * does. The caller keeps (and zeroes) the passphrase.
     *
     * @param hash {@code sha1}, {@code sha256}, {@code sha512}, {@code ripemd160} (any JCA digest name works),
     *             optionally {@code :n} to hash only n key bytes, or {@code plain} for no hashing
     * @throws IllegalArgumentException for an unknown hash or a too short {@code plain} passphrase
     */
    public static byte[] hashPassphrase(byte[] passphrase, String hash, int keyBytes) {
        String name = hash;
        int hashedBytes = keyBytes;
        int colon = hash.indexOf(':');
        if (colon >= 0) {
            name = hash.substring(0, colon);
            try {
                hashedBytes = Integer.parseInt(hash.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("hash '" + hash + "': the length after ':' is not a number");
            }
            if (hashedBytes <= 0 || hashedBytes > keyBytes) {
                throw new IllegalArgumentException("hash '" + hash + "': length " + hashedBytes
                        + " must be between 1 and the key size " + keyBytes);
            }
        }
        byte[] key = new byte[keyBytes];
        if (name.equalsIgnoreCase("plain")) {
            if (passphrase.length < hashedBytes) {
                throw new IllegalArgumentException("hash 'plain' needs a passphrase of at least " + hashedBytes
                        + " bytes; use --hash sha256 or a longer passphrase");
            }
            System.arraycopy(passphrase, 0, key, 0, hashedBytes);
            return key;
        }
        Digester digester = digester(name);
        byte[] digest = new byte[digester.length()];
        for (int round = 0, at = 0; at < hashedBytes; round++) {
            for (int i = 0; i < round; i++) {
                digester.update((byte) 'A');
            }
            digester.update(passphrase);
            digester.finish(digest);
            int n = Math.min(digest.length, hashedBytes - at);
            System.arraycopy(digest, 0, key, at, n);
            at += n;
        }
        Arrays.fill(digest, (byte) 0);
        return key;
    }

    /**
     * Refuses a key or passphrase file that group or others can read: anyone who can read it can decrypt
     * the volume. The message names the file and the chmod that fixes it.
     */
    public static void requirePrivate(Path keyFile) throws IOException {
        FilePermissions.requirePrivate(keyFile, "key file", "anyone who can read it can decrypt the volume");
    }

    /** A digest by cryptsetup name: JCA for sha*, md5; BouncyCastle for ripemd160, which the JDK lacks. */
    private static Digester digester(String name) {
        String lower = name.toLowerCase(Locale.ROOT);
        if (lower.equals("ripemd160") || lower.equals("rmd160")) {
            RIPEMD160Digest d = new RIPEMD160Digest();
            return new BouncyDigester(d);
        }
        try {
            return new JcaDigester(MessageDigest.getInstance(CryptSpec.jcaDigestName(name)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalArgumentException("hash '" + name + "' is not supported; use sha256, sha512, sha1 or ripemd160");
        }
    }

    private interface Digester {
        int length();

        void update(byte b);

        void update(byte[] bytes);

        /** Writes the digest into {@code out} and resets. */
        void finish(byte[] out);
    }

    private record JcaDigester(MessageDigest md) implements Digester {
        public int length() {
            return md.getDigestLength();
        }

        public void update(byte b) {
            md.update(b);
        }

        public void update(byte[] bytes) {
            md.update(bytes);
        }

        public void finish(byte[] out) {
            try {
                md.digest(out, 0, out.length);
            } catch (java.security.DigestException e) {
                throw new IllegalStateException("digest buffer sized from getDigestLength", e);
            }
        }
    }

    private record BouncyDigester(Digest d) implements Digester {
        public int length() {
            return d.getDigestSize();
        }

        public void update(byte b) {
            d.update(b);
        }

        public void update(byte[] bytes) {
            d.update(bytes, 0, bytes.length);
        }

        public void finish(byte[] out) {
            d.doFinal(out, 0);
        }
    }
}
