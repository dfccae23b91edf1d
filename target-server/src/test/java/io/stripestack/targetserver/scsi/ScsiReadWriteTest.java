package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.internal.PlatformDependent;
import io.stripestack.blockdev.BlockDevice;
import io.stripestack.testkit.FaultInjectingBlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** READ CAPACITY, READ/WRITE 6/10/12/16, SYNCHRONIZE CACHE and the errors SBC-3 prescribes for them. */
class ScsiReadWriteTest {
    private static final int MIB = 1 << 20;
    private static final long BLOCKS = MIB / 512;

    private static ScsiHarness memory() {
        return new ScsiHarness(new MemoryBlockDevice("m0", MIB, 512), false);
    }

    @Test
    void readCapacity10AnswersTheLastLbaNotTheBlockCount() {
        try (ScsiHarness h = memory()) {
            byte[] d = h.run(cdb(0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0)).assertGood().data();
            assertEquals(BLOCKS - 1, Cdb.u32(d, 0));
            assertEquals(512, Cdb.u32(d, 4));
            h.run(cdb(0x25, 0, 0, 0, 0, 1, 0, 0, 0, 0)).assertInvalidFieldInCdb(2);
        }
    }

    @Test
    void readCapacity16ReportsPhysicalExponentLowestAlignedLbaAndProvisioning() {
        try (ScsiHarness h = new ScsiHarness(new ShapedBlockDevice(new MemoryBlockDevice("m0", MIB, 512),
                new Geometry(64 << 10, 192 << 10, 0, 0), true), false)) {
            byte[] d = h.run(readCapacity16(32)).assertGood().data();
            assertEquals(32, d.length);
            assertEquals(BLOCKS - 1, Cdb.u64(d, 0));
            assertEquals(512, Cdb.u32(d, 8));
            assertEquals(3, d[13] & 0x0f, "4 KiB physical blocks: 2^3 logical blocks each");
            assertEquals(0x80, d[14] & 0x80, "LBPME");
            assertEquals(0x40, d[14] & 0x40, "LBPRZ");
            assertEquals(0, Cdb.u16(d, 14) & 0x3fff, "aligned");
        }
    }

    @Test
    void readCapacity16LowestAlignedLbaFollowsAShiftedGeometry() {
        // A crypto payload 81 KiB into a RAID whose stripes start at 0: the lowest LBA at the start of a 4 KiB
        // physical block below is (4 KiB - 81 KiB mod 4 KiB) / 512 = 3 KiB / 512 = 6.
        Geometry shifted = new Geometry(64 << 10, 192 << 10, 0, 0).shiftedBy(81 << 10);
        try (ScsiHarness h = new ScsiHarness(new ShapedBlockDevice(new MemoryBlockDevice("m0", MIB, 512), shifted,
                false), false)) {
            byte[] d = h.run(readCapacity16(32)).assertGood().data();
            assertEquals(6, Cdb.u16(d, 14) & 0x3fff);
            assertEquals(0, d[14] & 0xC0, "no LBPME without discard");
        }
        Geometry alignedShift = new Geometry(64 << 10, 192 << 10, 0, 0).shiftedBy(1 << 20);
        try (ScsiHarness h = new ScsiHarness(new ShapedBlockDevice(new MemoryBlockDevice("m0", MIB, 512), alignedShift,
                false), false)) {
            assertEquals(0, Cdb.u16(h.run(readCapacity16(32)).data(), 14) & 0x3fff, "1 MiB shift keeps 4 KiB alignment");
        }
    }

    @Test
    void readCapacity16TruncatesToAllocationLength() {
        try (ScsiHarness h = memory()) {
            assertEquals(12, h.run(readCapacity16(12)).assertGood().data().length);
            h.run(cdb(0x9E, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0)).assertInvalidFieldInCdb(1);
        }
    }

    @Test
    void everyReadAndWriteSizeMovesTheRightBytes() {
        try (ScsiHarness h = memory()) {
            byte[] a = pattern(512, 1);
            h.run(cdb(0x0A, 0x00, 0x00, 0x07, 1, 0), a).assertGood();                  // WRITE(6) LBA 7
            assertArrayEquals(a, h.run(cdb(0x08, 0, 0, 7, 1, 0)).assertGood().data()); // READ(6)
            byte[] b = pattern(1024, 2);
            h.run(cdb(0xAA, 0, 0, 0, 0, 20, 0, 0, 0, 2, 0, 0), b).assertGood();        // WRITE(12) LBA 20 x2
            assertArrayEquals(b, h.run(cdb(0xA8, 0, 0, 0, 0, 20, 0, 0, 0, 2, 0, 0)).assertGood().data());
            byte[] c = pattern(4096, 3);
            h.run(rw16(0x8A, BLOCKS - 8, 8), c).assertGood();                          // WRITE(16) last 8
            assertArrayEquals(c, h.run(rw16(0x88, BLOCKS - 8, 8)).assertGood().data());
            assertArrayEquals(Arrays.copyOfRange(c, 3584, 4096), h.run(read10(BLOCKS - 1, 1)).data());
        }
    }

