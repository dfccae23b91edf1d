package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.testkit.FaultInjectingBlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** ORWRITE(16) (SBC-3 5.10): the medium becomes itself ORed with the Data-Out, atomically. */
class ScsiOrWriteTest {
    private static final int MIB = 1 << 20;
    private static final long BLOCKS = MIB / 512;

    private static byte[] orWrite(long lba, long blocks, int byte1) {
        byte[] c = rw16(0x8B, lba, blocks);
        c[1] = (byte) byte1;
        return c;
    }

    private static byte[] filled(int length, int value) {
        byte[] b = new byte[length];
        Arrays.fill(b, (byte) value);
        return b;
    }

    @Test
    void orWriteOrsTheDataOutIntoTheMedium() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            byte[] old = pattern(3 * 512, 4);
            byte[] mask = pattern(3 * 512, 9);
            h.run(write10(20, 3, false), old).assertGood();
            h.run(orWrite(20, 3, 0), mask).assertGood();
            byte[] expected = new byte[old.length];
            for (int i = 0; i < expected.length; i++) {
                expected[i] = (byte) (old[i] | mask[i]);
            }
            assertArrayEquals(expected, h.run(read10(20, 3)).data());
            assertArrayEquals(new byte[512], h.run(read10(23, 1)).data(), "nothing beyond the range");

            h.run(write10(BLOCKS - 1, 1, false), new byte[512]).assertGood();
            h.run(orWrite(BLOCKS - 1, 1, 0), filled(512, 0xA5)).assertGood();
            h.run(orWrite(BLOCKS - 1, 1, 0), filled(512, 0x5A)).assertGood();
            assertArrayEquals(filled(512, 0xFF), h.run(read10(BLOCKS - 1, 1)).data(), "the last block, twice ORed");
        }
    }

    @Test
    void orWriteChecksRangeProtectionAndWriteProtect() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            h.run(orWrite(0, 0, 0), null).assertGood();
            h.run(orWrite(BLOCKS + 1, 0, 0), null).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            h.run(orWrite(-1, 0, 0), null).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            h.run(orWrite(Long.MIN_VALUE, 1, 0), new byte[512]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            h.run(orWrite(BLOCKS - 1, 2, 0), new byte[1024]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            for (int protect = 1; protect < 8; protect++) {
                h.run(orWrite(0, 1, protect << 5), new byte[512]).assertInvalidFieldInCdb(1);
            }
            long max = Cdb.u32(h.run(inquiry(true, 0xB0, 64)).data(), 8);
            h.run(orWrite(0, max + 1, 0), new byte[(int) (max + 1) * 512]).assertInvalidFieldInCdb(10);
            h.run(orWrite(0, 2, 0), new byte[512]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x0E, 0x03);
        }
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), true)) {
            h.run(orWrite(0, 1, 0), new byte[512]).assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
        }
    }

    @Test
    void fuaOrWriteIsFlushed() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            h.run(orWrite(0, 1, 0x10), new byte[512]).assertGood(); // DPO only
            assertEquals(0, device.stats().flushOps(), "WCE=1: stays in the write-back cache");
            h.run(orWrite(0, 1, 0x18), new byte[512]).assertGood(); // DPO and FUA
            assertEquals(1, device.stats().flushOps(), "FUA flushed");
        }
    }

    @Test
    void failuresBecomeMediumErrorsAndWriteNothing() {
        FaultInjectingBlockDevice device = new FaultInjectingBlockDevice(new MemoryBlockDevice("m0", MIB, 512));
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            device.failDirections(true, false);
            device.failNow();
            h.run(orWrite(8, 1, 0), filled(512, 0x0F)).assertCheck(SenseException.MEDIUM_ERROR, 0x11, 0x00);
            device.heal();
            assertArrayEquals(new byte[512], h.run(read10(8, 1)).data(), "an unreadable block is not written");
            device.failDirections(false, true);
            device.failNow();
            h.run(orWrite(8, 1, 0), filled(512, 0x0F)).assertCheck(SenseException.MEDIUM_ERROR, 0x0C, 0x00);
        }
    }

    /**
     * Eight initiators each OR their own bit into the same block at once, again and again, on a device whose
     * reads take a millisecond: an ORWRITE that read the block before another's write landed and wrote after
     * it would lose that bit.
     */
    @Test
    void concurrentOrWritesOfOneBlockAllTakeEffect() throws Exception {
        int writers = 8;
        ShapedBlockDevice slowReads = new ShapedBlockDevice(new MemoryBlockDevice("m0", MIB, 512),
                Geometry.simple(512), true) {
            @Override
            public void read(long offset, ByteBuffer dst) throws IOException {
                LockSupport.parkNanos(1_000_000);
                super.read(offset, dst);
            }
        };
        ExecutorService pool = Executors.newFixedThreadPool(writers);
        try (ScsiHarness h = new ScsiHarness(slowReads, false)) {
            for (int round = 0; round < 10; round++) {
                h.run(write10(5, 1, false), new byte[512]).assertGood();
                CyclicBarrier start = new CyclicBarrier(writers);
                List<Future<ScsiHarness.Result>> results = new ArrayList<>();
                for (int w = 0; w < writers; w++) {
                    byte[] bit = filled(512, 1 << w);
                    String nexus = w % 2 == 0 ? NEXUS_A : NEXUS_B;
                    results.add(pool.submit(() -> {
                        start.await(10, TimeUnit.SECONDS);
                        return h.run(nexus, orWrite(5, 1, 0), bit);
                    }));
                }
                for (Future<ScsiHarness.Result> r : results) {
                    r.get(10, TimeUnit.SECONDS).assertGood();
                }
                assertArrayEquals(filled(512, 0xFF), h.run(read10(5, 1)).data(), "round " + round + ": every bit set");
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
