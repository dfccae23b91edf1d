package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.MemoryBlockDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** VERIFY, WRITE AND VERIFY and COMPARE AND WRITE (SBC-3 5.2, 5.33, 5.37). */
class ScsiVerifyCompareTest {
    private static final int MIB = 1 << 20;

    private static byte[] verify10(int byteCheck, long lba, int blocks) {
        byte[] c = new byte[10];
        c[0] = 0x2F;
        c[1] = (byte) (byteCheck << 1);
        Cdb.put32(c, 2, lba);
        Cdb.put16(c, 7, blocks);
        return c;
    }

    private static byte[] compareAndWrite(long lba, int blocks, boolean fua) {
        byte[] c = new byte[16];
        c[0] = (byte) 0x89;
        c[1] = (byte) (fua ? 0x08 : 0);
        Cdb.put64(c, 2, lba);
        c[13] = (byte) blocks;
        return c;
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] c = new byte[a.length + b.length];
        System.arraycopy(a, 0, c, 0, a.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    @Test
    void verifyWithByteCheckComparesAndReportsTheMiscompareOffset() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            byte[] data = pattern(2048, 11);
            h.run(write10(50, 4, false), data).assertGood();
            h.run(verify10(1, 50, 4), data).assertGood();
            byte[] flipped = data.clone();
            flipped[1234] ^= 0x10;
            ScsiHarness.Result r = h.run(verify10(1, 50, 4), flipped);
            r.assertCheck(SenseException.MISCOMPARE, 0x1D, 0x00);
            assertEquals(1234, r.information(), "INFORMATION: offset of the first differing byte");
            h.run(verify10(2, 50, 4), data).assertInvalidFieldInCdb(1);
        }
    }

    @Test
    void verifyWithoutByteCheckReadsTheMediumAndMovesNoData() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            ScsiHarness.Result r = h.run(verify10(0, 0, 16)).assertGood();
            assertNull(r.data());
            h.run(verify10(0, MIB / 512 - 1, 2)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            h.run(verify10(0, 0, 0)).assertGood();
        }
    }

    @Test
    void verifyByteCheck3ComparesOneBlockWithEveryBlock() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            byte[] block = pattern(512, 3);
            byte[] same = concat(concat(block, block), block);
            h.run(write10(7, 3, false), same).assertGood();
            h.run(verify10(3, 7, 3), block).assertGood();
            ScsiHarness.Result r = h.run(verify10(3, 7, 4), block);
            r.assertCheck(SenseException.MISCOMPARE, 0x1D, 0x00);
            int firstNonZero = 0;
            while (block[firstNonZero] == 0) {
                firstNonZero++;
            }
            assertEquals(3 * 512 + firstNonZero, r.information(), "the fourth block (zeros) differs");
        }
    }

    @Test
    void writeAndVerifyWritesFlushesAndChecks() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            byte[] data = pattern(1024, 12);
            byte[] c = new byte[10];
            c[0] = 0x2E;
            c[1] = 0x02;
            Cdb.put32(c, 2, 9);
            Cdb.put16(c, 7, 2);
            h.run(c, data).assertGood();
            assertEquals(1, device.stats().flushOps());
            assertArrayEquals(data, h.run(read10(9, 2)).data());
            h.run(rw16(0x8E, MIB / 512, 1), new byte[512]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
        }
    }

    @Test
    void compareAndWriteWritesOnlyWhenTheMediumMatches() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            byte[] old = pattern(1024, 1);
            byte[] fresh = pattern(1024, 2);
            h.run(write10(20, 2, false), old).assertGood();
            ScsiHarness.Result ok = h.run(compareAndWrite(20, 2, false), concat(old, fresh)).assertGood();
            assertEquals(2048, ok.commandTransferLength());
            assertArrayEquals(fresh, h.run(read10(20, 2)).data());

            byte[] wrongGuess = old.clone();
            ScsiHarness.Result miss = h.run(compareAndWrite(20, 2, false), concat(wrongGuess, pattern(1024, 3)));
            miss.assertCheck(SenseException.MISCOMPARE, 0x1D, 0x00);
            int expectedOffset = 0;
            while (old[expectedOffset] == fresh[expectedOffset]) {
                expectedOffset++;
            }
            assertEquals(expectedOffset, miss.information());
            assertArrayEquals(fresh, h.run(read10(20, 2)).data(), "nothing written on miscompare");

            long flushes = device.stats().flushOps();
            h.run(compareAndWrite(20, 2, true), concat(fresh, old)).assertGood();
            assertEquals(flushes + 1, device.stats().flushOps(), "FUA flushed");
        }
    }

    @Test
    void compareAndWriteRejectsBadLengthsAndData() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            int max = h.run(inquiry(true, 0xB0, 64)).data()[5] & 0xff;
            h.run(compareAndWrite(0, max + 1, false), new byte[2 * 512 * (max + 1)]).assertInvalidFieldInCdb(13);
            h.run(compareAndWrite(0, 4, false), new byte[3 * 512]).assertInvalidFieldInCdb(13);
            h.run(compareAndWrite(0, 4, false), new byte[10 * 512]).assertInvalidFieldInCdb(13);
            // 256 blocks do not fit the 8-bit count: it wraps to 0, which cannot describe 256 blocks of data.
            h.run(compareAndWrite(0, 0, false), new byte[2 * 256 * 512]).assertInvalidFieldInCdb(13);
            h.run(compareAndWrite(MIB / 512 - 1, 2, false), new byte[2048]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            h.run(compareAndWrite(0, 0, false), null).assertGood();
        }
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), true)) {
            h.run(compareAndWrite(0, 1, false), new byte[1024]).assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
        }
    }

    /**
     * Threads increment a counter kept in block 0 with read + COMPARE AND WRITE, retrying on MISCOMPARE, while
     * other threads write neighbouring blocks. If a compare and its write were not atomic, two threads could
     * both succeed from the same old value and the final counter would be less than the number of successes.
     */
    @Test
    void compareAndWriteIsAtomicUnderConcurrency() throws Exception {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            int threads = 4;
            int incrementsEach = 150;
            AtomicInteger miscompares = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
            try {
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    futures.add(pool.submit(() -> {
                        int done = 0;
                        while (done < incrementsEach) {
                            byte[] current = h.run(read10(0, 1)).assertGood().data();
                            byte[] next = current.clone();
                            Cdb.put32(next, 0, Cdb.u32(current, 0) + 1);
                            ScsiHarness.Result r = h.run(compareAndWrite(0, 1, false), concat(current, next));
                            if (r.status() == ScsiCommand.GOOD) {
                                done++;
                            } else {
                                r.assertCheck(SenseException.MISCOMPARE, 0x1D, 0x00);
                                miscompares.incrementAndGet();
                            }
                        }
                        return null;
                    }));
                }
                futures.add(pool.submit(() -> {
                    for (int i = 0; i < 400; i++) {
                        h.run(write10(1 + i % 64, 1, false), pattern(512, i)).assertGood();
                    }
                    return null;
                }));
                for (Future<?> f : futures) {
                    f.get(60, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            byte[] block0 = h.run(read10(0, 1)).assertGood().data();
            assertEquals((long) threads * incrementsEach, Cdb.u32(block0, 0), "no increment lost");
        }
    }
}
