package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;

/** WRITE SAME(10/16) and UNMAP (SBC-3 5.42-5.44, 5.28). */
class ScsiProvisioningTest {
    private static final int MIB = 1 << 20;
    private static final long BLOCKS = MIB / 512;

    private static byte[] writeSame10(long lba, int blocks, boolean unmap) {
        byte[] c = new byte[10];
        c[0] = 0x41;
        c[1] = (byte) (unmap ? 0x08 : 0);
        Cdb.put32(c, 2, lba);
        Cdb.put16(c, 7, blocks);
        return c;
    }

    private static byte[] writeSame16(long lba, long blocks, boolean unmap, boolean ndob) {
        byte[] c = new byte[16];
        c[0] = (byte) 0x93;
        c[1] = (byte) ((unmap ? 0x08 : 0) | (ndob ? 0x01 : 0));
        Cdb.put64(c, 2, lba);
        Cdb.put32(c, 10, blocks);
        return c;
    }

    private static byte[] unmapCdb(int parameterLength) {
        return cdb(0x42, 0, 0, 0, 0, 0, 0, parameterLength >>> 8, parameterLength & 0xff, 0);
    }

    /** An UNMAP parameter list with one descriptor per {lba, count} pair. */
    private static byte[] unmapList(long... lbaCountPairs) {
        int descriptors = lbaCountPairs.length / 2;
        byte[] p = new byte[8 + 16 * descriptors];
        Cdb.put16(p, 0, p.length - 2);
        Cdb.put16(p, 2, 16 * descriptors);
        for (int i = 0; i < descriptors; i++) {
            Cdb.put64(p, 8 + 16 * i, lbaCountPairs[2 * i]);
            Cdb.put32(p, 8 + 16 * i + 8, lbaCountPairs[2 * i + 1]);
        }
        return p;
    }

    private static byte[] repeat(byte[] block, int times) {
        byte[] out = new byte[block.length * times];
        for (int i = 0; i < times; i++) {
            System.arraycopy(block, 0, out, i * block.length, block.length);
        }
        return out;
    }

