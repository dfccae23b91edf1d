package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The chunk walk of {@link StripeGeometry.Pieces}: every piece's row, chunk, in-chunk byte, length and place. */
class StripeGeometryPiecesTest {
    private static final int CHUNK = 4096;
    /** Four members: three data chunks a row. */
    private static final int ROW = 3 * CHUNK;

    private static StripeGeometry geometry() {
        Md1Superblock sb = new Md1Superblock();
        sb.setName = "host:pieces";
        sb.layout = Raid5Layout.LEFT_SYMMETRIC.mdNumber();
        sb.chunkSectors = CHUNK / 512;
        sb.raidDisks = 4;
        sb.sizeSectors = 64 * CHUNK / 512;
        sb.dataOffsetSectors = 2048;
        return StripeGeometry.of(sb);
    }

    private static void assertPiece(StripeGeometry.Pieces p, long row, int index, int inChunk, int length, int done) {
        assertTrue(p.next(), "a piece at done " + done);
        assertEquals(row, p.row, "row");
        assertEquals(index, p.index, "chunk index");
        assertEquals(inChunk, p.inChunk, "byte in chunk");
        assertEquals(length, p.length, "length");
        assertEquals(done, p.done, "bytes before");
    }

    @Test
    void aRangeAcrossChunkAndRowBoundariesIsCutAtEachChunkEnd() {
        StripeGeometry geo = geometry();
        long offset = ROW - CHUNK - 100;
        StripeGeometry.Pieces p = geo.pieces(new StripeGeometry.Pieces(), offset, 100 + CHUNK + CHUNK + 50);
        assertPiece(p, 0, 1, CHUNK - 100, 100, 0);
        assertEquals(offset, p.offset);
        assertPiece(p, 0, 2, 0, CHUNK, 100);
        assertPiece(p, 1, 0, 0, CHUNK, 100 + CHUNK);
        assertEquals(ROW, p.offset);
        assertPiece(p, 1, 1, 0, 50, 100 + 2 * CHUNK);
        assertFalse(p.next());
        assertFalse(p.next(), "an exhausted walk stays exhausted");
    }

    @Test
    void aRangeInsideOneChunkIsOnePiece() {
        StripeGeometry geo = geometry();
        StripeGeometry.Pieces p = geo.pieces(new StripeGeometry.Pieces(), ROW + CHUNK + 10, 20);
        assertPiece(p, 1, 1, 10, 20, 0);
        assertFalse(p.next());
        geo.pieces(p, 2L * ROW - 1, 1);
        assertPiece(p, 1, 2, CHUNK - 1, 1, 0);
        assertFalse(p.next(), "the last byte of a row is that row's");
    }

    @Test
    void wholeRowsAreWholeChunksInOrder() {
        StripeGeometry geo = geometry();
        StripeGeometry.Pieces p = geo.pieces(new StripeGeometry.Pieces(), 2L * ROW, 2 * ROW);
        for (int k = 0; k < 6; k++) {
            assertPiece(p, 2 + k / 3, k % 3, 0, CHUNK, k * CHUNK);
            assertEquals(2L * ROW + (long) k * CHUNK, p.offset);
        }
        assertFalse(p.next());
    }

    @Test
    void anEmptyRangeHasNoPiece() {
        StripeGeometry geo = geometry();
        assertFalse(geo.pieces(new StripeGeometry.Pieces(), ROW, 0).next());
    }

    /** Every byte of many ranges, walked by a reused cursor, lands where the array arithmetic says, once. */
    @Test
    void everyByteOfAnyRangeIsCoveredOnceAtItsPlace() {
        StripeGeometry geo = geometry();
        StripeGeometry.Pieces p = new StripeGeometry.Pieces();
        int[] edges = {0, 1, CHUNK - 1, CHUNK, CHUNK + 1, ROW - 1, ROW, ROW + 1, 2 * ROW - CHUNK};
        int[] lengths = {1, 2, CHUNK - 1, CHUNK, CHUNK + 1, ROW - 1, ROW, ROW + 1, 3 * ROW + 7};
        for (int offset : edges) {
            for (int length : lengths) {
                geo.pieces(p, offset, length);
                long expected = offset;
                while (p.next()) {
                    assertEquals(expected, p.offset, "pieces are contiguous");
                    assertEquals(expected - offset, p.done);
                    assertTrue(p.length > 0 && p.inChunk + p.length <= CHUNK, "a piece stays in its chunk");
                    boolean endsAtChunkEnd = p.inChunk + p.length == CHUNK;
                    boolean endsTheRange = p.offset + p.length == (long) offset + length;
                    assertTrue(endsAtChunkEnd || endsTheRange, "a piece ends at a chunk end or the range end");
                    for (long x = p.offset; x < p.offset + p.length; x++) {
                        assertEquals(x / ROW, p.row);
                        assertEquals((x % ROW) / CHUNK, p.index);
                        assertEquals(x % CHUNK, p.inChunk + (x - p.offset));
                    }
                    expected += p.length;
                }
                assertEquals((long) offset + length, expected, "the walk covers the whole range");
            }
        }
    }
}
