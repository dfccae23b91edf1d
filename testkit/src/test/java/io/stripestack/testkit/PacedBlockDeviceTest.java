package io.stripestack.testkit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.MemoryBlockDevice;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class PacedBlockDeviceTest {

    /**
     * Requests take turns: four concurrent 1 MiB writes at 40 MB/s cannot all return before their total has
     * had its time (a lower bound only: a slow machine may take longer, never less), and data passes intact.
     */
    @Test
    void concurrentRequestsShareTheBandwidthAndDataPassesThrough() throws Exception {
        MemoryBlockDevice mem = new MemoryBlockDevice("mem", 8 << 20, 512);
        byte[] data = new byte[4 << 20];
        new Random(3).nextBytes(data);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try (PacedBlockDevice paced = new PacedBlockDevice(mem, 40_000_000L)) {
            long start = System.nanoTime();
            Future<?>[] writes = new Future<?>[4];
            for (int i = 0; i < 4; i++) {
                int at = i << 20;
                writes[i] = pool.submit(() -> {
                    paced.write(at, ByteBuffer.wrap(data, at, 1 << 20));
                    return null;
                });
            }
            for (Future<?> w : writes) {
                w.get();
            }
            long elapsed = System.nanoTime() - start;
            assertTrue(elapsed >= 4.0 * (1 << 20) / 40e6 * 1e9 * 0.99, "4 MiB at 40 MB/s took only " + elapsed / 1e6 + " ms");
            byte[] got = new byte[4 << 20];
            paced.read(0, ByteBuffer.wrap(got));
            assertArrayEquals(data, got);
        } finally {
            pool.shutdownNow();
        }
        assertThrows(IllegalArgumentException.class, () -> new PacedBlockDevice(mem, 0));
    }
}
