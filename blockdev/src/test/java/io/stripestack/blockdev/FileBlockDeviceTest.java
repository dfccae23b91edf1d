package io.stripestack.blockdev;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileBlockDeviceTest {
    @TempDir
    Path dir;

    @Test
    void writtenBytesReadBackAndAreCounted() throws Exception {
        try (FileBlockDevice dev = FileBlockDevice.create(dir.resolve("m0.img"), 1 << 20, 512)) {
            byte[] data = new byte[8192];
            new Random(7).nextBytes(data);
            dev.write(4096, ByteBuffer.wrap(data));
            ByteBuffer back = ByteBuffer.allocateDirect(8192);
            dev.read(4096, back);
            assertEquals(8192, back.position());
            byte[] got = new byte[8192];
            back.flip().get(got);
            assertArrayEquals(data, got);
            assertEquals(1, dev.stats().writeOps());
            assertEquals(8192, dev.stats().readBytes());
        }
    }

    @Test
    void rejectsUnalignedAndOutOfRange() throws Exception {
        try (FileBlockDevice dev = FileBlockDevice.create(dir.resolve("m1.img"), 1 << 20, 512)) {
            assertThrows(IllegalArgumentException.class, () -> dev.read(100, ByteBuffer.allocate(512)));
            assertThrows(IllegalArgumentException.class, () -> dev.read((1 << 20) - 512, ByteBuffer.allocate(1024)));
        }
    }

    @Test
    void aSecondWritableOpenOfTheSameFileIsRefused() throws Exception {
        Path file = dir.resolve("m2.img");
        try (FileBlockDevice first = FileBlockDevice.create(file, 1 << 20, 512)) {
            var e = assertThrows(java.io.IOException.class, () -> FileBlockDevice.open(file, 512, false, false));
            assertEquals(true, e.getMessage().contains("already in use"), e.getMessage());
        }
        FileBlockDevice.open(file, 512, false, false).close();
    }

    @Test
    void geometryShiftMovesAlignment() {
        Geometry stripe = new Geometry(64 << 10, 192 << 10, 0, 0);
        assertEquals((192 - 81) << 10, stripe.shiftedBy(81 << 10).alignmentOffset());
        assertEquals(0, stripe.shiftedBy(192 << 10).alignmentOffset());
        assertEquals(true, stripe.shiftedBy(64 << 10).isMinimumIoAligned());
        assertEquals(false, stripe.shiftedBy(64 << 10).isOptimalIoAligned());
    }
}