    @Test
    void read6TransferLengthZeroMeans256Blocks() {
        try (ScsiHarness h = memory()) {
            ScsiHarness.Result r = h.run(cdb(0x08, 0, 0, 0, 0, 0)).assertGood();
            assertEquals(256 * 512, r.data().length);
            assertEquals(256 * 512, r.commandTransferLength());
        }
    }

    @Test
    void zeroLengthTransfersCheckTheLbaButMoveNothing() {
        try (ScsiHarness h = memory()) {
            ScsiHarness.Result r = h.run(read10(0, 0)).assertGood();
            assertNull(r.data());
            assertEquals(0, r.commandTransferLength());
            h.run(read10(BLOCKS + 1, 0)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            h.run(read10(0xFFFFFFFFL, 0)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            h.run(write10(0, 0, false), new byte[0]).assertGood();
        }
    }

    @Test
    void outOfRangeLbasAreRejected() {
        try (ScsiHarness h = memory()) {
            h.run(read10(BLOCKS, 1)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            h.run(read10(BLOCKS - 1, 2)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            h.run(rw16(0x88, -1L, 1)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            h.run(rw16(0x88, 1L << 62, 1)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
            h.run(rw16(0x8A, BLOCKS - 1, 2), new byte[1024]).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
        }
    }

    @Test
    void transfersBeyondTheMaximumTransferLengthAreInvalid() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", 8 * MIB, 512), false)) {
            long max = Cdb.u32(h.run(inquiry(true, 0xB0, 64)).data(), 8);
            assertEquals(max * 512, h.run(rw16(0x88, 0, max)).assertGood().data().length);
            h.run(rw16(0x88, 0, max + 1)).assertInvalidFieldInCdb(10);
        }
    }

    @Test
    void protectionFieldsAreInvalidWithoutProtectionInformation() {
        try (ScsiHarness h = memory()) {
            byte[] read = read10(0, 1);
            read[1] = (byte) 0x20; // RDPROTECT 001b
            h.run(read).assertInvalidFieldInCdb(1);
            byte[] write = write10(0, 1, false);
            write[1] = (byte) 0x40;
            h.run(write, new byte[512]).assertInvalidFieldInCdb(1);
        }
    }

    @Test
    void writeWithLessDataOutThanTheCdbSaysWritesNothing() {
        try (ScsiHarness h = memory()) {
            ScsiHarness.Result r = h.run(write10(0, 2, false), pattern(700, 9));
            r.assertCheck(SenseException.ILLEGAL_REQUEST, 0x0E, 0x03);
            assertEquals(1024, r.commandTransferLength(), "the CDB asked for 1024 bytes");
            assertArrayEquals(new byte[1024], h.run(read10(0, 2)).data(), "nothing written");
            h.run(write10(0, 1, false), null).assertCheck(SenseException.ILLEGAL_REQUEST, 0x0E, 0x03);
        }
    }

    @Test
    void writeWithShorterExpectedLengthWritesOnlyWholeBlocksTheInitiatorSent() {
        try (ScsiHarness h = memory()) {
            h.run(write10(0, 2, false), pattern(1024, 1)).assertGood();
            byte[] b = pattern(512, 2);
            ScsiHarness.Result r = h.run(NEXUS_A, 0, write10(0, 2, false), b, 512).assertGood();
            assertEquals(1024, r.commandTransferLength(), "the transport reports the 512-byte overflow");
            byte[] after = h.run(read10(0, 2)).data();
            assertArrayEquals(b, Arrays.copyOf(after, 512), "the block sent is written");
            assertArrayEquals(Arrays.copyOfRange(pattern(1024, 1), 512, 1024), Arrays.copyOfRange(after, 512, 1024),
                    "the block not sent is untouched");
            h.run(NEXUS_A, 0, write10(0, 1, false), null, 0).assertGood();
            h.run(NEXUS_A, 0, write10(0, 1, false), new byte[200], 200)
                    .assertCheck(SenseException.ILLEGAL_REQUEST, 0x0E, 0x03);
            assertArrayEquals(after, h.run(read10(0, 2)).data(), "a partial block writes nothing");
        }
    }

    @Test
    void writeWithMoreDataOutThanTheCdbSaysWritesOnlyTheCdbLength() {
        try (ScsiHarness h = memory()) {
            byte[] data = pattern(1024, 4);
            h.run(write10(10, 1, false), data).assertGood();
            assertArrayEquals(Arrays.copyOf(data, 512), h.run(read10(10, 1)).data());
            assertArrayEquals(new byte[512], h.run(read10(11, 1)).data());
        }
    }

    @Test
    void readOnlyUnitRefusesEveryWriteWithDataProtect() {
        for (boolean discard : new boolean[] {true, false}) {
            BlockDevice device = new ShapedBlockDevice(new MemoryBlockDevice("m0", MIB, 512), Geometry.simple(512), discard);
            try (ScsiHarness h = new ScsiHarness(device, true)) {
                byte[] writeSame10Unmap = cdb(0x41, 0x08, 0, 0, 0, 0, 0, 0, 1, 0);
                byte[] writeSame16Unmap = rw16(0x93, 0, 1);
                writeSame16Unmap[1] = 0x08;
                byte[] compareAndWrite = rw16(0x89, 0, 0);
                compareAndWrite[13] = 1;
                for (byte[] c : List.of(write10(0, 1, false), rw16(0x8A, 0, 1), cdb(0x0A, 0, 0, 0, 1, 0),
                        cdb(0x2E, 0, 0, 0, 0, 0, 0, 0, 1, 0), rw16(0x8E, 0, 1), rw16(0x8B, 0, 1),
                        cdb(0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0), writeSame10Unmap, writeSame16Unmap)) {
                    h.run(c, new byte[512]).assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
                }
                h.run(compareAndWrite, new byte[1024]).assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
                byte[] ms = h.run(cdb(0x1A, 0x08, 0x3F, 0, 255, 0)).data();
                assertEquals(0x80, ms[2] & 0x80, "MODE SENSE header WP bit");
                h.run(read10(0, 1)).assertGood();
            }
        }
    }

    @Test
    void fuaWriteIsFlushedAndPlainWriteIsNot() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            h.run(write10(0, 1, false), new byte[512]).assertGood();
            assertEquals(0, device.stats().flushOps(), "WCE=1: a plain write stays in the write-back cache");
            h.run(write10(0, 1, true), new byte[512]).assertGood();
            assertEquals(1, device.stats().flushOps(), "FUA write flushed");
            h.run(cdb(0x35, 0, 0, 0, 0, 0, 0, 0, 0, 0)).assertGood();
            assertEquals(2, device.stats().flushOps(), "SYNCHRONIZE CACHE(10) flushed");
            h.run(rw16(0x91, 0, 0)).assertGood();
            assertEquals(3, device.stats().flushOps(), "SYNCHRONIZE CACHE(16) flushed");
            h.run(rw16(0x91, BLOCKS, 1)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x21, 0x00);
        }
    }

    @Test
    void injectedReadAndWriteFailuresBecomeMediumErrors() {
        FaultInjectingBlockDevice device = new FaultInjectingBlockDevice(new MemoryBlockDevice("m0", MIB, 512));
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            device.failDirections(true, false);
            device.failNow();
            ScsiHarness.Result read = h.run(read10(40, 4));
            read.assertCheck(SenseException.MEDIUM_ERROR, 0x11, 0x00);
            assertEquals(40, read.information(), "INFORMATION: the command's LBA");
            assertNull(read.data(), "no Data-In on error");
            h.run(write10(40, 1, false), new byte[512]).assertGood();
            device.failDirections(false, true);
            h.run(write10(41, 1, false), new byte[512]).assertCheck(SenseException.MEDIUM_ERROR, 0x0C, 0x00);
            device.heal();
            h.run(read10(40, 4)).assertGood();
        }
    }

    @Test
    void mediumErrorReportsTheFailingLbaTheStackNamed() {
        ShapedBlockDevice device = new ShapedBlockDevice(new MemoryBlockDevice("m0", MIB, 512), Geometry.simple(512), false);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            device.failAt(105 * 512 + 17, false);
            ScsiHarness.Result r = h.run(read10(100, 10));
            r.assertCheck(SenseException.MEDIUM_ERROR, 0x11, 0x00);
            assertEquals(105, r.information());
            h.run(read10(90, 10)).assertGood();
            device.failAt(300 * 512, true);
            ScsiHarness.Result w = h.run(write10(299, 2, false), new byte[1024]);
            w.assertCheck(SenseException.MEDIUM_ERROR, 0x0C, 0x00);
            assertEquals(300, w.information());
        }
    }

