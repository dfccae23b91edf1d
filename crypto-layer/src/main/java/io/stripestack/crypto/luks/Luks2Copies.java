package io.stripestack.crypto.luks;


import io.stripestack.blockdev.BlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import org.bouncycastle.crypto.Digest;

/**
 * The two binary copies of a LUKS2 header on the device (layout: {@link Luks2Header}): finding, reading and
 * checking them, and writing both with fresh checksums. It owns every byte offset of the 4096-byte binary
 * header, so the rest of the LUKS2 code deals only in JSON; it holds the two binary headers between reads
 * and commits because their salts and the checksum algorithm must survive every update unchanged, as
 * cryptsetup keeps them. What the JSON says is Luks2Metadata's business, never this class's.
 */
final class Luks2Copies {
    static final byte[] SECONDARY_MAGIC = {'S', 'K', 'U', 'L', (byte) 0xba, (byte) 0xbe};
    static final int BINARY_BYTES = 4096;

    private static final int VERSION = 6;
    private static final int HDR_SIZE = 8;
    private static final int SEQID = 16;
    private static final int LABEL = 24;
    private static final int CHECKSUM_ALG = 72;
    private static final int SALT = 104;
    private static final int UUID = 168;
    private static final int SUBSYSTEM = 208;
    private static final int HDR_OFFSET = 256;
    private static final int CHECKSUM = 448;
    private static final int CHECKSUM_BYTES = 64;

    private final long hdrSize;
    private final byte[] primaryBinary;
    private final byte[] secondaryBinary;

    /** Both copies as read, and the JSON text they carry (not yet parsed). */
    record Read(Luks2Copies copies, String json) {
    }

    private Luks2Copies(long hdrSize, byte[] primaryBinary, byte[] secondaryBinary) {
        this.hdrSize = hdrSize;
        this.primaryBinary = primaryBinary;
        this.secondaryBinary = secondaryBinary;
    }

    /**
     * Reads both copies and refuses them unless each is intact and both agree in seqid, UUID and JSON: a
     * mismatch means an interrupted update, which cryptsetup repair resolves better than a guess here.
     *
     * @param probe the device's first bytes (at least the binary header's first 16)
     */
    static Read read(BlockDevice device, byte[] probe, String name) throws IOException {
        long hdrSize = ByteBuffer.wrap(probe).getLong(HDR_SIZE);
        if (!validHeaderSize(hdrSize)) {
            throw corrupt(name, "primary copy gives header size " + hdrSize + ", not a power of two from 16 KiB to 4 MiB");
        }
        byte[] primary = readCopy(device, 0, hdrSize, LuksHeader.MAGIC, name + " primary copy");
        byte[] secondary = readCopy(device, hdrSize, hdrSize, SECONDARY_MAGIC, name + " secondary copy");
        ByteBuffer p = ByteBuffer.wrap(primary);
        ByteBuffer s = ByteBuffer.wrap(secondary);
        if (p.getLong(SEQID) != s.getLong(SEQID)) {
            throw corrupt(name, "the primary copy (seqid " + p.getLong(SEQID) + ") and the secondary copy (seqid "
                    + s.getLong(SEQID) + ") differ, an interrupted update; run cryptsetup repair " + device.name());
        }
        if (!Arrays.equals(primary, UUID, UUID + 40, secondary, UUID, UUID + 40)
                || !Arrays.equals(primary, BINARY_BYTES, (int) hdrSize, secondary, BINARY_BYTES, (int) hdrSize)) {
            throw corrupt(name, "the primary and secondary copies carry different UUIDs or metadata at the same seqid");
        }
        int jsonEnd = BINARY_BYTES;
        while (jsonEnd < hdrSize && primary[jsonEnd] != 0) {
            jsonEnd++;
        }
        if (jsonEnd == hdrSize) {
            throw corrupt(name, "the JSON area is not NUL-terminated");
        }
        return new Read(new Luks2Copies(hdrSize, Arrays.copyOf(primary, BINARY_BYTES), Arrays.copyOf(secondary, BINARY_BYTES)),
                new String(primary, BINARY_BYTES, jsonEnd - BINARY_BYTES, StandardCharsets.UTF_8));
    }

    /**
     * Binary headers for a new header at seqid 0, not yet on the device: {@link #write} puts them there with
     * the first JSON.
     */
    static Luks2Copies fresh(long hdrSize, String uuid, String label, SecureRandom random) {
        byte[][] binaries = new byte[2][];
        for (int copy = 0; copy < 2; copy++) {
            byte[] binary = new byte[BINARY_BYTES];
            ByteBuffer view = ByteBuffer.wrap(binary);
            view.put(0, copy == 0 ? LuksHeader.MAGIC : SECONDARY_MAGIC);
            view.putShort(VERSION, (short) 2);
            view.putLong(HDR_SIZE, hdrSize);
            view.putLong(SEQID, 0);
            LuksIo.putCString(binary, LABEL, 48, label == null ? "" : label);
            LuksIo.putCString(binary, CHECKSUM_ALG, 32, LuksHash.SHA256.luksName());
            byte[] salt = new byte[64];
            random.nextBytes(salt);
            view.put(SALT, salt);
            LuksIo.putCString(binary, UUID, 40, uuid);
            view.putLong(HDR_OFFSET, copy == 0 ? 0 : hdrSize);
            binaries[copy] = binary;
        }
        return new Luks2Copies(hdrSize, binaries[0], binaries[1]);
    }

