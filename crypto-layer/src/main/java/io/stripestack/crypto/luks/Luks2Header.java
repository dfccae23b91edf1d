package io.stripestack.crypto.luks;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.crypto.luks.Luks2Metadata.Slot;
import io.stripestack.crypto.luks.Luks2Metadata.VolumeDigest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * A LUKS2 header (LUKS2 On-Disk Format Specification 1.1): two copies, each a 4096-byte big-endian binary
 * header followed by a JSON metadata area, {@code hdr_size} bytes per copy (16 KiB by default), then the
 * keyslots area, then the data segment.
 *
 * <pre>
 * off size binary header field           JSON (one object)
 *   0    6 magic "LUKS\xba\xbe" / "SKUL\xba\xbe"   keyslots: {"0": {type luks2, key_size, af {luks1, 4000, hash},
 *   6    2 version = 2                                     area {raw, offset, size, encryption, key_size},
 *   8    8 hdr_size (binary + JSON)                        kdf {pbkdf2 | argon2i | argon2id ...}}}
 *  16    8 seqid (bumped on every update)      tokens: {}
 *  24   48 label                               segments: {"0": {crypt, offset, size "dynamic", iv_tweak,
 *  72   32 checksum_alg ("sha256")                         encryption, sector_size}}
 * 104   64 salt                                digests: {"0": {pbkdf2, keyslots [..], segments [..], hash,
 * 168   40 uuid                                            iterations, salt, digest}}
 * 208   48 subsystem                           config: {json_size, keyslots_size}
 * 256    8 hdr_offset (0 or hdr_size)
 * 448   64 checksum: hash over hdr_size bytes with this field zeroed
 * </pre>
 * Byte counts in the JSON are decimal strings (64-bit values), small counts are JSON numbers.
 *
 * <p>Reading requires both copies to be intact and identical in sequence; a damaged copy is refused with a
 * message (cryptsetup repair restores it from the other). Members this class does not interpret (tokens,
 * flags) are kept through updates. Concurrency: see {@link LuksHeader}.
 *
 * <p>The work is split by job: {@link Luks2Copies} owns the binary copies, {@link Luks2Metadata} what the
 * JSON may say, {@link Luks2JsonTree} how an update changes it. This class keeps what ties them together:
 * where a new keyslot's area goes, and the order of an update, so that an interrupted one never leaves a
 * header naming key material that is not there: new material is written before the JSON that names it, the
 * JSON is checked in full before either copy is written, and a removed keyslot's area is wiped only once
 * neither copy names it.
 */
public final class Luks2Header extends LuksHeader {
    static final long DEFAULT_HEADER_BYTES = 16 * 1024;
    /** cryptsetup's ceiling for the keyslots area. */
    static final long MAX_KEYSLOTS_BYTES = 128L << 20;

    private final Luks2Copies copies;
    private Map<String, Object> json;
    private Luks2Metadata metadata;

    private Luks2Header(BlockDevice device, Luks2Copies copies, Map<String, Object> json, Luks2Metadata metadata) {
        super(device);
        this.copies = copies;
        this.json = json;
        this.metadata = metadata;
    }

    // ---- reading ----------------------------------------------------------------------------------------

    static Luks2Header parse(BlockDevice device, byte[] probe) throws IOException {
        String name = device.name() + ": LUKS2 header";
        Luks2Copies.Read read = Luks2Copies.read(device, probe, name);
        Map<String, Object> json = LuksJson.parseObject(read.json(), name + " JSON area at byte " + Luks2Copies.BINARY_BYTES);
        Luks2Metadata metadata = Luks2Metadata.validate(json, read.copies().hdrSize(), name);
        return new Luks2Header(device, read.copies(), json, metadata);
    }