    @Test
    void writeSameRepeatsTheBlockOverTheRange() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", 8 * MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            byte[] block = pattern(512, 21);
            h.run(writeSame10(100, 40, false), block).assertGood();
            assertArrayEquals(repeat(block, 40), h.run(read10(100, 40)).data());
            assertArrayEquals(new byte[512], h.run(read10(140, 1)).data(), "nothing beyond the range");
            // More blocks than one pattern buffer holds.
            h.run(writeSame16(0, 5000, false, false), block).assertGood();
            assertArrayEquals(block, h.run(read10(4999, 1)).data());
            assertArrayEquals(new byte[512], h.run(read10(5000, 1)).data());
        }
    }

    @Test
    void writeSameWithUnmapAndZeroDataDiscards() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            h.run(write10(10, 8, false), pattern(4096, 5)).assertGood();
            h.run(writeSame10(10, 8, true), new byte[512]).assertGood();
            assertEquals(1, device.stats().discardOps(), "zero block with UNMAP becomes a discard");
            assertArrayEquals(new byte[4096], h.run(read10(10, 8)).data(), "LBPRZ: reads zeros");
            byte[] block = pattern(512, 6);
            h.run(write10(10, 2, false), repeat(block, 2)).assertGood();
            h.run(writeSame10(10, 2, true), block).assertGood();
            assertEquals(2, device.stats().discardOps(), "UNMAP unmaps whatever the block holds");
            assertArrayEquals(new byte[1024], h.run(read10(10, 2)).data(), "LBPRZ: reads zeros");
            h.run(write10(10, 2, false), repeat(block, 2)).assertGood();
            h.run(writeSame16(10, 2, true, true), null).assertGood();
            assertEquals(3, device.stats().discardOps(), "NDOB with UNMAP discards");
            assertArrayEquals(new byte[1024], h.run(read10(10, 2)).data());
            h.run(write10(10, 1, false), block).assertGood();
            h.run(writeSame16(10, 1, false, true), null).assertGood();
            assertArrayEquals(new byte[512], h.run(read10(10, 1)).data(), "NDOB without UNMAP writes zeros");
        }
    }

    /**
     * On a unit whose discard does not zero-fill (dm-crypt's leaves whatever the discarded ciphertext decrypts
     * to), WRITE SAME with UNMAP writes the block it carries instead of discarding.
     */
    @Test
    void writeSameWithUnmapWritesWhenDiscardDoesNotZeroFill() {
        MemoryBlockDevice memory = new MemoryBlockDevice("m0", MIB, 512);
        BlockDevice garbageAfterDiscard = new ShapedBlockDevice(memory, Geometry.simple(512), true) {
            @Override
            public boolean discardZeroes() {
                return false;
            }
        };
        try (ScsiHarness h = new ScsiHarness(garbageAfterDiscard, false)) {
            byte[] block = pattern(512, 7);
            h.run(writeSame10(30, 3, true), block).assertGood();
            assertEquals(0, memory.stats().discardOps());
            assertArrayEquals(repeat(block, 3), h.run(read10(30, 3)).data());
        }
    }

    @Test
    void writeSameErrors() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false)) {
            h.run(writeSame10(BLOCKS - 1, 2, false), new byte[512]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0);
            h.run(writeSame10(0, 1, false), new byte[256]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x0E, 0x03);
            h.run(writeSame10(0, 1, false), new byte[1024]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x0E, 0x03);
            byte[] anchor = writeSame10(0, 1, true);
            anchor[1] |= 0x10;
            h.run(anchor, new byte[512]).assertInvalidFieldInCdb(1);
            long max = Cdb.u64(h.run(inquiry(true, 0xB0, 64)).data(), 36);
            assertTrue(max > 0, "MAXIMUM WRITE SAME LENGTH stated");
        }
        try (ScsiHarness h = new ScsiHarness(new ShapedBlockDevice(new MemoryBlockDevice("m0", MIB, 512),
                Geometry.simple(512), false), false)) {
            h.run(writeSame10(0, 1, true), new byte[512]).assertInvalidFieldInCdb(1); // UNMAP without discard
            h.run(unmapCdb(24), unmapList(0, 1)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x20, 0x00);
        }
    }

    @Test
    void writeSameOfZeroBlocksRunsToTheEndOfTheMedium() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            byte[] block = pattern(512, 12);
            h.run(writeSame10(BLOCKS - 100, 0, false), block).assertGood();
            assertArrayEquals(repeat(block, 100), h.run(read10(BLOCKS - 100, 100)).data());
            assertArrayEquals(new byte[512], h.run(read10(BLOCKS - 101, 1)).data(), "nothing before the LBA");
            h.run(writeSame16(BLOCKS - 10, 0, true, true), null).assertGood();
            assertEquals(1, device.stats().discardOps(), "UNMAP to the end of the medium is one discard");
            assertArrayEquals(new byte[10 * 512], h.run(read10(BLOCKS - 10, 10)).data());
            h.run(writeSame10(BLOCKS, 0, false), block).assertGood();
            h.run(writeSame10(BLOCKS + 1, 0, false), block).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0);
            h.run(writeSame16(-1, 0, false, false), block).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0);
        }
    }

    /**
     * MAXIMUM WRITE SAME LENGTH, not MAXIMUM TRANSFER LENGTH, bounds a WRITE SAME (one block moves), and a
     * zero-block WRITE SAME is measured to the end of the medium. The unit stands on a device larger than the
     * limit that stores nothing and counts the bytes written.
     */
    @Test
    void writeSameIsBoundedByTheMaximumWriteSameLength() {
        long size = 2L * LogicalUnit.MAX_WRITE_SAME_BLOCKS * 512 + 512 * 100;
        LongAdder written = new LongAdder();
        BlockDevice countingDevice = new BlockDevice() {
            private final IoStats stats = new IoStats("counting");

            @Override public String name() { return "counting"; }
            @Override public long size() { return size; }
            @Override public int logicalBlockSize() { return 512; }
            @Override public Geometry geometry() { return Geometry.simple(512); }
            @Override public void read(long offset, ByteBuffer dst) throws IOException {
                while (dst.hasRemaining()) {
                    dst.put((byte) 0);
                }
            }
            @Override public void write(long offset, ByteBuffer src) throws IOException {
                written.add(src.remaining());
                src.position(src.limit());
            }
            @Override public void flush() throws IOException { }
            @Override public IoStats stats() { return stats; }
            @Override public void close() { }
        };
        long blocks = size / 512;
        try (ScsiHarness h = new ScsiHarness(countingDevice, false)) {
            long max = Cdb.u64(h.run(inquiry(true, 0xB0, 64)).data(), 36);
            assertEquals(LogicalUnit.MAX_WRITE_SAME_BLOCKS, max);
            long maxTransfer = Cdb.u32(h.run(inquiry(true, 0xB0, 64)).data(), 8);
            assertTrue(max > maxTransfer, "the test needs a limit beyond the transfer length");
            byte[] block = pattern(512, 1);
            h.run(writeSame16(0, 0, false, false), block).assertInvalidFieldInCdb(10);
            h.run(writeSame16(blocks - max - 1, max + 1, false, false), block).assertInvalidFieldInCdb(10);
            assertEquals(0, written.sum());
            h.run(writeSame16(blocks - max, max, false, false), block).assertGood();
            assertEquals(max * 512, written.sum());
            h.run(writeSame16(blocks - max, 0, false, false), block).assertGood();
            assertEquals(2 * max * 512, written.sum(), "zero blocks: from the LBA to the end");
        }
    }

    @Test
    void unmapDiscardsEveryDescriptor() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            byte[] data = pattern(64 * 512, 8);
            h.run(write10(0, 64, false), data).assertGood();
            byte[] list = unmapList(4, 4, 40, 8, 60, 0);
            h.run(unmapCdb(list.length), list).assertGood();
            assertEquals(2, device.stats().discardOps(), "zero-count descriptors are skipped");
            byte[] after = h.run(read10(0, 64)).data();
            byte[] expected = data.clone();
            Arrays.fill(expected, 4 * 512, 8 * 512, (byte) 0);
            Arrays.fill(expected, 40 * 512, 48 * 512, (byte) 0);
            assertArrayEquals(expected, after);
            h.run(unmapCdb(0), null).assertGood();
            h.run(unmapCdb(8), unmapList()).assertGood();
            h.run(unmapCdb(24), unmapList(BLOCKS, 0)).assertGood();
        }
    }

    @Test
    void unmapValidatesTheWholeListBeforeDiscardingAnything() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            byte[] list = unmapList(0, 8, BLOCKS - 2, 4);
            h.run(unmapCdb(list.length), list).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            assertEquals(0, device.stats().discardOps());
            h.run(unmapCdb(6), new byte[6]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x1A, 0x00);
            byte[] inquiryB0 = h.run(inquiry(true, 0xB0, 64)).data();
            long maxDescriptors = Cdb.u32(inquiryB0, 24);
            long[] pairs = new long[(int) (maxDescriptors + 1) * 2];
            byte[] tooMany = unmapList(pairs);
            h.run(unmapCdb(tooMany.length), tooMany).assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x00);
            long maxCount = Cdb.u32(inquiryB0, 20);
            if (maxCount < BLOCKS) {
                byte[] tooLong = unmapList(0, maxCount + 1);
                h.run(unmapCdb(tooLong.length), tooLong).assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x00);
            }
            byte[] anchored = unmapCdb(24);
            anchored[1] = 0x01;
            h.run(anchored, unmapList(0, 1)).assertInvalidFieldInCdb(1);
            assertEquals(0, device.stats().discardOps());
        }
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), true)) {
            h.run(unmapCdb(24), unmapList(0, 1)).assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
        }
    }
}
