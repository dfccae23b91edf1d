package io.stripestack.raid5;

import static io.stripestack.raid5.MdadmExamineTest.examine;
import static io.stripestack.raid5.MdadmExamineTest.field;
import static io.stripestack.raid5.MdadmExamineTest.mdadm;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The write-intent bitmap: md's format (mdadm -X reads it) and a resync of only the dirty regions. */
class WriteIntentBitmapTest {
    static final int CHUNK = 16384;
    static final Raid5Config CONFIG = Raid5Config.defaults("wib").withChunk(CHUNK);
    static final long MEMBER = 4L << 20;
    static final long DATA_OFFSET = Raid5Config.DEFAULT_DATA_OFFSET_SECTORS * 512;

    @TempDir
    Path dir;

    /**
     * {@code mdadm -X} of the member's internal bitmap. mdadm locates internal bitmaps only on block devices
     * (a regular file is read as an external bitmap file, whose format is the same), so the bitmap is
     * copied out from where the superblock says it is ("Internal Bitmap : N sectors from superblock").
     */
    static String examineBitmap(Path member) throws Exception {
        String sb = examine(member);
        long superSectors = Long.parseLong(field(sb, "Super Offset").replace(" sectors", ""));
        long bitmapSectors = Long.parseLong(field(sb, "Internal Bitmap").replace(" sectors from superblock", ""));
        Path extracted = member.resolveSibling(member.getFileName() + ".bitmap");
        try (java.nio.channels.FileChannel in = java.nio.channels.FileChannel.open(member)) {
            ByteBuffer b = ByteBuffer.allocate(64 * 1024);
            in.read(b, (superSectors + bitmapSectors) * 512);
            Files.write(extracted, java.util.Arrays.copyOf(b.array(), b.position()));
        }
        Process p = new ProcessBuilder(mdadm().toString(), "-X", extracted.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), "mdadm -X " + member + ":\n" + out);
        return out;
    }

    /** A member whose flushes fail once told to, as a disk (or a remote target) that lost its cache. */
    static final class FailingFlush extends io.stripestack.blockdev.ForwardingBlockDevice {
        volatile boolean fail;

        FailingFlush(BlockDevice below) {
            super(below);
        }

        @Override
        public void flush() throws java.io.IOException {
            if (fail) {
                throw new java.io.IOException(name() + ": injected flush failure");
            }
            super.flush();
        }
    }

    /**
     * The daemon clears a region's bit only after every member flushed: a member whose flush fails in the same
     * pass may have lost the region's writes, and its re-add must rewrite them. Waits two daemon periods.
     */
    @Test
    void aFlushThatFailsKeepsTheBitsOfTheRegionsWritten() throws Exception {
        List<Path> paths = List.of(dir.resolve("f0"), dir.resolve("f1"), dir.resolve("f2"));
        List<BlockDevice> devices = new ArrayList<>();
        FailingFlush failing = null;
        for (Path p : paths) {
            BlockDevice d = FileBlockDevice.create(p, MEMBER, 512);
            if (devices.size() == 2) {
                failing = new FailingFlush(d);
                d = failing;
            }
            devices.add(d);
        }
        try (Raid5Array array = Raid5Array.create(devices, CONFIG, Raid5Options.defaults(), true)) {
            array.write(0, ByteBuffer.wrap(new byte[4096]));
            failing.fail = true;
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(3 * WriteIntentBitmap.DAEMON_SLEEP_SECONDS);
            while (array.status().health() != Raid5Status.Health.DEGRADED && System.nanoTime() < until) {
                Thread.sleep(100);
            }
            assertEquals(Raid5Status.Health.DEGRADED, array.status().health(), "the daemon's flush failed the member");
            Thread.sleep(TimeUnit.SECONDS.toMillis(WriteIntentBitmap.DAEMON_SLEEP_SECONDS) + 500);
            String bitmap = examineBitmap(paths.get(0));
            assertTrue(field(bitmap, "Bitmap").contains(" 1 dirty"), "the written region's bit stays:\n" + bitmap);
        }
    }

    /** A member that counts its flushes and the writes into its bitmap area (between the superblock and the data). */
    static final class CountingMember extends io.stripestack.blockdev.ForwardingBlockDevice {
        final java.util.concurrent.atomic.AtomicInteger bitmapWrites = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicInteger durableBitmapWrites = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicInteger flushes = new java.util.concurrent.atomic.AtomicInteger();

        CountingMember(BlockDevice below) {
            super(below);
        }

        private static boolean inBitmap(long offset) {
            return offset >= WriteIntentBitmap.memberOffset(Md1Superblock.OFFSET_BYTES / 512) && offset < DATA_OFFSET;
        }

        @Override
        public void write(long offset, ByteBuffer src) throws java.io.IOException {
            if (inBitmap(offset)) {
                bitmapWrites.incrementAndGet();
            }
            super.write(offset, src);
        }

        @Override
        public void writeDurable(long offset, ByteBuffer src) throws java.io.IOException {
            if (inBitmap(offset)) {
                bitmapWrites.incrementAndGet();
                durableBitmapWrites.incrementAndGet();
            }
            super.writeDurable(offset, src);
        }

        @Override
        public void flush() throws java.io.IOException {
            flushes.incrementAndGet();
            super.flush();
        }
    }

    /**
     * md's cost: a write that first touches a clean region sets its bit with one durable bitmap write per member
     * (FUA, no flush of what the member holds), and the region's later writes pay nothing; a sequential stream of
     * 4 KiB writes over 16 rows, 4 rows per bit, pays 4 bitmap writes per member, not 16 (or 128).
     */
    @Test
    void aSequentialStreamPaysOneDurableBitmapWritePerRegion() throws Exception {
        int rowsPerBit = 4;
        List<CountingMember> members = new ArrayList<>();
        for (int m = 0; m < 3; m++) {
            members.add(new CountingMember(new io.stripestack.blockdev.MemoryBlockDevice("c" + m, (int) MEMBER, 512)));
        }
        try (Raid5Array array = Raid5Array.create(members, CONFIG,
                Raid5Options.defaults().withBitmapChunkBytes((long) rowsPerBit * CHUNK), true)) {
            assertEquals(ConsistencyPolicy.BITMAP, array.consistencyPolicy());
            for (CountingMember m : members) {
                m.bitmapWrites.set(0);
                m.durableBitmapWrites.set(0);
                m.flushes.set(0);
            }
            int rowBytes = 2 * CHUNK;
            int regions = 4;
            byte[] data = new byte[regions * rowsPerBit * rowBytes];
            new Random(3).nextBytes(data);
            for (int off = 0; off < data.length; off += 4096) {
                array.write(off, ByteBuffer.wrap(data, off, 4096));
            }
            for (CountingMember m : members) {
                assertEquals(regions, m.bitmapWrites.get(), m.name() + ": one bitmap write per region touched");
                assertEquals(regions, m.durableBitmapWrites.get(), m.name() + ": each one durable by itself");
                assertEquals(0, m.flushes.get(), m.name() + ": setting a bit flushes nothing else");
            }
            byte[] got = new byte[data.length];
            array.read(0, ByteBuffer.wrap(got));
            assertArrayEquals(data, got);
        }
    }

    /** Flips one byte of the parity chunk of {@code row} directly on its member file. */
    static void corruptParity(List<Path> members, long row) throws Exception {
        int p = Raid5Layout.LEFT_SYMMETRIC.parityMember(row, members.size());
        try (BlockDevice d = FileBlockDevice.open(members.get(p), 512, false, false)) {
            long at = DATA_OFFSET + row * CHUNK;
            ByteBuffer sector = ByteBuffer.allocate(512);
            d.read(at, sector);
            sector.put(5, (byte) (sector.get(5) ^ 0x40));
            d.write(at, sector.flip());
        }
    }

    @Test
    void anUncleanStopResyncsOnlyTheRegionsBeingWritten() throws Exception {
        List<Path> paths = List.of(dir.resolve("m0"), dir.resolve("m1"), dir.resolve("m2"));
        int rowBytes = 2 * CHUNK;
        byte[] model;
        try (Raid5Array array = Raid5Files.create(paths, MEMBER, CONFIG,
                Raid5Options.defaults().withBitmapChunkBytes(CHUNK))) {
            model = new byte[(int) array.size()];
            new Random(1).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
        }
        String clean = examineBitmap(paths.get(0));
        assertEquals("6d746962", field(clean, "Magic"));
        assertEquals("4", field(clean, "Version"));
        assertEquals("16 KB", field(clean, "Chunksize").replace("KiB", "KB"));
        assertTrue(field(clean, "Bitmap").startsWith("192 bits (chunks), 0 dirty"), clean);
        assertEquals("8 sectors from superblock", field(examine(paths.get(0)), "Internal Bitmap"));

        // Open, write rows 10 and 11, and copy the members while the array is still open: the "crash".
        List<Path> crashed = new ArrayList<>();
        Raid5Array open = Raid5Files.assemble(paths, Raid5Options.defaults(), false);
        try {
            byte[] update = new byte[2 * rowBytes];
            new Random(2).nextBytes(update);
            open.write(10L * rowBytes, ByteBuffer.wrap(update));
            System.arraycopy(update, 0, model, 10 * rowBytes, update.length);
            for (Path p : paths) {
                Path copy = dir.resolve(p.getFileName() + ".crash");
                Files.copy(p, copy);
                crashed.add(copy);
            }
        } finally {
            open.close();
        }
        String dirty = examineBitmap(crashed.get(1));
        assertTrue(field(dirty, "Bitmap").startsWith("192 bits (chunks), 2 dirty"), dirty);
        assertEquals("active", field(examine(crashed.get(1)), "State"));

        // A torn write in the dirty region (row 10) and damage in a clean one (row 40): the resync fixes
        // the first and, visiting dirty regions only, never sees the second; check then finds it.
        corruptParity(crashed, 10);
        corruptParity(crashed, 40);
        try (Raid5Array array = Raid5Files.assemble(crashed, Raid5Options.defaults(), false)) {
            assertFalse(array.wasCleanAtOpen());
            assertTrue(array.awaitSyncIdle(30, TimeUnit.SECONDS));
            array.setSyncAction("check");
            assertTrue(array.awaitSyncIdle(30, TimeUnit.SECONDS));
            assertEquals(8, array.mismatchCount(), "only row 40's page is left");
            byte[] got = new byte[model.length];
            array.read(0, ByteBuffer.wrap(got));
            assertArrayEquals(model, got);
        }
        assertTrue(field(examineBitmap(crashed.get(0)), "Bitmap").startsWith("192 bits (chunks), 0 dirty"));
    }
}