    /**
     * The persistent activation flags cryptsetup keeps in {@code config.flags} ({@code cryptsetup open
     * --persistent --allow-discards} stores "allow-discards"); empty when the header has none.
     */
    public List<String> persistentFlags() {
        List<String> flags = new ArrayList<>();
        if (json.get("config") instanceof Map<?, ?> config && config.get("flags") instanceof List<?> list) {
            for (Object flag : list) {
                if (flag instanceof String s) {
                    flags.add(s);
                }
            }
        }
        return flags;
    }

    // ---- creation and updates --------------------------------------------------------------------------

    /**
     * Writes a new header with no keyslots (both copies, zeroed keyslots area untouched) and returns it read
     * back.
     */
    static Luks2Header create(BlockDevice device, String uuid, String label, long hdrSize, long keyslotsSize,
                              String encryption, long dataOffset, int sectorSize, LuksHash digestHash,
                              int digestIterations, byte[] digestSalt, byte[] digest, java.security.SecureRandom random)
            throws IOException {
        Map<String, Object> json = Luks2JsonTree.forNewHeader(hdrSize, keyslotsSize, encryption, dataOffset, sectorSize,
                digestHash, digestIterations, digestSalt, digest);
        Luks2Copies copies = Luks2Copies.fresh(hdrSize, uuid, label, random);
        Luks2Metadata metadata = Luks2Metadata.validate(json, hdrSize, device.name() + ": new LUKS2 header");
        Luks2Header header = new Luks2Header(device, copies, json, metadata);
        header.commit();
        return header;
    }

    /** Bumps seqid and writes both copies (primary first) with the current JSON, then flushes. */
    private void commit() throws IOException {
        String text = LuksJson.write(json);
        byte[] jsonBytes = text.getBytes(StandardCharsets.UTF_8);
        if (jsonBytes.length >= copies.jsonAreaBytes()) {
            throw new LuksHeaderException(device.name() + ": the LUKS2 metadata (" + jsonBytes.length
                    + " bytes) no longer fits the " + copies.jsonAreaBytes() + "-byte JSON area; remove a keyslot or token");
        }
        Luks2Metadata updated = Luks2Metadata.validate(json, copies.hdrSize(), device.name() + ": updated LUKS2 header");
        copies.write(device, jsonBytes);
        metadata = updated;
    }

    @Override
    public void addKeyslot(VolumeKey key, byte[] newPassphrase, Kdf kdf, int slot) throws IOException {
        checkSlotIndex(slot);
        if (metadata.slots().containsKey(slot)) {
            throw new IllegalArgumentException(device.name() + ": keyslot " + slot + " is in use; remove it first or pick a free one");
        }
        String digestId = segmentDigestId();
        if (!verifyVolumeKey(key.bytes())) {
            throw new IllegalArgumentException(device.name() + ": the given volume key is not this header's");
        }
        long size = LuksIo.roundUp(AfSplitter.splitLength(key.length(), AfSplitter.LUKS_STRIPES), Luks2Metadata.AREA_ALIGN);
        long offset = freeArea(size);
        byte[] salt = newSalt();
        Keyslot keyslot = new Keyslot(slot, kdf, salt, offset, size, metadata.encryption(), key.length(), key.length(),
                AfSplitter.LUKS_STRIPES, LuksHash.SHA256);
        writeKeyMaterial(keyslot, key.bytes(), newPassphrase);
        Luks2JsonTree.addKeyslot(json, keyslot, digestId);
        commit();
    }

    @Override
    public void removeKeyslot(int slot) throws IOException {
        checkSlotIndex(slot);
        Slot removed = metadata.slots().get(slot);
        if (removed == null) {
            throw new IllegalArgumentException(device.name() + ": keyslot " + slot + " is not active; active keyslots: "
                    + activeKeyslots());
        }
        Luks2JsonTree.removeKeyslot(json, slot);
        commit();
        LuksIo.wipeRandom(device, removed.keyslot().areaOffset(), removed.keyslot().areaLength(), random);
        device.flush();
    }

