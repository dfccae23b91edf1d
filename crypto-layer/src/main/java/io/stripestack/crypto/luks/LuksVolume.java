package io.stripestack.crypto.luks;

import io.stripestack.blockdev.BlockDevice;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * What the crypto layer needs from a LUKS header at LUN start-up, after unlocking it: the cipher spec, the
 * volume key, the payload offset and the encryption sector size.
 *
 * <pre>{@code
 * try (LuksVolume luks = LuksVolume.unlock(raid5, Path.of("/etc/stripestack/lun0.key"), SecretFile.KEY_FILE)) {
 *     SectorCipher cipher = SectorCipher.create(CryptSpec.parse(luks.cipherSpec()), luks.volumeKey(),
 *                                               luks.sectorSize(), false);          // copies the key
 *     crypto = new CryptoBlockDevice("crypt0", raid5, cipher, luks.payloadOffsetSectors(), 0, false);
 * }   // the key bytes are zeroed here
 * }</pre>
 *
 * <p>Not thread-safe; one owner reads it and closes it. Holds no reference to the device.
 */
public final class LuksVolume implements AutoCloseable {
    /** How a secret file's bytes become the passphrase. */
    public enum SecretFile {
        /** Every byte of the file, a trailing newline included: cryptsetup {@code --key-file FILE}. */
        KEY_FILE,
        /**
         * The file's first line without its line ending: what typing the passphrase at cryptsetup's prompt (or
         * piping {@code echo secret |} into it) gives.
         */
        PASSPHRASE_FILE
    }

    /** cryptsetup's default --keyfile-size ceiling. */
    static final long MAX_KEY_FILE_BYTES = 8L << 20;

    private final String cipherSpec;
    private final VolumeKey key;
    private final long payloadOffsetSectors;
    private final int sectorSize;
    private final long payloadBytes;
    private final String uuid;
    private final int version;
    private final boolean allowDiscards;

    private LuksVolume(LuksHeader header, VolumeKey key) {
        this.cipherSpec = header.cipherSpec();
        this.key = key;
        this.payloadOffsetSectors = header.payloadOffsetSectors();
        this.sectorSize = header.sectorSize();
        this.payloadBytes = header instanceof Luks2Header luks2 ? luks2.payloadBytes() : -1;
        this.uuid = header.uuid();
        this.version = header.version();
        this.allowDiscards = header instanceof Luks2Header luks2 && luks2.persistentFlags().contains("allow-discards");
    }

    /**
     * Reads the LUKS header of {@code device} and unlocks it with the secret in {@code file}.
     *
     * @throws LuksHeaderException     if the header is missing, corrupt or unsupported
     * @throws LuksPassphraseException "no keyslot matches the passphrase from FILE"
     * @throws NoSuchFileException     if {@code file} does not exist
     */
    public static LuksVolume unlock(BlockDevice device, Path file, SecretFile kind) throws IOException {
        LuksHeader header = LuksHeader.read(device);
        byte[] secret = readSecret(file, kind);
        try {
            return new LuksVolume(header, header.unlock(secret, file.toString()));
        } finally {
            Arrays.fill(secret, (byte) 0);
        }
    }

    /** Reads a key or passphrase file; the caller zeroes the result. */
    public static byte[] readSecret(Path file, SecretFile kind) throws IOException {
        if (!Files.isRegularFile(file)) {
            throw new NoSuchFileException(file.toString(), null, "LUKS key/passphrase file does not exist or is not a regular file");
        }
        io.stripestack.crypto.PlainModeKeys.requirePrivate(file);
        if (Files.size(file) > MAX_KEY_FILE_BYTES) {
            throw new IOException("key file " + file + " has " + Files.size(file) + " bytes, more than cryptsetup's 8 MiB "
                    + "key file limit; is it the right file?");
        }
        byte[] bytes = Files.readAllBytes(file);
        if (kind == SecretFile.KEY_FILE) {
            return bytes;
        }
        int end = 0;
        while (end < bytes.length && bytes[end] != '\n') {
            end++;
        }
        if (end > 0 && bytes[end - 1] == '\r') {
            end--;
        }
        byte[] line = Arrays.copyOf(bytes, end);
        Arrays.fill(bytes, (byte) 0);
        return line;
    }

    /** The data cipher, e.g. {@code aes-xts-plain64}; parse it with {@code CryptSpec.parse}. */
    public String cipherSpec() {
        return cipherSpec;
    }

    /**
     * The volume key, valid until {@link #close()}: this object's own array, which the caller copies (the
     * sector cipher does) and never keeps.
     */
    public byte[] volumeKey() {
        return key.bytes();
    }

    /** Where the payload starts, in 512-byte sectors of the device below. */
    public long payloadOffsetSectors() {
        return payloadOffsetSectors;
    }

    /** Encryption sector size in bytes (512 for LUKS1). IVs count 512-byte units either way (no iv_large_sectors). */
    public int sectorSize() {
        return sectorSize;
    }

    /** The payload's length in bytes, or -1 when it runs to the end of the device. */
    public long payloadBytes() {
        return payloadBytes;
    }

    /** The keyslot that opened the volume. */
    public int keyslot() {
        return key.keyslot();
    }

    public String uuid() {
        return uuid;
    }

    /**
     * Whether the header itself allows discards: the LUKS2 persistent flag "allow-discards" (LUKS1 headers
     * have no persistent flags).
     */
    public boolean allowDiscards() {
        return allowDiscards;
    }

    /** LUKS version, 1 or 2. */
    public int version() {
        return version;
    }

    /** Zeroes the volume key. */
    @Override
    public void close() {
        key.close();
    }

    @Override
    public String toString() {
        return "LUKS" + version + " " + uuid + " " + cipherSpec + " " + key.length() * 8 + "-bit key, payload at sector "
                + payloadOffsetSectors + ", " + sectorSize + "-byte sectors";
    }
}
