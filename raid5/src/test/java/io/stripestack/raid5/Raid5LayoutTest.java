package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Data placement against md's published layout pictures and against an independent reference model
 * that places chunks by walking the member ring, byte by byte through real member devices.
 */
class Raid5LayoutTest {

    /** md's four layouts on 4 disks, rows 0..3, as drawn in the md documentation: chunk number or P. */
    private static final String[][] PICTURES = {
        // left-asymmetric
        {"0 1 2 P", "3 4 P 5", "6 P 7 8", "P 9 10 11"},
        // right-asymmetric
        {"P 0 1 2", "3 P 4 5", "6 7 P 8", "9 10 11 P"},
        // left-symmetric
        {"0 1 2 P", "4 5 P 3", "8 P 6 7", "P 9 10 11"},
        // right-symmetric
        {"P 0 1 2", "5 P 3 4", "7 8 P 6", "9 10 11 P"},
    };

    @ParameterizedTest
    @EnumSource(Raid5Layout.class)
    void matchesMdPicturesForFourDisks(Raid5Layout layout) {
        String[] picture = PICTURES[layout.mdNumber()];
        for (int rowInCycle = 0; rowInCycle < 8; rowInCycle++) {
            String[] cells = picture[rowInCycle % 4].split(" ");
            long row = rowInCycle;
            for (int member = 0; member < 4; member++) {
                if (cells[member].equals("P")) {
                    assertEquals(member, layout.parityMember(row, 4), layout + " row " + row);
                    assertEquals(-1, layout.dataIndexOf(row, member, 4));
                } else {
                    long chunkNo = Integer.parseInt(cells[member]) + (rowInCycle / 4) * 12L;
                    int dataIndex = (int) (chunkNo % 3);
                    assertEquals(member, layout.dataMember(row, dataIndex, 4), layout + " row " + row + " chunk " + chunkNo);
                    assertEquals(dataIndex, layout.dataIndexOf(row, member, 4));
                }
            }
        }
    }

    /**
     * Reference: parity moves one member per row (left: starting at the last member going down; right:
     * starting at the first going up). Asymmetric layouts fill the remaining members left to right;
     * symmetric ones start right after parity and wrap around the ring.
     */
    static int[] referenceRow(Raid5Layout layout, long row, int n) {
        boolean left = layout == Raid5Layout.LEFT_ASYMMETRIC || layout == Raid5Layout.LEFT_SYMMETRIC;
        boolean symmetric = layout == Raid5Layout.LEFT_SYMMETRIC || layout == Raid5Layout.RIGHT_SYMMETRIC;
        int parity = left ? n - 1 : 0;
        for (long r = 0; r < row % n; r++) {
            parity = left ? (parity + n - 1) % n : (parity + 1) % n;
        }
        int[] memberOfData = new int[n - 1];
        List<Integer> order = new ArrayList<>();
        if (symmetric) {
            for (int step = 1; step < n; step++) {
                order.add((parity + step) % n);
            }
        } else {
            for (int m = 0; m < n; m++) {
                if (m != parity) {
                    order.add(m);
                }
            }
        }
        for (int i = 0; i < n - 1; i++) {
            memberOfData[i] = order.get(i);
        }
        return memberOfData;
    }

    @Test
    void everyLayoutMatchesTheReferenceForManySizes() {
        for (Raid5Layout layout : Raid5Layout.values()) {
            for (int n = 3; n <= 9; n++) {
                for (long row = 0; row < 3L * n + 2; row++) {
                    int[] expected = referenceRow(layout, row, n);
                    for (int i = 0; i < n - 1; i++) {
                        assertEquals(expected[i], layout.dataMember(row, i, n), layout + " n=" + n + " row=" + row);
                    }
                }
            }
        }
    }

    /** Writes through the array and finds every byte on the member and offset the reference predicts. */
    @ParameterizedTest
    @EnumSource(Raid5Layout.class)
    void bytesLandWhereMdPutsThem(Raid5Layout layout) throws Exception {
        int[][] shapes = {{3, 4096}, {4, 8192}, {5, 16384}, {6, 4096}};
        for (int[] shape : shapes) {
            int n = shape[0];
            int chunk = shape[1];
            long dataOffsetSectors = 16;
            int rows = 2 * n + 1;
            List<BlockDevice> members = new ArrayList<>();
            for (int m = 0; m < n; m++) {
                members.add(new MemoryBlockDevice("m" + m, (int) (dataOffsetSectors * 512) + rows * chunk, 512));
            }
            Raid5Config config = new Raid5Config("layout", chunk, layout, dataOffsetSectors);
            try (Raid5Array array = Raid5Array.create(members, config, Raid5Options.defaults(), true)) {
                assertEquals((long) rows * (n - 1) * chunk, array.size());
                byte[] data = new byte[(int) array.size()];
                new Random(n * 31L + chunk).nextBytes(data);
                array.write(0, ByteBuffer.wrap(data));
                for (long row = 0; row < rows; row++) {
                    int[] memberOf = referenceRow(layout, row, n);
                    byte[] parity = new byte[chunk];
                    for (int i = 0; i < n - 1; i++) {
                        byte[] onMember = new byte[chunk];
                        members.get(memberOf[i]).read(dataOffsetSectors * 512 + row * chunk, ByteBuffer.wrap(onMember));
                        int arrayOffset = (int) ((row * (n - 1) + i) * chunk);
                        byte[] expected = java.util.Arrays.copyOfRange(data, arrayOffset, arrayOffset + chunk);
                        assertArrayEquals(expected, onMember, layout + " n=" + n + " chunk=" + chunk + " row " + row + " data " + i);
                        for (int b = 0; b < chunk; b++) {
                            parity[b] ^= onMember[b];
                        }
                    }
                    int parityMember = java.util.stream.IntStream.range(0, n)
                            .filter(m -> java.util.Arrays.stream(memberOf).noneMatch(x -> x == m)).findFirst().getAsInt();
                    byte[] onParity = new byte[chunk];
                    members.get(parityMember).read(dataOffsetSectors * 512 + row * chunk, ByteBuffer.wrap(onParity));
                    assertArrayEquals(parity, onParity, layout + " n=" + n + " row " + row + " parity");
                }
            }
        }
    }
}