    /** The lowest 4 KiB-aligned offset in the keyslots area where {@code size} bytes touch no keyslot area. */
    private long freeArea(long size) throws LuksHeaderException {
        long candidate = 2 * copies.hdrSize();
        long end = 2 * copies.hdrSize() + metadata.keyslotsSize();
        List<Keyslot> taken = new ArrayList<>();
        for (Slot s : metadata.slots().values()) {
            taken.add(s.keyslot());
        }
        taken.sort(Comparator.comparingLong(Keyslot::areaOffset));
        for (Keyslot k : taken) {
            if (candidate + size <= k.areaOffset()) {
                break;
            }
            candidate = Math.max(candidate, LuksIo.roundUp(k.areaOffset() + k.areaLength(), Luks2Metadata.AREA_ALIGN));
        }
        if (candidate + size > end) {
            throw new LuksHeaderException(device.name() + ": the keyslots area has no room for another " + size
                    + "-byte keyslot; remove a keyslot first");
        }
        return candidate;
    }

    private String segmentDigestId() throws LuksHeaderException {
        for (Map.Entry<String, VolumeDigest> d : metadata.digests().entrySet()) {
            if (d.getValue().segments().contains(metadata.segmentId())) {
                return d.getKey();
            }
        }
        throw new LuksHeaderException(device.name() + ": no digest covers the data segment; the header cannot verify a volume key");
    }

    // ---- queries ---------------------------------------------------------------------------------------

    @Override
    public int version() {
        return 2;
    }

    @Override
    public String uuid() {
        return copies.uuid();
    }

    /** The header's label (empty if none). */
    public String label() {
        return copies.label();
    }

    /** The update counter, bumped by every metadata write. */
    public long seqid() {
        return copies.seqid();
    }

    /** Bytes of one header copy (binary header plus JSON area). */
    public long headerCopyBytes() {
        return copies.hdrSize();
    }

    /** The data segment's length in bytes, or -1 when it extends to the end of the device ("dynamic"). */
    public long payloadBytes() {
        return metadata.segmentSize();
    }

    @Override
    public String cipherSpec() {
        return metadata.encryption();
    }

    @Override
    public Kdf benchmarkKdf() {
        return KdfBenchmark.argon2idDefault();
    }

    @Override
    public int volumeKeyBytes() {
        for (Slot slot : metadata.slots().values()) {
            if (slot.digestId() != null) {
                return slot.keyslot().keyBytes();
            }
        }
        return -1;
    }

    @Override
    public long payloadOffsetSectors() {
        return metadata.segmentOffset() / LuksIo.SECTOR;
    }

    @Override
    public int sectorSize() {
        return metadata.sectorSize();
    }

    @Override
    public long headerAreaBytes() {
        return 2 * copies.hdrSize() + metadata.keyslotsSize();
    }

    @Override
    public int keyslotLimit() {
        return Luks2Metadata.KEYSLOTS;
    }

    @Override
    public List<Integer> activeKeyslots() {
        List<Integer> active = new ArrayList<>(metadata.slots().keySet());
        active.sort(null);
        return active;
    }

    @Override
    Keyslot keyslot(int slot) {
        return metadata.slots().get(slot).keyslot();
    }

    /** High-priority keyslots first, then normal ones; priority 0 ("ignore") and unbound keyslots never. */
    @Override
    List<Integer> unlockOrder() {
        List<Integer> order = new ArrayList<>();
        for (int priority = 2; priority >= 1; priority--) {
            for (int slot : activeKeyslots()) {
                Slot s = metadata.slots().get(slot);
                if (s.priority() == priority && s.digestId() != null) {
                    order.add(slot);
                }
            }
        }
        return order;
    }

    @Override
    boolean verifyVolumeKey(byte[] candidate, int slot) {
        String digestId = metadata.slots().get(slot).digestId();
        return digestId != null && matches(metadata.digests().get(digestId), candidate);
    }

