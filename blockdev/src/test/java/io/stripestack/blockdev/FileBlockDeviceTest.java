package io.stripestack.blockdev;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
    void directIoAcceptsHeapAndUnalignedBuffersThroughABounceBuffer() throws Exception {
        Path file = dir.resolve("direct.img");
        FileBlockDevice.create(file, 1 << 20, 512).close();
        try (FileBlockDevice dev = FileBlockDevice.open(file, 512, true, false)) {
            byte[] data = new byte[64 << 10];
            new Random(3).nextBytes(data);
            dev.write(8192, ByteBuffer.wrap(data));
            ByteBuffer odd = ByteBuffer.allocateDirect((64 << 10) + 1).position(1).slice();
            dev.read(8192, odd);
            byte[] got = new byte[data.length];
            odd.flip().get(got);
            assertArrayEquals(data, got);
            ByteBuffer heap = ByteBuffer.allocate(4096);
            dev.read(8192, heap);
            assertArrayEquals(java.util.Arrays.copyOf(data, 4096), heap.array());
        }
    }

    /**
     * 512-byte writes at unaligned offsets in direct mode from several threads, each thread owning
     * interleaved sectors of the same 4 KiB blocks: the edge read-modify-writes must not lose each
     * other's sectors.
     */
    @Test
    void unalignedDirectWritesFromManyThreadsLoseNothing() throws Exception {
        Path file = dir.resolve("direct-rmw.img");
        FileBlockDevice.create(file, 1 << 20, 512).close();
        int threads = 4;
        int sectors = 32;
        try (FileBlockDevice dev = FileBlockDevice.open(file, 512, true, false)) {
            java.util.List<Thread> workers = new java.util.ArrayList<>();
            java.util.concurrent.atomic.AtomicReference<Throwable> error = new java.util.concurrent.atomic.AtomicReference<>();
            for (int t = 0; t < threads; t++) {
                final int owner = t;
                Thread w = new Thread(() -> {
                    try {
                        byte[] sector = new byte[512];
                        for (int round = 0; round < 200; round++) {
                            for (int s = owner; s < sectors; s += threads) {
                                java.util.Arrays.fill(sector, (byte) (s * 7 + round));
                                dev.write(s * 512L + 512, ByteBuffer.wrap(sector));
                            }
                        }
                    } catch (Throwable e) {
                        error.set(e);
                    }
                });
                workers.add(w);
                w.start();
            }
            for (Thread w : workers) {
                w.join();
            }
            if (error.get() != null) {
                throw new AssertionError(error.get());
            }
            ByteBuffer all = ByteBuffer.allocate(sectors * 512);
            dev.read(512, all);
            for (int s = 0; s < sectors; s++) {
                for (int i = 0; i < 512; i++) {
                    assertEquals((byte) (s * 7 + 199), all.get(s * 512 + i), "sector " + s + " byte " + i);
                }
            }
        }
    }

    @Test
    void geometryShiftMovesAlignment() {
        Geometry stripe = new Geometry(64 << 10, 192 << 10, 0, 0);
        assertEquals((192 - 81) << 10, stripe.shiftedBy(81 << 10).alignmentOffset());
        assertEquals(0, stripe.shiftedBy(192 << 10).alignmentOffset());
        assertEquals(true, stripe.shiftedBy(64 << 10).isMinimumIoAligned());
        assertEquals(false, stripe.shiftedBy(64 << 10).isOptimalIoAligned());
    }

    /** An allocated file has every block before it is used: the file system reports it fully allocated. */
    @Test
    void anAllocatedFileHasAllItsBlocksAndASparseOneDoesNot() throws Exception {
        long size = 8L << 20;
        try (FileBlockDevice allocated = FileBlockDevice.create(dir.resolve("allocated.img"), size, 512, true);
             FileBlockDevice sparse = FileBlockDevice.create(dir.resolve("sparse.img"), size, 512, false)) {
            assertEquals(size, allocated.size());
            assertEquals(size, sparse.size());
            assertTrue(allocatedBytes(dir.resolve("allocated.img")) >= size, "allocated file is sparse");
            assertTrue(allocatedBytes(dir.resolve("sparse.img")) < size / 2, "sparse file was allocated");
            byte[] zeros = new byte[4096];
            byte[] got = new byte[4096];
            allocated.read(size - 4096, ByteBuffer.wrap(got));
            assertArrayEquals(zeros, got, "an allocated file reads as zeros");
        }
    }

    /** Too little free space for an allocated file: refused before writing, naming the file and the space. */
    @Test
    void anAllocatedFileLargerThanTheFreeSpaceIsRefusedUpFront() throws Exception {
        Path file = dir.resolve("huge.img");
        long free = java.nio.file.Files.getFileStore(dir).getUsableSpace();
        long size = (free + (1L << 30)) / 512 * 512;
        java.io.IOException e = assertThrows(java.io.IOException.class, () -> FileBlockDevice.create(file, size, 512, true));
        assertTrue(e.getMessage().startsWith(file.toString()) && e.getMessage().contains("MiB free"), e.getMessage());
        assertFalse(java.nio.file.Files.exists(file), "the refused file was left behind");
    }

    /** The JDK reports a full file system only as a message: it becomes one that names the file and the fix. */
    @Test
    void aFullFileSystemIsExplainedNamingTheFile() {
        Path file = dir.resolve("member0.img");
        java.io.IOException enospc = new java.io.IOException("No space left on device");
        java.io.IOException explained = FileBlockDevice.explained(file, enospc);
        assertTrue(explained.getMessage().startsWith(file + ": its file system is full"), explained.getMessage());
        assertTrue(explained.getMessage().contains("create_sparse: false"), explained.getMessage());
        assertSame(enospc, explained.getCause());
        java.io.IOException other = new java.io.IOException("Input/output error");
        assertSame(other, FileBlockDevice.explained(file, other), "other errors pass unchanged");
    }

    /** Bytes the file system allocated to {@code file} ({@code stat}: blocks times block size). */
    private static long allocatedBytes(Path file) throws Exception {
        Process p = new ProcessBuilder("stat", "-c", "%b %B", file.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII).trim();
        assertEquals(0, p.waitFor(), out);
        String[] parts = out.split(" ");
        return Long.parseLong(parts[0]) * Long.parseLong(parts[1]);
    }

    @Test
    void dataFilesAreCreatedOwnerOnlyAndExistingOnesOpenToOthersAreNamed() throws Exception {
        Path created = dir.resolve("member.img");
        try (FileBlockDevice device = FileBlockDevice.create(created, 1 << 20, 512, true)) {
            assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(
                    java.nio.file.Files.getPosixFilePermissions(created)));
        }
        Path shared = dir.resolve("shared.img");
        java.nio.file.Files.write(shared, new byte[4096]);
        java.nio.file.Files.setPosixFilePermissions(shared, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        java.io.PrintStream original = System.err;
        java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(captured, true, java.nio.charset.StandardCharsets.UTF_8));
        try (FileBlockDevice device = FileBlockDevice.open(shared, 512, false, false)) {
            assertEquals(4096, device.size());
        } finally {
            System.setErr(original);
        }
        String log = captured.toString(java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(log.contains("chmod 600 " + shared), log);
    }
}
