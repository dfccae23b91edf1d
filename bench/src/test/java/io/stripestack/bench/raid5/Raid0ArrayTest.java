package io.stripestack.bench.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class Raid0ArrayTest {
    @Test
    void chunksRotateOverTheMembersAndReadBack() throws Exception {
        int chunk = 4096;
        int n = 3;
        int offset = 8192;
        List<BlockDevice> members = new ArrayList<>();
        for (int m = 0; m < n; m++) {
            members.add(new MemoryBlockDevice("r" + m, offset + 5 * chunk + 512, 512));
        }
        try (Raid0Array array = new Raid0Array("r0", members, chunk, offset)) {
            assertEquals(15L * chunk, array.size(), "the odd 512 bytes left on each member are not used");
            assertEquals(3 * chunk, array.geometry().optimalIo());
            byte[] data = new byte[(int) array.size()];
            new Random(1).nextBytes(data);
            array.write(0, ByteBuffer.wrap(data));
            for (int c = 0; c < 15; c++) {
                byte[] onMember = new byte[chunk];
                members.get(c % n).read(offset + (long) (c / n) * chunk, ByteBuffer.wrap(onMember));
                assertArrayEquals(java.util.Arrays.copyOfRange(data, c * chunk, (c + 1) * chunk), onMember, "chunk " + c);
            }
            byte[] got = new byte[5 * 512];
            array.read(chunk - 1024, ByteBuffer.wrap(got));
            assertArrayEquals(java.util.Arrays.copyOfRange(data, chunk - 1024, chunk - 1024 + got.length), got);
        }
    }
}
