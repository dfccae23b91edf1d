package io.stripestack.crypto.luks;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.crypto.CryptSpec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A LUKS1 header (LUKS On-Disk Format Specification 1.2.3): a 592-byte big-endian {@code phdr} at byte 0,
 * eight keyslots, each pointing at 4000 AF stripes of key material encrypted with the header's own cipher
 * under a PBKDF2-derived key, and a PBKDF2 digest of the master key.
 *
 * <pre>
 * off size field                      off size field (keyslot i at 208 + 48 i)
 *   0    6 magic "LUKS\xba\xbe"          0    4 active: 0x00AC71F3 enabled, 0x0000DEAD disabled
 *   6    2 version = 1                   4    4 password iterations
 *   8   32 cipher-name ("aes")           8   32 salt
 *  40   32 cipher-mode ("xts-plain64")  40    4 key-material-offset (512-byte sectors)
 *  72   32 hash-spec ("sha256")         44    4 stripes (4000)
 * 104    4 payload-offset (sectors)
 * 108    4 key-bytes
 * 112   20 mk-digest = PBKDF2(hash, master key, mk-digest-salt, mk-digest-iter, 20)
 * 132   32 mk-digest-salt
 * 164    4 mk-digest-iter
 * 168   40 uuid
 * </pre>
 *
 * <p>Concurrency: see {@link LuksHeader}; {@link #phdr} is this object's own image of bytes 0..591.
 */
public final class Luks1Header extends LuksHeader {
    static final int PHDR_BYTES = 592;
    static final int KEYSLOTS = 8;
    static final int ACTIVE = 0x00AC71F3;
    static final int INACTIVE = 0x0000DEAD;
    static final int DIGEST_BYTES = 20;
    /** Keyslot areas start and are aligned at 4096 bytes (cryptsetup LUKS_ALIGN_KEYSLOTS). */
    static final int KEYSLOT_ALIGN_SECTORS = 8;

    private static final int CIPHER_NAME = 8;
    private static final int CIPHER_MODE = 40;
    private static final int HASH_SPEC = 72;
    private static final int PAYLOAD_OFFSET = 104;
    private static final int KEY_BYTES = 108;
    private static final int MK_DIGEST = 112;
    private static final int MK_DIGEST_SALT = 132;
    private static final int MK_DIGEST_ITER = 164;
    private static final int UUID = 168;
    private static final int KEYSLOT_BASE = 208;
    private static final int KEYSLOT_BYTES = 48;
    private static final int FIELD = 32;

    private final byte[] phdr;
    private final String cipherSpec;
    private final LuksHash hash;

    private Luks1Header(BlockDevice device, byte[] phdr, String cipherSpec, LuksHash hash) {
        super(device);
        this.phdr = phdr;
        this.cipherSpec = cipherSpec;
        this.hash = hash;
    }

    static Luks1Header parse(BlockDevice device, byte[] probe) throws LuksHeaderException {
        byte[] phdr = Arrays.copyOf(probe, PHDR_BYTES);
        ByteBuffer view = ByteBuffer.wrap(phdr);
        String name = device.name() + ": LUKS1 header";
        for (int field : new int[] {CIPHER_NAME, CIPHER_MODE, HASH_SPEC}) {
            if (!LuksIo.isCleanCString(phdr, field, FIELD)) {
                throw corrupt(name, "its cipher or hash name field at byte " + field + " is not a text string");
            }
        }
        if (!LuksIo.isCleanCString(phdr, UUID, 40)) {
            throw corrupt(name, "its UUID field is not a text string");
        }
        String spec = LuksIo.cString(phdr, CIPHER_NAME, FIELD) + "-" + LuksIo.cString(phdr, CIPHER_MODE, FIELD);
        int keyBytes = view.getInt(KEY_BYTES);
        try {
            CryptSpec.parse(spec).checkKeyLength(keyBytes);
        } catch (IllegalArgumentException e) {
            throw new LuksHeaderException(name + " uses an unsupported cipher or key size (" + e.getMessage() + ")");
        }
        LuksHash hash;
        try {
            hash = LuksHash.forName(LuksIo.cString(phdr, HASH_SPEC, FIELD));
        } catch (IllegalArgumentException e) {
            throw new LuksHeaderException(name + ": " + e.getMessage());
        }
        if (view.getInt(MK_DIGEST_ITER) < 1) {
            throw corrupt(name, "its master key digest iteration count is " + Integer.toUnsignedString(view.getInt(MK_DIGEST_ITER)));
        }
        long payload = Integer.toUnsignedLong(view.getInt(PAYLOAD_OFFSET));
        if (payload == 0) {
            throw new LuksHeaderException(name + " has payload offset 0, a detached header; detached LUKS headers are not "
                    + "supported: keep the header on the device");
        }
        long splitSectors = LuksIo.roundUp(AfSplitter.splitLength(keyBytes, AfSplitter.LUKS_STRIPES), LuksIo.SECTOR)
                / LuksIo.SECTOR;
        long[] areaStarts = new long[KEYSLOTS];
        for (int slot = 0; slot < KEYSLOTS; slot++) {
            int base = KEYSLOT_BASE + slot * KEYSLOT_BYTES;
            int active = view.getInt(base);
            if (active != ACTIVE && active != INACTIVE) {
                throw corrupt(name, "keyslot " + slot + " has state 0x" + Integer.toHexString(active)
                        + ", neither enabled nor disabled");
            }
            if (view.getInt(base + 44) != AfSplitter.LUKS_STRIPES) {
                throw corrupt(name, "keyslot " + slot + " has " + Integer.toUnsignedString(view.getInt(base + 44))
                        + " AF stripes instead of 4000");
            }
            if (active == ACTIVE && view.getInt(base + 4) < 1) {
                throw corrupt(name, "enabled keyslot " + slot + " has iteration count "
                        + Integer.toUnsignedString(view.getInt(base + 4)));
            }
            long start = Integer.toUnsignedLong(view.getInt(base + 40));
            if (start * LuksIo.SECTOR < PHDR_BYTES || start + splitSectors > payload) {
                throw corrupt(name, "keyslot " + slot + "'s key material at sectors [" + start + ", " + (start + splitSectors)
                        + ") is not between the header and the payload at sector " + payload);
            }
            areaStarts[slot] = start;
        }
        long[] sorted = areaStarts.clone();
        Arrays.sort(sorted);
        for (int i = 1; i < KEYSLOTS; i++) {
            if (sorted[i - 1] + splitSectors > sorted[i]) {
                throw corrupt(name, "two keyslots' key material areas overlap at sector " + sorted[i]);
            }
        }
        return new Luks1Header(device, phdr, spec, hash);
    }

    /** Writes a new header image to {@code device} and returns it read back through {@link #parse}. */
    static Luks1Header create(BlockDevice device, byte[] phdr) throws IOException {
        LuksIo.write(device, 0, phdr);
        return parse(device, phdr);
    }

    /** Sectors of one keyslot's key material area, aligned to 4096 bytes. */
    static long keyslotAreaSectors(int keyBytes) {
        long sectors = LuksIo.roundUp(AfSplitter.splitLength(keyBytes, AfSplitter.LUKS_STRIPES), LuksIo.SECTOR) / LuksIo.SECTOR;
        return LuksIo.roundUp(sectors, KEYSLOT_ALIGN_SECTORS);
    }

    /** The sector after the last keyslot area of cryptsetup's layout: 8 + 8 x keyslot area (2056 for 256 bits). */
    static long headerEndSectors(int keyBytes) {
        return KEYSLOT_ALIGN_SECTORS + KEYSLOTS * keyslotAreaSectors(keyBytes);
    }

    /** Builds a fresh phdr with cryptsetup's keyslot layout and every keyslot disabled. */
    static byte[] image(String cipherName, String cipherMode, LuksHash hash, int keyBytes, long payloadSectors,
                        byte[] mkDigest, byte[] mkDigestSalt, int mkDigestIterations, String uuid) {
        byte[] phdr = new byte[PHDR_BYTES];
        ByteBuffer view = ByteBuffer.wrap(phdr);
        view.put(0, MAGIC);
        view.putShort(6, (short) 1);
        LuksIo.putCString(phdr, CIPHER_NAME, FIELD, cipherName);
        LuksIo.putCString(phdr, CIPHER_MODE, FIELD, cipherMode);
        LuksIo.putCString(phdr, HASH_SPEC, FIELD, hash.luksName());
        view.putInt(PAYLOAD_OFFSET, Math.toIntExact(payloadSectors));
        view.putInt(KEY_BYTES, keyBytes);
        view.put(MK_DIGEST, mkDigest, 0, DIGEST_BYTES);
        view.put(MK_DIGEST_SALT, mkDigestSalt, 0, Kdf.SALT_BYTES);
        view.putInt(MK_DIGEST_ITER, mkDigestIterations);
        LuksIo.putCString(phdr, UUID, 40, uuid);
        long area = keyslotAreaSectors(keyBytes);
        for (int slot = 0; slot < KEYSLOTS; slot++) {
            int base = KEYSLOT_BASE + slot * KEYSLOT_BYTES;
            view.putInt(base, INACTIVE);
            view.putInt(base + 40, Math.toIntExact(KEYSLOT_ALIGN_SECTORS + slot * area));
            view.putInt(base + 44, AfSplitter.LUKS_STRIPES);
        }
        return phdr;
    }

    static byte[] masterKeyDigest(LuksHash hash, byte[] key, byte[] salt, int iterations) {
        return hash.pbkdf2(key, salt, iterations, DIGEST_BYTES);
    }

    @Override
    public int version() {
        return 1;
    }

    @Override
    public String uuid() {
        return LuksIo.cString(phdr, UUID, 40);
    }

    @Override
    public String cipherSpec() {
        return cipherSpec;
    }

    /** The hash of PBKDF2 and the AF splitter ({@code hash-spec}). */
    public LuksHash hash() {
        return hash;
    }

    @Override
    public Kdf benchmarkKdf() {
        return KdfBenchmark.pbkdf2(hash, KdfBenchmark.DEFAULT_TARGET, volumeKeyBytes());
    }

    @Override
    public int volumeKeyBytes() {
        return view().getInt(KEY_BYTES);
    }

    @Override
    public long payloadOffsetSectors() {
        return Integer.toUnsignedLong(view().getInt(PAYLOAD_OFFSET));
    }

    @Override
    public int sectorSize() {
        return LuksIo.SECTOR;
    }

    @Override
    public long headerAreaBytes() {
        long end = 0;
        long area = keyslotAreaSectors(volumeKeyBytes());
        for (int slot = 0; slot < KEYSLOTS; slot++) {
            end = Math.max(end, keyslotStart(slot) + area);
        }
        return end * LuksIo.SECTOR;
    }

    @Override
    public int keyslotLimit() {
        return KEYSLOTS;
    }

    @Override
    public List<Integer> activeKeyslots() {
        List<Integer> active = new ArrayList<>(KEYSLOTS);
        for (int slot = 0; slot < KEYSLOTS; slot++) {
            if (view().getInt(KEYSLOT_BASE + slot * KEYSLOT_BYTES) == ACTIVE) {
                active.add(slot);
            }
        }
        return active;
    }

    @Override
    Keyslot keyslot(int slot) {
        int base = KEYSLOT_BASE + slot * KEYSLOT_BYTES;
        ByteBuffer view = view();
        byte[] salt = Arrays.copyOfRange(phdr, base + 8, base + 8 + Kdf.SALT_BYTES);
        return new Keyslot(slot, new Kdf.Pbkdf2(hash, view.getInt(base + 4)), salt,
                keyslotStart(slot) * LuksIo.SECTOR, keyslotAreaSectors(volumeKeyBytes()) * LuksIo.SECTOR, cipherSpec,
                volumeKeyBytes(), volumeKeyBytes(), view.getInt(base + 44), hash);
    }

    @Override
    boolean verifyVolumeKey(byte[] candidate, int slot) {
        return verifyVolumeKey(candidate);
    }

    @Override
    public boolean verifyVolumeKey(byte[] key) {
        if (key.length != volumeKeyBytes()) {
            return false;
        }
        byte[] digest = masterKeyDigest(hash, key, Arrays.copyOfRange(phdr, MK_DIGEST_SALT, MK_DIGEST_SALT + Kdf.SALT_BYTES),
                view().getInt(MK_DIGEST_ITER));
        try {
            return MessageDigest.isEqual(digest, Arrays.copyOfRange(phdr, MK_DIGEST, MK_DIGEST + DIGEST_BYTES));
        } finally {
            Arrays.fill(digest, (byte) 0);
        }
    }

    @Override
    public void addKeyslot(VolumeKey key, byte[] newPassphrase, Kdf kdf, int slot) throws IOException {
        checkSlotIndex(slot);
        if (activeKeyslots().contains(slot)) {
            throw new IllegalArgumentException(device.name() + ": keyslot " + slot + " is in use; remove it first or pick a free one");
        }
        if (!(kdf instanceof Kdf.Pbkdf2 pbkdf2) || pbkdf2.hash() != hash) {
            throw new IllegalArgumentException("LUKS1 keyslots use PBKDF2 with the header's hash (" + hash.luksName()
                    + "), not " + kdf.describe() + "; use LUKS2 for Argon2");
        }
        if (!verifyVolumeKey(key.bytes())) {
            throw new IllegalArgumentException(device.name() + ": the given volume key is not this header's");
        }
        int base = KEYSLOT_BASE + slot * KEYSLOT_BYTES;
        byte[] salt = newSalt();
        Keyslot target = new Keyslot(slot, kdf, salt, keyslotStart(slot) * LuksIo.SECTOR,
                keyslotAreaSectors(volumeKeyBytes()) * LuksIo.SECTOR, cipherSpec, volumeKeyBytes(), volumeKeyBytes(),
                AfSplitter.LUKS_STRIPES, hash);
        writeKeyMaterial(target, key.bytes(), newPassphrase);
        ByteBuffer view = view();
        view.putInt(base + 4, pbkdf2.iterations());
        view.put(base + 8, salt);
        view.putInt(base, ACTIVE);
        LuksIo.write(device, 0, phdr);
        device.flush();
    }

    @Override
    public void removeKeyslot(int slot) throws IOException {
        checkSlotIndex(slot);
        if (!activeKeyslots().contains(slot)) {
            throw new IllegalArgumentException(device.name() + ": keyslot " + slot + " is not active; active keyslots: "
                    + activeKeyslots());
        }
        int base = KEYSLOT_BASE + slot * KEYSLOT_BYTES;
        ByteBuffer view = view();
        view.putInt(base, INACTIVE);
        view.putInt(base + 4, 0);
        view.put(base + 8, new byte[Kdf.SALT_BYTES]);
        LuksIo.write(device, 0, phdr);
        LuksIo.wipeRandom(device, keyslotStart(slot) * LuksIo.SECTOR, keyslotAreaSectors(volumeKeyBytes()) * LuksIo.SECTOR,
                random);
        device.flush();
    }

    @Override
    public String dump() {
        ByteBuffer view = view();
        StringBuilder out = new StringBuilder(2048);
        out.append("LUKS header information for ").append(device.name()).append("\n\n");
        out.append("Version:       \t1\n");
        out.append("Cipher name:   \t").append(LuksIo.cString(phdr, CIPHER_NAME, FIELD)).append('\n');
        out.append("Cipher mode:   \t").append(LuksIo.cString(phdr, CIPHER_MODE, FIELD)).append('\n');
        out.append("Hash spec:     \t").append(hash.luksName()).append('\n');
        out.append("Payload offset:\t").append(payloadOffsetSectors()).append('\n');
        out.append("MK bits:       \t").append(volumeKeyBytes() * 8).append('\n');
        out.append("MK digest:     \t").append(LuksIo.hex(Arrays.copyOfRange(phdr, MK_DIGEST, MK_DIGEST + DIGEST_BYTES))).append('\n');
        out.append("MK salt:       \t").append(LuksIo.hex(Arrays.copyOfRange(phdr, MK_DIGEST_SALT, MK_DIGEST_SALT + 32))).append('\n');
        out.append("MK iterations: \t").append(Integer.toUnsignedString(view.getInt(MK_DIGEST_ITER))).append('\n');
        out.append("UUID:          \t").append(uuid()).append("\n\n");
        for (int slot = 0; slot < KEYSLOTS; slot++) {
            int base = KEYSLOT_BASE + slot * KEYSLOT_BYTES;
            boolean active = view.getInt(base) == ACTIVE;
            out.append("Key Slot ").append(slot).append(active ? ": ENABLED\n" : ": DISABLED\n");
            if (active) {
                out.append("\tIterations:         \t").append(Integer.toUnsignedString(view.getInt(base + 4))).append('\n');
                out.append("\tSalt:               \t").append(LuksIo.hex(Arrays.copyOfRange(phdr, base + 8, base + 40))).append('\n');
                out.append("\tKey material offset:\t").append(keyslotStart(slot)).append('\n');
                out.append("\tAF stripes:         \t").append(view.getInt(base + 44)).append('\n');
            }
        }
        return out.toString();
    }

    private long keyslotStart(int slot) {
        return Integer.toUnsignedLong(view().getInt(KEYSLOT_BASE + slot * KEYSLOT_BYTES + 40));
    }

    private ByteBuffer view() {
        return ByteBuffer.wrap(phdr);
    }

    private static LuksHeaderException corrupt(String name, String what) {
        return new LuksHeaderException(name + " is corrupt: " + what
                + "; restore it from a header backup (cryptsetup luksHeaderRestore)");
    }
}
