package io.stripestack.blockdev;

import com.sun.nio.file.ExtendedOpenOption;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * A member disk: a regular file or a block device, accessed with positional {@link FileChannel} I/O
 * (pread/pwrite), so a write that returned is in the kernel's page cache and survives this process.
 *
 * <p>With {@code direct = true} the file is opened with O_DIRECT: buffers, offsets and lengths must
 * then be aligned to the file system's block (callers pass pooled direct buffers that are).
 *
 * <p>Concurrency: FileChannel positional reads and writes are safe from many threads at once and do not
 * serialise on the channel's position. No other state is mutable.
 */
public final class FileBlockDevice implements BlockDevice {
    private final Path path;
    private final FileChannel channel;
    private final long size;
    private final int blockSize;
    private final boolean readOnly;
    private final IoStats stats;

    private FileBlockDevice(Path path, FileChannel channel, long size, int blockSize, boolean readOnly) {
        this.path = path;
        this.channel = channel;
        this.size = size;
        this.blockSize = blockSize;
        this.readOnly = readOnly;
        this.stats = new IoStats(path.toString());
    }

    /** Opens an existing file or block device; its size is rounded down to the block. */
    public static FileBlockDevice open(Path path, int blockSize, boolean direct, boolean readOnly) throws IOException {
        if (!Files.exists(path)) {
            throw new java.nio.file.NoSuchFileException(path.toString(), null, "member file does not exist");
        }
        List<OpenOption> options = new ArrayList<>();
        options.add(StandardOpenOption.READ);
        if (!readOnly) {
            options.add(StandardOpenOption.WRITE);
        }
        if (direct) {
            options.add(ExtendedOpenOption.DIRECT);
        }
        FileChannel channel = FileChannel.open(path, options.toArray(new OpenOption[0]));
        try {
            lockExclusively(path, channel, readOnly);
            long size = channel.size();
            if (size == 0 && !Files.isRegularFile(path)) {
                // Block devices report 0 through size(); seeking to the end gives their capacity.
                try (var raf = new java.io.RandomAccessFile(path.toFile(), "r")) {
                    size = raf.length();
                }
            }
            return new FileBlockDevice(path, channel, size - size % blockSize, blockSize, readOnly);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    /**
     * Takes an advisory lock on the whole file, as md claims its members exclusively: two servers (or
     * two arrays) writing one member would corrupt it silently. Read-only opens take a shared lock.
     */
    private static void lockExclusively(Path path, FileChannel channel, boolean readOnly) throws IOException {
        java.nio.channels.FileLock lock;
        try {
            lock = channel.tryLock(0, Long.MAX_VALUE, readOnly);
        } catch (java.nio.channels.OverlappingFileLockException e) {
            lock = null;
        }
        if (lock == null) {
            throw new IOException(path + " is already in use (another stripestack process or another array or LUN"
                    + " of this one has it open); stop the other user or remove the file from one of the configurations");
        }
    }

    /** Creates (or truncates/extends) a sparse regular file of {@code size} bytes and opens it. */
    public static FileBlockDevice create(Path path, long size, int blockSize) throws IOException {
        if (size <= 0 || size % blockSize != 0) {
            throw new IllegalArgumentException("size " + size + " must be a positive multiple of " + blockSize);
        }
        Path parent = path.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.READ)) {
            if (ch.size() > size) {
                ch.truncate(size);
            } else if (ch.size() < size) {
                ch.write(ByteBuffer.allocate(1), size - 1);
            }
        }
        return open(path, blockSize, false, false);
    }

    public Path path() {
        return path;
    }

    @Override
    public String name() {
        return path.toString();
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public int logicalBlockSize() {
        return blockSize;
    }

    @Override
    public Geometry geometry() {
        return Geometry.simple(blockSize);
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        int length = dst.remaining();
        BlockDevice.checkRange(this, offset, length);
        long start = stats.startIo();
        try {
            long position = offset;
            while (dst.hasRemaining()) {
                int n = channel.read(dst, position);
                if (n < 0) {
                    throw new IOException(path + ": unexpected end of file at byte " + position);
                }
                position += n;
            }
        } catch (IOException | RuntimeException e) {
            stats.endFailed(start);
            throw e;
        }
        stats.endRead(start, length);
    }

    @Override
    public void write(long offset, ByteBuffer src) throws IOException {
        int length = src.remaining();
        BlockDevice.checkRange(this, offset, length);
        if (readOnly) {
            throw new IOException(path + " is open read-only");
        }
        long start = stats.startIo();
        try {
            long position = offset;
            while (src.hasRemaining()) {
                position += channel.write(src, position);
            }
        } catch (IOException | RuntimeException e) {
            stats.endFailed(start);
            throw e;
        }
        stats.endWrite(start, length);
    }

    @Override
    public void flush() throws IOException {
        stats.countFlush();
        if (!readOnly) {
            channel.force(false);
        }
    }

    @Override
    public IoStats stats() {
        return stats;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public String toString() {
        return "FileBlockDevice[" + path + ", " + size + " bytes]";
    }
}