    /** Bumps seqid and writes both copies (primary first) with {@code jsonBytes} as their JSON, then flushes. */
    void write(BlockDevice device, byte[] jsonBytes) throws IOException {
        long seqid = ByteBuffer.wrap(primaryBinary).getLong(SEQID) + 1;
        for (byte[] binary : new byte[][] {primaryBinary, secondaryBinary}) {
            ByteBuffer.wrap(binary).putLong(SEQID, seqid);
            byte[] copy = new byte[(int) hdrSize];
            System.arraycopy(binary, 0, copy, 0, BINARY_BYTES);
            Arrays.fill(copy, CHECKSUM, CHECKSUM + CHECKSUM_BYTES, (byte) 0);
            System.arraycopy(jsonBytes, 0, copy, BINARY_BYTES, jsonBytes.length);
            byte[] sum = checksum(copy, LuksHash.forName(LuksIo.cString(binary, CHECKSUM_ALG, 32)));
            System.arraycopy(sum, 0, copy, CHECKSUM, sum.length);
            System.arraycopy(copy, 0, binary, 0, BINARY_BYTES);
            LuksIo.write(device, ByteBuffer.wrap(binary).getLong(HDR_OFFSET), copy);
        }
        device.flush();
    }

    /** Bytes of one copy (binary header plus JSON area). */
    long hdrSize() {
        return hdrSize;
    }

    /** Room for the JSON text and its terminating NUL. */
    long jsonAreaBytes() {
        return hdrSize - BINARY_BYTES;
    }

    long seqid() {
        return ByteBuffer.wrap(primaryBinary).getLong(SEQID);
    }

    String uuid() {
        return LuksIo.cString(primaryBinary, UUID, 40);
    }

    String label() {
        return LuksIo.cString(primaryBinary, LABEL, 48);
    }

    String subsystem() {
        return LuksIo.cString(primaryBinary, SUBSYSTEM, 48);
    }

    /** The offset of a secondary copy's magic at one of the places LUKS2 allows (16 KiB to 4 MiB), or -1. */
    static long findSecondaryCopy(BlockDevice device) throws IOException {
        for (long offset = 16 * 1024; offset <= 4L * 1024 * 1024; offset *= 2) {
            if (offset + BINARY_BYTES > device.size()) {
                break;
            }
            byte[] magic = LuksIo.read(device, offset, SECONDARY_MAGIC.length);
            if (Arrays.equals(magic, SECONDARY_MAGIC)) {
                return offset;
            }
        }
        return -1;
    }

    private static boolean validHeaderSize(long size) {
        return size >= 16 * 1024 && size <= 4L * 1024 * 1024 && Long.bitCount(size) == 1;
    }

    private static byte[] readCopy(BlockDevice device, long offset, long hdrSize, byte[] magic, String name)
            throws IOException {
        if (offset + hdrSize > device.size()) {
            throw corrupt(name, "it would end at byte " + (offset + hdrSize) + " beyond the device's " + device.size() + " bytes");
        }
        byte[] copy = LuksIo.read(device, offset, (int) hdrSize);
        ByteBuffer view = ByteBuffer.wrap(copy);
        if (!Arrays.equals(copy, 0, magic.length, magic, 0, magic.length)) {
            throw corrupt(name, "bad magic at byte " + offset);
        }
        if (view.getShort(VERSION) != 2) {
            throw corrupt(name, "version " + view.getShort(VERSION) + " instead of 2");
        }
        if (view.getLong(HDR_SIZE) != hdrSize) {
            throw corrupt(name, "header size " + view.getLong(HDR_SIZE) + " differs from the primary copy's " + hdrSize);
        }
        if (view.getLong(HDR_OFFSET) != offset) {
            throw corrupt(name, "it says it lies at byte " + view.getLong(HDR_OFFSET) + ", found at byte " + offset);
        }
        for (int field : new int[] {LABEL, SUBSYSTEM}) {
            if (!LuksIo.isCleanCString(copy, field, 48)) {
                throw corrupt(name, "label or subsystem is not a NUL-terminated text string");
            }
        }
        if (!LuksIo.isCleanCString(copy, CHECKSUM_ALG, 32) || !LuksIo.isCleanCString(copy, UUID, 40)) {
            throw corrupt(name, "checksum algorithm or UUID field is not a text string");
        }
        LuksHash alg;
        try {
            alg = LuksHash.forName(LuksIo.cString(copy, CHECKSUM_ALG, 32));
        } catch (IllegalArgumentException e) {
            throw corrupt(name, "unsupported checksum algorithm (" + e.getMessage() + ")");
        }
        byte[] expected = checksum(copy, alg);
        if (!MessageDigest.isEqual(expected, Arrays.copyOfRange(copy, CHECKSUM, CHECKSUM + expected.length))) {
            throw corrupt(name, "checksum mismatch (" + alg.luksName() + " over " + hdrSize + " bytes at byte " + offset + ")");
        }
        return copy;
    }

    /** The copy's checksum: {@code alg} over the whole copy with the checksum field read as zeros. */
    private static byte[] checksum(byte[] copy, LuksHash alg) {
        Digest digest = alg.newDigest();
        digest.update(copy, 0, CHECKSUM);
        digest.update(new byte[CHECKSUM_BYTES], 0, CHECKSUM_BYTES);
        digest.update(copy, CHECKSUM + CHECKSUM_BYTES, copy.length - CHECKSUM - CHECKSUM_BYTES);
        byte[] out = new byte[alg.length()];
        digest.doFinal(out, 0);
        return out;
    }

    /** The refusal every check of the binary copies and the JSON ends in, with the way out. */
    static LuksHeaderException corrupt(String name, String what) {
        return new LuksHeaderException(name + " is corrupt: " + what
                + "; restore it from a header backup (cryptsetup luksHeaderRestore) or try cryptsetup repair");
    }
}
