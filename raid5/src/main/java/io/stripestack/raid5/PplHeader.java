package io.stripestack.raid5;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * md's partial parity log header ({@code struct ppl_header} of the kernel's md_p.h, written by
 * drivers/md/raid5-ppl.c): {@value #BYTES} little-endian bytes, {@value #RESERVED} bytes of 0xff, then
 * signature, padding, generation, entries_count and checksum, then up to {@value #MAX_ENTRIES} entries of
 * {@value #ENTRY_BYTES} bytes (data_sector, pp_size, data_size, parity_disk, checksum). The partial parity
 * of the entries follows the header on the member, in entry order, {@code pp_size} bytes each.
 *
 * <p>An entry says: the data chunks {@code k .. k + data_size / pp_size - 1} of one row, from array block
 * {@code data_sector} on ({@code k} is that block's chunk index) and {@code pp_size} bytes each, were being
 * written; the row's parity over those columns is their XOR with the logged partial parity (the XOR of the
 * row's other chunks there). {@code pp_size} 0 means every data chunk was written ({@code data_size /
 * data disks} bytes each): the parity is the XOR of the data alone.
 *
 * <p>Checksums are CRC-32C (the kernel's {@code ~crc32c_le(~0, ...)}): the signature is that of the set
 * UUID, the header's is taken over all {@value #BYTES} bytes with the checksum field zero, an entry's over
 * its partial parity.
 *
 * <p>Every method takes the header as a little-endian buffer of at least {@value #BYTES} bytes and reads it
 * at absolute positions, so nothing allocates; not thread-safe: each user keeps its own buffer and CRC.
 */
final class PplHeader {
    static final int BYTES = 4096;
    static final int RESERVED = 512;
    static final int ENTRY_BYTES = 24;
    static final int MAX_ENTRIES = (BYTES - RESERVED - 4 * 4 - 8) / ENTRY_BYTES;
    private static final int OFF_SIGNATURE = RESERVED;
    private static final int OFF_GENERATION = RESERVED + 8;
    private static final int OFF_ENTRIES_COUNT = RESERVED + 16;
    private static final int OFF_CHECKSUM = RESERVED + 20;
    private static final int OFF_ENTRIES = RESERVED + 24;

    private PplHeader() {
    }

    /** The signature of a set's logs: CRC-32C of its UUID. */
    static int signature(byte[] setUuid) {
        CRC32C crc = new CRC32C();
        crc.update(setUuid);
        return (int) crc.getValue();
    }

    /** Starts a header in {@code h} (at least {@value #BYTES} bytes): reserved bytes, signature, generation, 0 entries. */
    static void begin(ByteBuffer h, int signature, long generation) {
        ByteBuffer b = h;
        for (int i = 0; i < RESERVED; i += 8) {
            b.putLong(i, -1L);
        }
        for (int i = RESERVED; i < BYTES; i += 8) {
            b.putLong(i, 0L);
        }
        b.putInt(OFF_SIGNATURE, signature);
        b.putLong(OFF_GENERATION, generation);
    }

    /** Appends an entry; returns false when the header already holds {@value #MAX_ENTRIES}. */
    static boolean addEntry(ByteBuffer h, long dataSector, int ppSize, int dataSize, int parityDisk, int ppChecksum) {
        ByteBuffer b = h;
        int count = b.getInt(OFF_ENTRIES_COUNT);
        if (count == MAX_ENTRIES) {
            return false;
        }
        int at = OFF_ENTRIES + count * ENTRY_BYTES;
        b.putLong(at, dataSector);
        b.putInt(at + 8, ppSize);
        b.putInt(at + 12, dataSize);
        b.putInt(at + 16, parityDisk);
        b.putInt(at + 20, ppChecksum);
        b.putInt(OFF_ENTRIES_COUNT, count + 1);
        return true;
    }

    /** Sets the header checksum; call after the last entry. */
    static void seal(ByteBuffer h, CRC32C crc) {
        h.putInt(OFF_CHECKSUM, 0);
        h.putInt(OFF_CHECKSUM, checksum(h, crc));
    }

    /** Whether {@code h} is a header of the set with this signature, its checksum intact. */
    static boolean isValid(ByteBuffer h, int signature, CRC32C crc) {
        if (h.getInt(OFF_SIGNATURE) != signature) {
            return false;
        }
        int stored = h.getInt(OFF_CHECKSUM);
        h.putInt(OFF_CHECKSUM, 0);
        int computed = checksum(h, crc);
        h.putInt(OFF_CHECKSUM, stored);
        int count = h.getInt(OFF_ENTRIES_COUNT);
        return stored == computed && count >= 0 && count <= MAX_ENTRIES;
    }

    private static int checksum(ByteBuffer h, CRC32C crc) {
        return ppChecksum(h, 0, BYTES, crc);
    }

    static long generation(ByteBuffer h) {
        return h.getLong(OFF_GENERATION);
    }

    static int entries(ByteBuffer h) {
        return h.getInt(OFF_ENTRIES_COUNT);
    }

    static long dataSector(ByteBuffer h, int entry) {
        return h.getLong(OFF_ENTRIES + entry * ENTRY_BYTES);
    }

    static int ppSize(ByteBuffer h, int entry) {
        return h.getInt(OFF_ENTRIES + entry * ENTRY_BYTES + 8);
    }

    static int dataSize(ByteBuffer h, int entry) {
        return h.getInt(OFF_ENTRIES + entry * ENTRY_BYTES + 12);
    }

    static int parityDisk(ByteBuffer h, int entry) {
        return h.getInt(OFF_ENTRIES + entry * ENTRY_BYTES + 16);
    }

    static int entryChecksum(ByteBuffer h, int entry) {
        return h.getInt(OFF_ENTRIES + entry * ENTRY_BYTES + 20);
    }

    /** CRC-32C of {@code length} bytes of {@code b} from {@code offset}: an entry's checksum. */
    static int ppChecksum(ByteBuffer b, int offset, int length, CRC32C crc) {
        int position = b.position();
        int limit = b.limit();
        crc.reset();
        b.limit(offset + length).position(offset);
        crc.update(b);
        b.limit(limit).position(position);
        return (int) crc.getValue();
    }
}