    @Override
    public boolean verifyVolumeKey(byte[] key) {
        for (VolumeDigest digest : metadata.digests().values()) {
            if (digest.segments().contains(metadata.segmentId()) && matches(digest, key)) {
                return true;
            }
        }
        return false;
    }

    private static boolean matches(VolumeDigest digest, byte[] key) {
        byte[] computed = digest.hash().pbkdf2(key, digest.salt(), digest.iterations(), digest.digest().length);
        try {
            return MessageDigest.isEqual(computed, digest.digest());
        } finally {
            Arrays.fill(computed, (byte) 0);
        }
    }

    @Override
    public String dump() {
        StringBuilder out = new StringBuilder(4096);
        out.append("LUKS header information\n");
        out.append("Version:       \t2\n");
        out.append("Epoch:         \t").append(seqid()).append('\n');
        out.append("Metadata area: \t").append(copies.hdrSize()).append(" [bytes]\n");
        out.append("Keyslots area: \t").append(metadata.keyslotsSize()).append(" [bytes]\n");
        out.append("UUID:          \t").append(uuid()).append('\n');
        out.append("Label:         \t").append(label().isEmpty() ? "(no label)" : label()).append('\n');
        String subsystem = copies.subsystem();
        out.append("Subsystem:     \t").append(subsystem.isEmpty() ? "(no subsystem)" : subsystem).append("\n\n");
        out.append("Data segments:\n");
        out.append("  ").append(metadata.segmentId()).append(": crypt\n");
        out.append("\toffset: ").append(metadata.segmentOffset()).append(" [bytes]\n");
        out.append("\tlength: ").append(metadata.segmentSize() < 0 ? "(whole device)" : metadata.segmentSize() + " [bytes]")
                .append('\n');
        out.append("\tcipher: ").append(metadata.encryption()).append('\n');
        out.append("\tsector: ").append(metadata.sectorSize()).append(" [bytes]\n\n");
        out.append("Keyslots:\n");
        for (int index : activeKeyslots()) {
            Slot slot = metadata.slots().get(index);
            Keyslot k = slot.keyslot();
            out.append("  ").append(index).append(": luks2\n");
            out.append("\tKey:        ").append(k.keyBytes() * 8).append(" bits\n");
            out.append("\tPriority:   ").append(slot.priority() == 0 ? "ignored" : slot.priority() == 2 ? "prefer" : "normal")
                    .append('\n');
            out.append("\tCipher:     ").append(k.areaCipher()).append('\n');
            out.append("\tCipher key: ").append(k.areaKeyBytes() * 8).append(" bits\n");
            out.append("\tPBKDF:      ").append(k.kdf().describe()).append('\n');
            out.append("\tSalt:       ").append(LuksIo.hex(k.salt())).append('\n');
            out.append("\tAF stripes: ").append(k.stripes()).append('\n');
            out.append("\tAF hash:    ").append(k.afHash().luksName()).append('\n');
            out.append("\tArea offset:").append(k.areaOffset()).append(" [bytes]\n");
            out.append("\tArea length:").append(k.areaLength()).append(" [bytes]\n");
            out.append("\tDigest ID:  ").append(slot.digestId() == null ? "(none: unbound)" : slot.digestId()).append('\n');
        }
        out.append("Digests:\n");
        for (Map.Entry<String, VolumeDigest> e : metadata.digests().entrySet()) {
            VolumeDigest d = e.getValue();
            out.append("  ").append(e.getKey()).append(": pbkdf2\n");
            out.append("\tHash:       ").append(d.hash().luksName()).append('\n');
            out.append("\tIterations: ").append(d.iterations()).append('\n');
            out.append("\tSalt:       ").append(LuksIo.hex(d.salt())).append('\n');
            out.append("\tDigest:     ").append(LuksIo.hex(d.digest())).append('\n');
        }
        return out.toString();
    }
}
