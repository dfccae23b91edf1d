package io.stripestack.raid5;

import io.stripestack.blockdev.Geometry;

/**
 * Where every byte of the array lives: the member count, chunk, data offset and md layout, and the
 * arithmetic that turns an array offset into a stripe row, a member and a byte on that member.
 *
 * <p>Array byte {@code x} lies in row {@code x / rowBytes}, data chunk {@code (x % rowBytes) / chunk} of
 * that row; the row's chunks sit at member byte {@link #memberOffset(long) dataOffset + row * chunk} on
 * the members the {@link Raid5Layout} names. Immutable, so any thread may use it, and two geometries
 * (an old and a new one) could describe one array side by side.
 */
final class StripeGeometry {
    /** md's row limit here: one row must fit a direct buffer of the stripe cache. */
    private static final long MAX_ROW_BYTES = 1L << 30;
    /** The largest request the array advertises (rounded down to whole rows). */
    private static final int MAX_TRANSFER_BYTES = 16 << 20;

    final int members;
    final int dataDisks;
    /** Chunk bytes, a power of two. */
    final int chunk;
    final int chunkShift;
    final int blocksPerChunk;
    /** Data bytes of one row: {@code chunk x dataDisks}. */
    final int rowBytes;
    /** Rows of the array (member data-area bytes in use / chunk). */
    final long rows;
    /** Array bytes. */
    final long size;
    /** Bytes before the data area on every member. */
    final long dataOffset;
    final Raid5Layout layout;

    private StripeGeometry(int members, int chunk, long memberSectors, long dataOffsetSectors, Raid5Layout layout) {
        this.members = members;
        this.dataDisks = members - 1;
        this.chunk = chunk;
        this.chunkShift = Integer.numberOfTrailingZeros(chunk);
        this.blocksPerChunk = chunk / StripeCache.BLOCK;
        this.rowBytes = chunk * dataDisks;
        this.rows = memberSectors * 512 / chunk;
        this.size = rows * rowBytes;
        this.dataOffset = dataOffsetSectors * 512;
        this.layout = layout;
    }

    /** The geometry a superblock describes; refuses rows larger than {@value #MAX_ROW_BYTES} bytes. */
    static StripeGeometry of(Md1Superblock sb) {
        if ((long) sb.chunkSectors * 512 * sb.raidDisks > MAX_ROW_BYTES) {
            throw new IllegalArgumentException(sb.setName + ": chunk " + sb.chunkSectors * 512L
                    + " bytes x " + sb.raidDisks + " members exceeds the 1 GiB row this engine supports; "
                    + "use a smaller chunk");
        }
        return new StripeGeometry(sb.raidDisks, sb.chunkSectors * 512, sb.sizeSectors, sb.dataOffsetSectors,
                Raid5Layout.fromMdNumber(sb.layout));
    }

    /** The I/O hints of the array: chunk, row, aligned at 0, whole rows up to 16 MiB per request. */
    Geometry ioHints() {
        int maxTransfer = (int) Math.min(Integer.MAX_VALUE / 2 / rowBytes * (long) rowBytes,
                Math.max(1, MAX_TRANSFER_BYTES / rowBytes) * (long) rowBytes);
        return new Geometry(chunk, rowBytes, 0, maxTransfer);
    }

    /** Member byte where row {@code row}'s chunks start (on every member). */
    long memberOffset(long row) {
        return dataOffset + row * chunk;
    }

    /** Member sectors (512 bytes) covered by {@code rowCount} rows: the unit of md's sync positions. */
    long sectors(long rowCount) {
        return rowCount * (chunk / 512);
    }

    int parityMember(long row) {
        return layout.parityMember(row, members);
    }

    /** The member holding data chunk {@code dataIndex} of {@code row}. */
    int dataMember(long row, int dataIndex) {
        return layout.dataMember(row, dataIndex, members);
    }

    /** The data chunk index {@code member} holds in {@code row}, or -1 for the parity member. */
    int dataIndexOf(long row, int member) {
        return layout.dataIndexOf(row, member, members);
    }

    /** The smallest device that can be a member or spare: data offset + used member size, in bytes. */
    long memberBytes() {
        return dataOffset + rows * chunk;
    }

    /**
     * Points {@code cursor} at the array range {@code [offset, offset + length)} of this geometry; each
     * {@link Pieces#next()} then moves it to the next piece of the range that lies in one chunk.
     */
    Pieces pieces(Pieces cursor, long offset, long length) {
        cursor.geo = this;
        cursor.start = offset;
        cursor.next = offset;
        cursor.end = offset + length;
        return cursor;
    }

    /**
     * A reusable cursor over the pieces of an array range, one chunk's part at a time, in array order:
     * the request's chunk walk written once, without an object per piece. Not thread-safe: each thread
     * owns its own (a {@link CallerContext}'s, or a per-thread scratch).
     */
    static final class Pieces {
        private StripeGeometry geo;
        private long start;
        private long next;
        private long end;
        /** The current piece's array offset. */
        long offset;
        /** Its row. */
        long row;
        /** Its data chunk index in the row (not the member: see {@link StripeGeometry#dataMember}). */
        int index;
        /** Its byte within the chunk, hence on the member after {@link StripeGeometry#memberOffset}. */
        int inChunk;
        /** Its bytes. */
        int length;
        /** Bytes of the range before it: its index in the caller's buffer, relative to the range start. */
        int done;

        /** Moves to the next piece; false when the range is exhausted. */
        boolean next() {
            if (next >= end) {
                return false;
            }
            offset = next;
            done = (int) (offset - start);
            long chunkNo = offset >>> geo.chunkShift;
            inChunk = (int) (offset & (geo.chunk - 1));
            length = (int) Math.min(end - offset, geo.chunk - inChunk);
            row = chunkNo / geo.dataDisks;
            index = (int) (chunkNo - row * geo.dataDisks);
            next = offset + length;
            return true;
        }
    }
}
