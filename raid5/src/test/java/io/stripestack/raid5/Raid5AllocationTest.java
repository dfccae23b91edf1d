package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The I/O paths allocate no per-request buffers: only small view objects (one ByteBuffer slice per
 * member piece; the member device's own duplicate). Measured with the JVM's per-thread allocation
 * counter on the calling thread after warm-up; the bound is far below any data buffer size.
 */
class Raid5AllocationTest {

    @Test
    void readsAndWritesAllocateOnlyViews() throws Exception {
        java.lang.management.ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        Assumptions.assumeTrue(mx instanceof com.sun.management.ThreadMXBean, "needs HotSpot allocation counters");
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) mx;
        int chunk = 16384;
        List<BlockDevice> members = Raid5ArrayTest.memoryMembers(4, chunk, 32);
        try (Raid5Array array = Raid5ArrayTest.create(members, chunk, Raid5Layout.LEFT_SYMMETRIC, 8)) {
            ByteBuffer small = ByteBuffer.allocateDirect(4096);
            ByteBuffer row = ByteBuffer.allocateDirect(3 * chunk);
            int ops = 2000;
            for (int round = 0; round < 2; round++) {      // round 0 warms up (JIT, thread-locals, cache)
                long id = Thread.currentThread().getId();
                long before = threads.getThreadAllocatedBytes(id);
                for (int i = 0; i < ops; i++) {
                    long rowIndex = i % 32;
                    array.read(rowIndex * 3 * chunk + 4096, small.clear());            // one piece
                    array.write(rowIndex * 3 * chunk + 8192, small.clear());           // partial row
                    array.write(rowIndex * 3 * chunk, row.clear());                    // full row
                }
                long perOp = (threads.getThreadAllocatedBytes(id) - before) / (3L * ops);
                if (round == 1) {
                    assertTrue(perOp < 512, "allocated " + perOp + " bytes per I/O on the calling thread");
                }
            }
        }
    }
}
