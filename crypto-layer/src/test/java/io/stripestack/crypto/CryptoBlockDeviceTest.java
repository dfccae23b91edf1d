package io.stripestack.crypto;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.testkit.FaultInjectingBlockDevice;
import io.stripestack.testkit.GrowableBlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CryptoBlockDeviceTest {
    private static final int MIB = 1024 * 1024;

    @TempDir
    Path dir;

    private static SectorCipher cipher(String spec, int keyBytes, int sectorSize, boolean ivLarge, long seed) {
        byte[] key = new byte[keyBytes];
        new Random(seed).nextBytes(key);
        return SectorCipher.create(CryptSpec.parse(spec), key, sectorSize, ivLarge);
    }

    /**
     * Four threads each own a quarter of the device and do random reads and writes (some large enough to be
     * split across cores, some beyond the write buffer) against a plaintext model; afterwards the whole
     * device reads back as the model, and the bytes below decrypt, with the documented offset/skip
     * arithmetic and an independent cipher, to the model too.
     */
    /**
     * When the device below grows, a payload that reaches to its end grows with it (cryptsetup resize) and keeps
     * its sectors; a fixed-length payload (a LUKS2 segment with a size) stays as long as it is.
     */
    @Test
    void aDynamicPayloadGrowsWithTheDeviceBelowAndAFixedOneDoesNot() throws Exception {
        GrowableBlockDevice dynamicBelow = new GrowableBlockDevice("dyn", MIB, 4 * MIB);
        GrowableBlockDevice fixedBelow = new GrowableBlockDevice("fixed", MIB, 4 * MIB);
        try (CryptoBlockDevice dynamic = new CryptoBlockDevice("crypt-dyn", dynamicBelow,
                     cipher("aes-xts-plain64", 64, 512, false, 3), 8, 0, false);
             CryptoBlockDevice fixed = new CryptoBlockDevice("crypt-fixed", fixedBelow,
                     cipher("aes-xts-plain64", 64, 512, false, 3), 8, 0, false, MIB / 2)) {
            assertEquals(MIB - 8 * 512, dynamic.size());
            assertEquals(MIB / 2, fixed.size());
            ByteBuffer last = ByteBuffer.allocate(512);
            new Random(9).nextBytes(last.array());
            dynamic.write(dynamic.size() - 512, last.duplicate());
            dynamicBelow.grow(3 * MIB);
            fixedBelow.grow(3 * MIB);
            assertEquals(3 * MIB - 8 * 512, dynamic.resized());
            assertEquals(3 * MIB - 8 * 512, dynamic.size());
            assertEquals(MIB / 2, fixed.resized());
            ByteBuffer back = ByteBuffer.allocate(512);
            dynamic.read(MIB - 8 * 512 - 512, back);
            assertArrayEquals(last.array(), back.array(), "the old last sector keeps its IV after the growth");
            dynamic.write(dynamic.size() - 512, last.duplicate());
            assertThrows(IllegalArgumentException.class, () -> fixed.write(MIB / 2, ByteBuffer.allocate(512)));
        }
        IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class, () -> new CryptoBlockDevice(
                "crypt-long", new MemoryBlockDevice("small", MIB, 512), cipher("aes-xts-plain64", 64, 512, false, 3),
                8, 0, false, MIB));
        assertTrue(tooLong.getMessage().contains("reaches past the end"), tooLong.getMessage());
    }

    @Test
    void concurrentRandomIoOverFileRoundTrips() throws Exception {
        BlockDevice below = FileBlockDevice.create(dir.resolve("below.img"), 24L * MIB, 512);
        roundTrip(below, "aes-xts-plain64", 64, 4096, false, 2048, 5);
    }

    @Test
    void concurrentRandomIoOverMemoryWithMisalignedOffsetRoundTrips() throws Exception {
        BlockDevice below = new MemoryBlockDevice("mem", 24 * MIB, 512);
        roundTrip(below, "aes-cbc-essiv:sha256", 32, 512, false, 162, 7);
    }

    @Test
    void largeSectorsWithIvLargeSectorsRoundTrip() throws Exception {
        BlockDevice below = new MemoryBlockDevice("mem", 24 * MIB, 4096);
        roundTrip(below, "aes-cbc-plain64", 16, 4096, true, 8, 16);
    }

    private void roundTrip(BlockDevice below, String spec, int keyBytes, int sectorSize, boolean ivLarge,
                           long offsetSectors, long skipSectors) throws Exception {
        byte[] key = new byte[keyBytes];
        new Random(1).nextBytes(key);
        try (CryptoBlockDevice crypt = new CryptoBlockDevice("crypt0", below,
                SectorCipher.create(CryptSpec.parse(spec), key, sectorSize, ivLarge), offsetSectors, skipSectors, false)) {
            long size = crypt.size();
            assertEquals((below.size() - offsetSectors * 512) / sectorSize * sectorSize, size);
            byte[] model = new byte[(int) size];
            new Random(2).nextBytes(model); // unwritten sectors would read as decrypted zeros, i.e. noise
            crypt.write(0, ByteBuffer.wrap(model));
            int threads = 4;
            int region = (int) (size / threads / sectorSize * sectorSize);
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int base = t * region;
                long seed = t;
                done.add(pool.submit(() -> {
                    randomIo(crypt, model, base, region, sectorSize, new Random(seed));
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
            pool.shutdown();

            ByteBuffer all = ByteBuffer.allocateDirect((int) size);
            crypt.read(0, all);
            byte[] back = new byte[(int) size];
            all.get(0, back);
            assertArrayEquals(model, back, "whole device after concurrent I/O");

            ByteBuffer raw = ByteBuffer.allocate((int) size);
            below.read(offsetSectors * 512, raw);
            try (SectorCipher independent = SectorCipher.create(CryptSpec.parse(spec), key, sectorSize, ivLarge)) {
                independent.decrypt(raw.flip(), skipSectors);
            }
            assertArrayEquals(model, raw.array(), "ciphertext below decrypts at payload offset with IV skip");

            long sectors = crypt.stats().layerCounter("sectors_encrypted");
            assertTrue(sectors > 0);
            assertEquals(crypt.stats().writeBytes() / sectorSize, sectors);
            assertEquals(crypt.stats().readBytes() / sectorSize, crypt.stats().layerCounter("sectors_decrypted"));
        }
    }

    private static void randomIo(BlockDevice crypt, byte[] model, int base, int region, int sectorSize, Random random)
            throws Exception {
        int maxSectors = region / sectorSize;
        for (int op = 0; op < 40; op++) {
            int sectors = switch (random.nextInt(10)) {
                case 0 -> Math.min(maxSectors, (5 * MIB) / sectorSize); // beyond the 4 MiB write buffer
                case 1, 2 -> Math.min(maxSectors, 1 + random.nextInt((512 * 1024) / sectorSize)); // split across cores
                default -> 1 + random.nextInt(Math.min(maxSectors, 16));
            };
            int at = base + random.nextInt(maxSectors - sectors + 1) * sectorSize;
            int length = sectors * sectorSize;
            ByteBuffer buf = random.nextBoolean() ? ByteBuffer.allocateDirect(length) : ByteBuffer.allocate(length);
            if (random.nextInt(3) == 0) {
                crypt.read(at, buf);
                assertEquals(buf.limit(), buf.position(), "read leaves position at limit");
                byte[] got = new byte[length];
                buf.get(0, got);
                byte[] want = new byte[length];
                System.arraycopy(model, at, want, 0, length);
                assertArrayEquals(want, got, "read at " + at);
            } else {
                byte[] data = new byte[length];
                random.nextBytes(data);
                buf.put(data).flip();
                crypt.write(at, buf);
                assertEquals(buf.limit(), buf.position(), "write leaves position at limit");
                byte[] after = new byte[length];
                buf.get(0, after);
                assertArrayEquals(data, after, "write must not modify the caller's buffer");
                System.arraycopy(data, 0, model, at, length);
            }
        }
    }

    @Test
    void misalignedIoIsRefusedNamingTheSectorSize() throws Exception {
        try (CryptoBlockDevice crypt = new CryptoBlockDevice("crypt0", new MemoryBlockDevice("mem", MIB, 512),
                cipher("aes-xts-plain64", 64, 4096, true, 2), 0, 0, false)) {
            assertEquals(4096, crypt.logicalBlockSize());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> crypt.write(512, ByteBuffer.allocate(4096)));
            assertTrue(e.getMessage().contains("4096-byte crypto sector"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> crypt.read(0, ByteBuffer.allocate(1024)));
            assertThrows(IllegalArgumentException.class, () -> crypt.read(crypt.size(), ByteBuffer.allocate(4096)));
        }
    }

    @Test
    void refusesConfigurationsThatCannotWork() {
        MemoryBlockDevice fourK = new MemoryBlockDevice("mem4k", MIB, 4096);
        IllegalArgumentException small = assertThrows(IllegalArgumentException.class,
                () -> new CryptoBlockDevice("c", fourK, cipher("aes-cbc-plain64", 32, 512, false, 3), 0, 0, false));
        assertTrue(small.getMessage().contains("use sector size 4096"), small.getMessage());
        IllegalArgumentException offset = assertThrows(IllegalArgumentException.class,
                () -> new CryptoBlockDevice("c", fourK, cipher("aes-cbc-plain64", 32, 4096, false, 3), 3, 0, false));
        assertTrue(offset.getMessage().contains("multiple of 8 sectors"), offset.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> new CryptoBlockDevice("c", fourK, cipher("aes-cbc-plain64", 32, 4096, true, 3), 8, 3, false));
        assertThrows(IllegalArgumentException.class,
                () -> new CryptoBlockDevice("c", fourK, cipher("aes-cbc-plain64", 32, 4096, false, 3), 2048, 0, false));
    }

    @Test
    void geometryShiftsByThePayloadOffset() {
        // RAID-5 over 4 members, 64 KiB chunks: io_min 64 KiB, io_opt 192 KiB
        Geometry raid = new Geometry(64 * 1024, 192 * 1024, 0, 1024 * 1024);
        StripedTestDevice below = new StripedTestDevice(8 * MIB, 512, raid);
        CryptoBlockDevice aligned = new CryptoBlockDevice("c", below, cipher("aes-xts-plain64", 64, 4096, false, 4),
                384, 0, false); // 192 KiB
        assertEquals(new Geometry(64 * 1024, 192 * 1024, 0, 1024 * 1024), aligned.geometry());

        CryptoBlockDevice misaligned = new CryptoBlockDevice("c", below, cipher("aes-xts-plain64", 64, 4096, false, 4),
                162, 0, false); // 81 KiB, the misalignment the md RAID-5 + dm-crypt thread measured
        Geometry g = misaligned.geometry();
        assertFalse(g.isOptimalIoAligned());
        assertEquals(192 * 1024 - 81 * 1024, g.alignmentOffset());
        assertEquals(384 * 512, CryptoBlockDevice.alignedPayloadStart(raid, 162 * 512));
        assertEquals(0, CryptoBlockDevice.alignedPayloadStart(raid, 0));
        assertEquals(3 * 192 * 1024, CryptoBlockDevice.alignedPayloadStart(raid, 2 * 192 * 1024 + 512));
    }

    @Test
    void misalignmentIsLoggedWithTheAligningOffset() {
        Geometry raid = new Geometry(64 * 1024, 192 * 1024, 0, 0);
        java.io.PrintStream stderr = System.err;
        java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(captured, true));
        try {
            new CryptoBlockDevice("crypt9", new StripedTestDevice(4 * MIB, 512, raid),
                    cipher("aes-xts-plain64", 64, 4096, false, 4), 162, 0, false);
        } finally {
            System.setErr(stderr);
        }
        String log = captured.toString();
        assertTrue(log.contains("crypt9: payload offset 162 sectors") && log.contains("misaligned")
                && log.contains("Use offset 384 sectors"), log);
    }

    @Test
    void geometryNeverGoesBelowTheCryptoSector() {
        Geometry g = CryptoBlockDevice.geometryAbove(Geometry.simple(512), 0, 4096);
        assertEquals(new Geometry(4096, 4096, 0, 0), g);
    }

    @Test
    void discardsPassOnlyWhenAllowed() throws Exception {
        MemoryBlockDevice below = new MemoryBlockDevice("mem", MIB, 512);
        CryptoBlockDevice closed = new CryptoBlockDevice("c", below, cipher("aes-cbc-plain64", 32, 512, false, 5), 8, 0, false);
        assertFalse(closed.supportsDiscard());
        assertThrows(UnsupportedOperationException.class, () -> closed.discard(0, 512));
        CryptoBlockDevice open = new CryptoBlockDevice("c", below, cipher("aes-cbc-plain64", 32, 512, false, 5), 8, 0, true);
        assertTrue(open.supportsDiscard());
        assertFalse(open.discardZeroes());
        below.write(8 * 512, ByteBuffer.wrap(new byte[512]).put(0, (byte) 1));
        open.discard(0, 512);
        ByteBuffer raw = ByteBuffer.allocate(512);
        below.read(8 * 512, raw);
        assertArrayEquals(new byte[512], raw.array(), "discard reached the payload sector below");
    }

    @Test
    void errorsBelowPropagateAndAreCounted() throws Exception {
        FaultInjectingBlockDevice below = new FaultInjectingBlockDevice(new MemoryBlockDevice("mem", MIB, 512));
        try (CryptoBlockDevice crypt = new CryptoBlockDevice("c", below, cipher("aes-xts-plain64", 64, 512, false, 7), 0, 0, false)) {
            byte[] data = new byte[8192];
            new Random(8).nextBytes(data);
            crypt.write(0, ByteBuffer.wrap(data));
            below.failNow();
            assertThrows(IOException.class, () -> crypt.read(0, ByteBuffer.allocate(8192)));
            assertThrows(IOException.class, () -> crypt.write(0, ByteBuffer.allocate(8192)));
            assertThrows(IOException.class, crypt::flush);
            assertEquals(2, crypt.stats().errors());
            assertEquals(0, crypt.stats().inFlight());
            below.heal();
            ByteBuffer back = ByteBuffer.allocate(8192);
            crypt.read(0, back);
            assertArrayEquals(data, back.array(), "the failed write never reached the device below");
        }
    }

    @Test
    void closeZeroesTheKeyAndClosesBelow() throws Exception {
        MemoryBlockDevice below = new MemoryBlockDevice("mem", MIB, 512);
        CryptoBlockDevice crypt = new CryptoBlockDevice("c", below, cipher("aes-cbc-plain64", 32, 512, false, 6), 0, 0, false);
        crypt.write(0, ByteBuffer.allocate(512));
        crypt.close();
        assertThrows(IllegalStateException.class, () -> crypt.write(0, ByteBuffer.allocate(512)));
    }
}
