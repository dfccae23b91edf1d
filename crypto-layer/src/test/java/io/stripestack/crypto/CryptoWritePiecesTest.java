package io.stripestack.crypto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.ForwardingBlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Long writes go down in pieces of whole optimal I/Os (RAID-5 rows) of the device below, not in fixed 4 MiB
 * pieces that turn the rows they cut into partial-row writes.
 */
class CryptoWritePiecesTest {
    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;

    /** Records every write that reaches it: {offset, length}. */
    static final class RecordingDevice extends ForwardingBlockDevice {
        final List<long[]> writes = new ArrayList<>();

        RecordingDevice(int size, Geometry geometry) {
            super(new StripedTestDevice(size, 512, geometry));
        }

        @Override public String name() { return "recording"; }
        @Override public synchronized void write(long offset, ByteBuffer src) throws IOException {
            writes.add(new long[] {offset, src.remaining()});
            below.write(offset, src);
        }
    }

    private static CryptoBlockDevice crypt(BlockDevice below, long offsetSectors) {
        byte[] key = new byte[64];
        new Random(1).nextBytes(key);
        return new CryptoBlockDevice("c", below, SectorCipher.create(CryptSpec.parse("aes-xts-plain64"), key, 512, false),
                offsetSectors, 0, false);
    }

    /** Writes {@code length} bytes at {@code offset} and returns the pieces that went below; checks the data. */
    private static List<long[]> write(RecordingDevice below, CryptoBlockDevice crypt, long offset, int length)
            throws IOException {
        byte[] data = new byte[length];
        new Random(length).nextBytes(data);
        below.writes.clear();
        crypt.write(offset, ByteBuffer.wrap(data));
        List<long[]> pieces = new ArrayList<>(below.writes);
        ByteBuffer back = ByteBuffer.allocate(length);
        crypt.read(offset, back);
        assertArrayEquals(data, back.array());
        long at = crypt.offsetSectors() * 512 + offset;
        long total = 0;
        for (long[] p : pieces) {
            assertEquals(at, p[0], "pieces are contiguous");
            at += p[1];
            total += p[1];
        }
        assertEquals(length, total);
        return pieces;
    }

    private static String describe(List<long[]> pieces) {
        StringBuilder s = new StringBuilder();
        for (long[] p : pieces) {
            s.append(' ').append(p[0] / KIB).append("K+").append(p[1] / KIB).append('K');
        }
        return s.toString();
    }

    @Test
    void piecesAreWholeRowsOfTheArrayBelow() throws Exception {
        // 4 members x 512 KiB chunks: 1.5 MiB rows; 4 members x 64 KiB: 192 KiB rows.
        for (int[] g : new int[][] {{512 * KIB, 3 * 512 * KIB}, {64 * KIB, 3 * 64 * KIB}}) {
            int row = g[1];
            RecordingDevice below = new RecordingDevice(40 * MIB, new Geometry(g[0], row, 0, 0));
            CryptoBlockDevice crypt = crypt(below, row / 512);           // payload aligned to a row
            int expected = 4 * MIB / row * row;
            assertEquals(expected, crypt.maxPieceBytes());
            List<long[]> pieces = write(below, crypt, 0, 8 * row + 2 * expected);
            assertTrue(pieces.size() > 1, describe(pieces));
            for (long[] p : pieces) {
                assertEquals(0, p[0] % row, "piece starts on a row below:" + describe(pieces));
                assertEquals(0, p[1] % row, "piece is whole rows (" + row + " bytes):" + describe(pieces));
                assertTrue(p[1] <= 4 * MIB, describe(pieces));
            }
            // A write that starts inside a row: the first piece ends on a row boundary, the others are whole rows.
            pieces = write(below, crypt, 64 * KIB, 3 * expected);
            for (int i = 0; i < pieces.size() - 1; i++) {
                long end = pieces.get(i)[0] + pieces.get(i)[1];
                assertEquals(0, end % row, "pieces end on row boundaries below:" + describe(pieces));
                assertTrue(pieces.get(i)[1] <= expected, describe(pieces));
            }
            crypt.close();
        }
    }

    @Test
    void aMisalignedPayloadStillCutsOnRowsBelow() throws Exception {
        int row = 3 * 64 * KIB;
        RecordingDevice below = new RecordingDevice(40 * MIB, new Geometry(64 * KIB, row, 0, 0));
        CryptoBlockDevice crypt = crypt(below, 162);                    // 81 KiB: misaligned
        List<long[]> pieces = write(below, crypt, 0, 12 * MIB);
        for (int i = 0; i < pieces.size() - 1; i++) {
            long end = pieces.get(i)[0] + pieces.get(i)[1];
            assertEquals(0, end % row, "pieces end on row boundaries below:" + describe(pieces));
        }
        crypt.close();
    }

    @Test
    void theBoundIsOneOptimalIoWhenThatIsLarger() throws Exception {
        int row = 5 * MIB;                                              // e.g. 6 members x 1 MiB chunks
        RecordingDevice below = new RecordingDevice(32 * MIB, new Geometry(MIB, row, 0, 0));
        CryptoBlockDevice crypt = crypt(below, 0);
        assertEquals(row, crypt.maxPieceBytes());
        for (long[] p : write(below, crypt, 0, 4 * row)) {
            assertEquals(row, p[1], "one row per piece");
        }
        crypt.close();
    }

    @Test
    void withoutAStripeBelowThePiecesStay4Mib() throws Exception {
        RecordingDevice below = new RecordingDevice(24 * MIB, Geometry.simple(512));
        CryptoBlockDevice crypt = crypt(below, 0);
        assertEquals(4 * MIB, crypt.maxPieceBytes());
        List<long[]> pieces = write(below, crypt, 0, 10 * MIB);
        assertEquals(List.of(4L * MIB, 4L * MIB, 2L * MIB), pieces.stream().map(p -> p[1]).toList());
        crypt.close();
    }
}
