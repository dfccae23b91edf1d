package io.stripestack.crypto.luks;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.secrets.FilePermissions;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.List;

/**
 * A LUKS1 or LUKS2 header read from a device: what it says (cipher, key size, payload offset, keyslots),
 * unlocking a keyslot with a passphrase, adding and removing keyslots, a text dump, and a header backup.
 *
 * <p>The object is bound to the {@link BlockDevice} it was read from (the device below the crypto layer, or a
 * file) and writes keyslot changes back to it. It closes the device only if it opened it itself
 * ({@link #open(Path, boolean)}).
 *
 * <p>Not thread-safe: header maintenance is an administrative, single-threaded operation, and nothing else
 * may write the header area meanwhile (the crypto layer never touches bytes before the payload offset).
 * Passphrases are taken as byte arrays (the bytes of a key file, as cryptsetup uses them); this class never
 * keeps or logs them, and zeroes every derived key and decrypted keyslot material it produces.
 */
public abstract sealed class LuksHeader implements Closeable permits Luks1Header, Luks2Header {
    static final byte[] MAGIC = {'L', 'U', 'K', 'S', (byte) 0xba, (byte) 0xbe};
    /** The smallest device that can hold either header version's fixed part. */
    private static final int PROBE_BYTES = 4096;

    final BlockDevice device;
    final SecureRandom random = new SecureRandom();
    private boolean ownsDevice;

    LuksHeader(BlockDevice device) {
        this.device = device;
    }

