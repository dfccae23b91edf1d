package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * md's per-member bad-block log, read only: {@code bblog_size} sectors at {@code bblog_offset} sectors from
 * the superblock, an array of little-endian 64-bit entries {@code (sector >> bblog_shift) << 10 | (length >>
 * bblog_shift)} (length 1..1023 units), ended by the first entry of all ones (mdadm initialises the area
 * with 0xff). This is how the kernel's {@code super_1_load} reads it; it sets feature_map bit 3
 * ({@link Md1Superblock#FEATURE_BAD_BLOCKS}) exactly while the log holds entries.
 *
 * <p>The engine never records bad blocks and does not honour recorded ones (see docs/raid5.md): the
 * assembler uses this class only to tell an empty log from one with entries. Stateless.
 */
final class MdBadBlockLog {
    /** One recorded bad range, in 512-byte sectors of the member (from the start of the member). */
    record Entry(long sector, long sectors) {
        @Override
        public String toString() {
            return sector + "+" + sectors;
        }
    }

    private MdBadBlockLog() {
    }

    /** Byte offset of the log in the member. */
    static long memberOffset(Md1Superblock sb) {
        return (sb.superOffsetSectors + sb.bblogOffset) * 512L;
    }

    /**
     * Why the log of {@code sb} cannot be where it claims to be (null when it can): it must lie between
     * the 4 KiB superblock block and the data offset, like every metadata-1.2 log mdadm places.
     */
    static String placementProblem(Md1Superblock sb) {
        long start = sb.superOffsetSectors + sb.bblogOffset;
        long end = start + sb.bblogSize;
        if (start < sb.superOffsetSectors + Md1Superblock.BLOCK_BYTES / 512 || end > sb.dataOffsetSectors) {
            return "its bad-block log (" + sb.bblogSize + " sectors at " + sb.bblogOffset
                    + " sectors from the superblock) does not lie between the superblock and the data offset ("
                    + sb.dataOffsetSectors + " sectors)";
        }
        return null;
    }

    /**
     * Reads the log of the member whose superblock is {@code sb}.
     *
     * @throws IOException when it cannot be read or does not lie where a log can be
     */
    static List<Entry> read(BlockDevice member, Md1Superblock sb) throws IOException {
        String misplaced = placementProblem(sb);
        if (misplaced != null) {
            throw new IOException(misplaced);
        }
        ByteBuffer area = ByteBuffer.allocate(sb.bblogSize * 512);
        member.read(memberOffset(sb), area);
        return parse(area.flip(), sb.bblogShift);
    }

    /** The entries of a log area, up to the first all-ones entry. */
    static List<Entry> parse(ByteBuffer area, int shift) {
        ByteBuffer b = area.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        List<Entry> entries = new ArrayList<>();
        for (int i = b.position(); i + 8 <= b.limit(); i += 8) {
            long bb = b.getLong(i);
            if (bb == -1L) {
                break;
            }
            entries.add(new Entry((bb >>> 10) << shift, (bb & 0x3ff) << shift));
        }
        return entries;
    }
}