    @Test
    void unexpectedDeviceBugBecomesHardwareError() {
        BlockDevice broken = new ShapedBlockDevice(new MemoryBlockDevice("m0", MIB, 512), Geometry.simple(512), false) {
            @Override
            public void read(long offset, ByteBuffer dst) {
                throw new IllegalStateException("bug");
            }
        };
        try (ScsiHarness h = new ScsiHarness(broken, false)) {
            h.run(read10(0, 1)).assertCheck(SenseException.HARDWARE_ERROR, 0x44, 0x00);
        }
    }

    /**
     * The device must read straight into the Data-In buffer and write straight from the Data-Out buffer:
     * the NIO buffers it is handed start at the same native address as the command's ByteBufs.
     */
    @Test
    void readsAndWritesHandTheCommandBuffersMemoryToTheDevice() {
        long[] seen = new long[2];
        BlockDevice recording = new ShapedBlockDevice(new MemoryBlockDevice("m0", MIB, 512), Geometry.simple(512), false) {
            @Override
            public void read(long offset, ByteBuffer dst) throws IOException {
                seen[0] = PlatformDependent.directBufferAddress(dst) + dst.position();
                super.read(offset, dst);
            }

            @Override
            public void write(long offset, ByteBuffer src) throws IOException {
                seen[1] = PlatformDependent.directBufferAddress(src) + src.position();
                super.write(offset, src);
            }
        };
        PooledByteBufAllocator pooled = new PooledByteBufAllocator(true);
        ScsiTarget target = new ScsiTarget(Map.of(0L, new LogicalUnit(recording, LogicalUnitIdentity.of(LUN_ID), false)));

        ByteBuf out = pooled.directBuffer(4096).writeBytes(pattern(4096, 7));
        ScsiCommand write = new ScsiCommand(NEXUS_A, 0, write10(16, 8, false), 4096, false, true,
                ScsiCommand.ATTR_SIMPLE, out, pooled);
        target.execute(write);
        assertEquals(ScsiCommand.GOOD, write.status());
        assertEquals(out.memoryAddress() + out.readerIndex(), seen[1], "device wrote from the Data-Out memory");
        out.release();

        ScsiCommand read = new ScsiCommand(NEXUS_A, 0, read10(16, 8), 4096, true, false, ScsiCommand.ATTR_SIMPLE,
                null, pooled);
        target.execute(read);
        assertEquals(ScsiCommand.GOOD, read.status());
        ByteBuf in = read.dataIn();
        assertTrue(in.isDirect(), "Data-In is a direct buffer");
        assertEquals(in.memoryAddress() + in.readerIndex(), seen[0], "device read into the Data-In memory");
        byte[] got = new byte[4096];
        in.getBytes(in.readerIndex(), got);
        assertArrayEquals(pattern(4096, 7), got);
        in.release();
        assertEquals(1, recording.stats().readOps(), "one device read per READ");
    }

    @Test
    void compositeDataOutIsWrittenWhole() {
        MemoryBlockDevice device = new MemoryBlockDevice("m0", MIB, 512);
        try (ScsiHarness h = new ScsiHarness(device, false)) {
            byte[] data = pattern(2048, 5);
            CompositeByteBuf composite = Unpooled.compositeBuffer();
            composite.addComponent(true, Unpooled.wrappedBuffer(Arrays.copyOfRange(data, 0, 700)));
            composite.addComponent(true, Unpooled.wrappedBuffer(Arrays.copyOfRange(data, 700, 2048)));
            ScsiCommand cmd = new ScsiCommand(NEXUS_A, 0, write10(3, 4, false), 2048, false, true,
                    ScsiCommand.ATTR_SIMPLE, composite, h.allocator);
            h.target.execute(cmd);
            assertEquals(ScsiCommand.GOOD, cmd.status());
            composite.release();
            assertArrayEquals(data, h.run(read10(3, 4)).data());
        }
    }

    static byte[] readCapacity16(int allocation) {
        byte[] c = new byte[16];
        c[0] = (byte) 0x9E;
        c[1] = 0x10;
        Cdb.put32(c, 10, allocation);
        return c;
    }
}