    /**
     * Reads and validates the LUKS header at the start of {@code device}.
     *
     * @throws LuksHeaderException if there is no LUKS header, or it is corrupt or unsupported (the message
     *                             says which and what to do)
     */
    public static LuksHeader read(BlockDevice device) throws IOException {
        if (device.size() < PROBE_BYTES) {
            throw new LuksHeaderException(device.name() + " has " + device.size()
                    + " bytes, too small to hold a LUKS header; give the device (or file) that carries the header");
        }
        byte[] probe = LuksIo.read(device, 0, PROBE_BYTES);
        if (!Arrays.equals(probe, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            long secondary = Luks2Copies.findSecondaryCopy(device);
            if (secondary > 0) {
                throw new LuksHeaderException(device.name() + ": the primary LUKS2 header at byte 0 is damaged (no LUKS magic), "
                        + "but a secondary copy exists at byte " + secondary + "; run 'cryptsetup repair " + device.name()
                        + "' to restore the primary from it, or restore a header backup");
            }
            throw new LuksHeaderException(device.name() + " has no LUKS header (no LUKS magic at byte 0): it is not a "
                    + "LUKS device, or its header was overwritten; restore it from a header backup "
                    + "(cryptsetup luksHeaderRestore) or format it (stripestack luks format)");
        }
        int version = ((probe[6] & 0xff) << 8) | (probe[7] & 0xff);
        return switch (version) {
            case 1 -> Luks1Header.parse(device, probe);
            case 2 -> Luks2Header.parse(device, probe);
            default -> throw new LuksHeaderException(device.name() + ": LUKS version " + version
                    + " is not supported (only LUKS1 and LUKS2); the header may be corrupt");
        };
    }

    /**
     * Opens {@code path} (a file, a header backup, or a block device) and reads its header; {@link #close()}
     * closes the file again.
     */
    public static LuksHeader open(Path path, boolean writable) throws IOException {
        FileBlockDevice file = FileBlockDevice.open(path, LuksIo.SECTOR, false, !writable);
        try {
            LuksHeader header = read(file);
            header.ownsDevice = true;
            return header;
        } catch (IOException | RuntimeException e) {
            file.close();
            throw e;
        }
    }

    /** 1 or 2. */
    public abstract int version();

    /** The header's UUID, e.g. {@code 484f598c-4151-4a8e-a6ae-1eb50dd8ce2a}. */
    public abstract String uuid();

    /** The data cipher as a dm-crypt spec, e.g. {@code aes-xts-plain64} or {@code aes-cbc-essiv:sha256}. */
    public abstract String cipherSpec();

    /** Volume key length in bytes (64 for aes-xts-plain64 with 512 bits); -1 if a LUKS2 header has no keyslot. */
    public abstract int volumeKeyBytes();

    /** Where the encrypted payload starts, in 512-byte sectors from the start of the device. */
    public abstract long payloadOffsetSectors();

    /** The encryption sector size of the payload: 512 for LUKS1; 512 to 4096 for LUKS2. */
    public abstract int sectorSize();

    /** The bytes from the device's start that hold the header and keyslots: what a header backup contains. */
    public abstract long headerAreaBytes();

    /** The number of keyslots the format has: 8 for LUKS1, 32 for LUKS2. */
    public abstract int keyslotLimit();

    /** The indexes of the keyslots that hold a key, ascending. */
    public abstract List<Integer> activeKeyslots();

    /** The device this header was read from. */
    public BlockDevice device() {
        return device;
    }

    /**
     * Tries every active keyslot with {@code passphrase}.
     *
     * @param source where the passphrase came from, for the error message (e.g. the key file's path)
     * @throws LuksPassphraseException "no keyslot matches the passphrase from SOURCE" (never the passphrase)
     */
    public VolumeKey unlock(byte[] passphrase, String source) throws IOException {
        LuksHeaderException unaffordable = null;
        List<Integer> order = unlockOrder();
        for (int slot : order) {
            try {
                VolumeKey key = tryKeyslot(keyslot(slot), passphrase);
                if (key != null) {
                    return key;
                }
            } catch (LuksHeaderException e) {
                unaffordable = e; // another keyslot may still match
            }
        }
        if (unaffordable != null) {
            throw unaffordable;
        }
        throw new LuksPassphraseException(device.name() + ": no keyslot matches the passphrase from " + source
                + " (tried keyslots " + order + " of active " + activeKeyslots() + "); check the passphrase or key file "
                + "(a key file is used byte for byte, a trailing newline included)");
    }

    /**
     * Tries only keyslot {@code slot} (cryptsetup --key-slot).
     *
     * @throws LuksPassphraseException if the slot is inactive or does not accept the passphrase
     */
    public VolumeKey unlock(byte[] passphrase, int slot, String source) throws IOException {
        checkSlotIndex(slot);
        if (!activeKeyslots().contains(slot)) {
            throw new LuksPassphraseException(device.name() + ": keyslot " + slot + " is not active; active keyslots: "
                    + activeKeyslots());
        }
        VolumeKey key = tryKeyslot(keyslot(slot), passphrase);
        if (key == null) {
            throw new LuksPassphraseException(device.name() + ": keyslot " + slot + " does not match the passphrase from "
                    + source);
        }
        return key;
    }

    /**
     * Adds a keyslot holding {@code key} under {@code newPassphrase} in the lowest free slot, with the KDF
     * {@code kdf} (see {@link KdfBenchmark} for cryptsetup-like defaults; LUKS1 takes PBKDF2 only).
     *
     * @return the new keyslot's index
     */
    public int addKeyslot(VolumeKey key, byte[] newPassphrase, Kdf kdf) throws IOException {
        for (int slot = 0; slot < keyslotLimit(); slot++) {
            if (!activeKeyslots().contains(slot)) {
                addKeyslot(key, newPassphrase, kdf, slot);
                return slot;
            }
        }
        throw new LuksHeaderException(device.name() + ": all " + keyslotLimit()
                + " keyslots are in use; remove one first (stripestack luks remove-key)");
    }

    /**
     * A KDF for a new keyslot of this header measured like cryptsetup's default (about 2 s here): PBKDF2 with
     * the header's hash for LUKS1, Argon2id for LUKS2. Takes a few hundred milliseconds to measure.
     */
    public abstract Kdf benchmarkKdf();

    /** Adds a keyslot at index {@code slot}, which must be free. */
    public abstract void addKeyslot(VolumeKey key, byte[] newPassphrase, Kdf kdf, int slot) throws IOException;

    /**
     * Deactivates keyslot {@code slot} and overwrites its key material with random bytes. Removing the last
     * active keyslot makes the data unrecoverable unless a header backup exists; callers ask first.
     */
    public abstract void removeKeyslot(int slot) throws IOException;

    /** Whether {@code key} is this header's volume key (checked against the header's digest). */
    public abstract boolean verifyVolumeKey(byte[] key);

    /** A human-readable description like {@code cryptsetup luksDump}'s (no secrets). */
    public abstract String dump();

    /**
     * Copies the header and keyslot areas ({@link #headerAreaBytes()}) into a new file that only its owner may
     * read, like {@code cryptsetup luksHeaderBackup}; cryptsetup can read the file back.
     *
     * @throws FileAlreadyExistsException if {@code file} exists (a backup is never overwritten)
     */
    public void backup(Path file) throws IOException {
        if (Files.exists(file)) {
            throw new FileAlreadyExistsException(file.toString(), null,
                    "header backup file exists; choose a new name (a backup is never overwritten)");
        }
        FilePermissions.createPrivate(file);
        long total = headerAreaBytes();
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.WRITE)) {
            int chunk = 1 << 20;
            for (long done = 0; done < total; done += chunk) {
                ByteBuffer bytes = ByteBuffer.wrap(LuksIo.read(device, done, (int) Math.min(chunk, total - done)));
                while (bytes.hasRemaining()) {
                    out.write(bytes, done + bytes.position());
                }
            }
            out.force(true);
        }
        if (file.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--------"));
        }
    }

    /** Closes the device if {@link #open(Path, boolean)} opened it; otherwise does nothing. */
    @Override
    public void close() throws IOException {
        if (ownsDevice) {
            device.close();
        }
    }

    // ---- shared keyslot mechanics -------------------------------------------------------------------------

    /** Everything needed to open or write one keyslot, whatever the header version. */
    record Keyslot(int index, Kdf kdf, byte[] salt, long areaOffset, long areaLength, String areaCipher,
                   int areaKeyBytes, int keyBytes, int stripes, LuksHash afHash) {
        /** Bytes of AF material, rounded up to whole 512-byte sectors (the unit the area is encrypted in). */
        int materialBytes() {
            return Math.toIntExact(LuksIo.roundUp(AfSplitter.splitLength(keyBytes, stripes), LuksIo.SECTOR));
        }
    }

    /** The keyslot's parameters; only called for active keyslots. */
    abstract Keyslot keyslot(int slot);

    /** Active keyslots in the order unlocking tries them. */
    List<Integer> unlockOrder() {
        return activeKeyslots();
    }

    /** Whether {@code candidate} is the volume key according to the digest keyslot {@code slot} is bound to. */
    abstract boolean verifyVolumeKey(byte[] candidate, int slot);

    void checkSlotIndex(int slot) {
        if (slot < 0 || slot >= keyslotLimit()) {
            throw new IllegalArgumentException("keyslot " + slot + " does not exist; LUKS" + version() + " has keyslots 0 to "
                    + (keyslotLimit() - 1));
        }
    }

    private VolumeKey tryKeyslot(Keyslot slot, byte[] passphrase) throws IOException {
        if (slot.kdf() instanceof Kdf.Argon2 argon2 && argon2.memoryKiB() * 1024L > Runtime.getRuntime().maxMemory() / 2) {
            throw new LuksHeaderException(device.name() + ": keyslot " + slot.index() + " needs " + argon2.memoryKiB() / 1024
                    + " MiB for Argon2, more than half of this JVM's heap; raise the heap (-Xmx) above "
                    + argon2.memoryKiB() / 512 + " MiB");
        }
        byte[] material = LuksIo.read(device, slot.areaOffset(), slot.materialBytes());
        byte[] derived = slot.kdf().derive(passphrase, slot.salt(), slot.areaKeyBytes());
        byte[] candidate = null;
        try {
            LuksIo.cryptArea(slot.areaCipher(), derived, material, false);
            candidate = AfSplitter.merge(material, slot.keyBytes(), slot.stripes(), slot.afHash());
            if (verifyVolumeKey(candidate, slot.index())) {
                VolumeKey key = new VolumeKey(candidate, slot.index());
                candidate = null;
                return key;
            }
            return null;
        } finally {
            Arrays.fill(derived, (byte) 0);
            Arrays.fill(material, (byte) 0);
            if (candidate != null) {
                Arrays.fill(candidate, (byte) 0);
            }
        }
    }

    /** AF-splits {@code key}, encrypts it under the KDF of {@code newPassphrase} and writes it to the area. */
    void writeKeyMaterial(Keyslot slot, byte[] key, byte[] newPassphrase) throws IOException {
        byte[] material = new byte[slot.materialBytes()];
        byte[] derived = slot.kdf().derive(newPassphrase, slot.salt(), slot.areaKeyBytes());
        try {
            AfSplitter.split(key, slot.stripes(), slot.afHash(), random, material);
            LuksIo.cryptArea(slot.areaCipher(), derived, material, true);
            LuksIo.write(device, slot.areaOffset(), material);
        } finally {
            Arrays.fill(derived, (byte) 0);
            Arrays.fill(material, (byte) 0);
        }
    }

    byte[] newSalt() {
        byte[] salt = new byte[Kdf.SALT_BYTES];
        random.nextBytes(salt);
        return salt;
    }

    static String ascii(byte[] bytes) {
        return new String(bytes, StandardCharsets.US_ASCII);
    }
}
