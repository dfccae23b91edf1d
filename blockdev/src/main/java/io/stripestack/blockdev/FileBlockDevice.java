package io.stripestack.blockdev;

import com.sun.nio.file.ExtendedOpenOption;
import io.stripestack.secrets.FilePermissions;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A member disk: a regular file or a block device, accessed with positional {@link FileChannel} I/O
 * (pread/pwrite), so a write that returned is in the kernel's page cache and survives this process.
 *
 * <p>With {@code direct = true} the file is opened with O_DIRECT. The JDK then requires buffer addresses,
 * offsets and lengths aligned to the file system's block (4 KiB on ext4), while the layers above work in
 * 512-byte blocks. Requests that are not aligned, or whose buffer is not an aligned direct buffer (the
 * JDK's own substitute buffer for O_DIRECT fails to free on JDK 17), go through a per-thread aligned
 * bounce buffer covering the enclosing aligned range; an unaligned write reads the partial edge blocks
 * first (read-modify-write). Every write in direct mode holds the striped locks of the aligned blocks it
 * covers, in ascending order, so an edge read-modify-write never loses a concurrent write to the same
 * file-system block.
 *
 * <p>A durable write ({@link #writeDurable}, a log's FUA write) goes through a second channel opened with
 * O_DSYNC: that one write reaches the disk before it returns, without the fdatasync of every dirty page
 * of the file a flush would cost. In direct mode it is a write and a flush.
 *
 * <p>Concurrency: FileChannel positional reads and writes are safe from many threads at once and do not
 * serialise on the channel's position. The O_DSYNC channel is opened with the main one (a writable file
 * not in direct mode) and closed with it, on the same file: never reopened by path later, where it could
 * meet another file, or be left open after close. No other state is mutable.
 */
public final class FileBlockDevice extends MeteredBlockDevice {
    private static final Logger log = LoggerFactory.getLogger(FileBlockDevice.class);
    private final Path path;
    private final FileChannel channel;
    private final long size;
    private final int blockSize;
    private final boolean readOnly;
    /** 0 unless opened with O_DIRECT: then the alignment the kernel requires of buffer addresses. */
    private final int directAlignment;
    private static final ThreadLocal<ByteBuffer[]> BOUNCE = ThreadLocal.withInitial(() -> new ByteBuffer[1]);
    private static final int MAX_BOUNCE = 4 << 20;
    private static final int LOCK_STRIPES = 256;
    /** Direct mode only: write locks striped by aligned block index (see the class comment). */
    private final java.util.concurrent.locks.ReentrantLock[] blockLocks;
    /** The O_DSYNC channel of durable writes; null when read-only or direct (then a write and a flush). */
    private final FileChannel durableChannel;

    private FileBlockDevice(Path path, FileChannel channel, FileChannel durableChannel, long size, int blockSize,
            boolean readOnly, int directAlignment) {
        super(path.toString());
        this.path = path;
        this.channel = channel;
        this.durableChannel = durableChannel;
        this.size = size;
        this.blockSize = blockSize;
        this.readOnly = readOnly;
        this.directAlignment = directAlignment;
        this.blockLocks = directAlignment == 0 ? null : new java.util.concurrent.locks.ReentrantLock[LOCK_STRIPES];
        if (blockLocks != null) {
            for (int i = 0; i < LOCK_STRIPES; i++) {
                blockLocks[i] = new java.util.concurrent.locks.ReentrantLock();
            }
        }
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
        FileChannel durable = null;
        try {
            lockExclusively(path, channel, readOnly);
            warnIfOthersMayAccess(path);
            long size = channel.size();
            if (size == 0 && !Files.isRegularFile(path)) {
                // Block devices report 0 through size(); seeking to the end gives their capacity.
                try (var raf = new java.io.RandomAccessFile(path.toFile(), "r")) {
                    size = raf.length();
                }
            }
            int alignment = direct ? (int) Math.max(blockSize, Files.getFileStore(path).getBlockSize()) : 0;
            if (!readOnly && !direct) {
                durable = FileChannel.open(path, StandardOpenOption.WRITE, StandardOpenOption.DSYNC);
            }
            return new FileBlockDevice(path, channel, durable, size - size % blockSize, blockSize, readOnly, alignment);
        } catch (IOException | RuntimeException e) {
            // both channels close, and the first failure is the one reported
            for (FileChannel c : new FileChannel[] {durable, channel}) {
                try {
                    if (c != null) {
                        c.close();
                    }
                } catch (IOException closing) {
                    e.addSuppressed(closing);
                }
            }
            throw e;
        }
    }

    /** Data files hold tenants' data (plaintext, for unencrypted LUNs): one open to others is named at open. */
    private static void warnIfOthersMayAccess(Path path) {
        try {
            String problem = FilePermissions.sharedDataFileProblem(path);
            if (problem != null) {
                log.warn(problem);
            }
        } catch (IOException e) {
            log.debug("{}: permissions not readable: {}", path, e.toString());
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

    /** Opens {@code path} for writing, creating it mode 0600 (owner only) when it does not exist. */
    private static FileChannel openCreatingOwnerOnly(Path path) throws IOException {
        Set<OpenOption> options = Set.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.READ);
        try {
            return FileChannel.open(path, options, PosixFilePermissions.asFileAttribute(FilePermissions.OWNER_READ_WRITE));
        } catch (UnsupportedOperationException noPosix) {
            return FileChannel.open(path, options);
        }
    }

    /** Creates (or truncates/extends) a sparse regular file of {@code size} bytes and opens it. */
    public static FileBlockDevice create(Path path, long size, int blockSize) throws IOException {
        return create(path, size, blockSize, false);
    }

    /**
     * Creates (or truncates/extends) a regular file of {@code size} bytes and opens it. With {@code allocate}
     * every byte is written (zeros) first, so the file system has given the file all its blocks and a later
     * write cannot fail for want of space; the file system must have that much free space now, or this fails
     * naming the file, the space needed and the space free. Without it the file is sparse: blocks are taken
     * when first written, and a full file system then fails those writes (see {@link #write}).
     */
    public static FileBlockDevice create(Path path, long size, int blockSize, boolean allocate) throws IOException {
        if (size <= 0 || size % blockSize != 0) {
            throw new IllegalArgumentException("size " + size + " must be a positive multiple of " + blockSize);
        }
        Path parent = path.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        boolean existed = Files.exists(path);
        try (FileChannel ch = openCreatingOwnerOnly(path)) {
            if (ch.size() > size) {
                ch.truncate(size);
            }
            if (allocate) {
                requireFreeSpace(path.toAbsolutePath(), size - ch.size(), path.toString());
                ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 20);
                for (long at = 0; at < size; at += zeros.capacity()) {
                    zeros.clear().limit((int) Math.min(zeros.capacity(), size - at));
                    while (zeros.hasRemaining()) {
                        ch.write(zeros, at + zeros.position());
                    }
                }
                ch.force(true);
            } else if (ch.size() < size) {
                ch.write(ByteBuffer.allocate(1), size - 1);
            }
        } catch (IOException e) {
            if (!existed) {
                Files.deleteIfExists(path);
            }
            throw explained(path, e);
        }
        return open(path, blockSize, false, false);
    }

    /**
     * Fails, naming {@code what}, the bytes needed and the bytes free, unless the file system holding
     * {@code location} has {@code bytes} free for allocated files.
     */
    public static void requireFreeSpace(Path location, long bytes, String what) throws IOException {
        long free = Files.getFileStore(location).getUsableSpace();
        if (free < bytes) {
            throw new IOException(what + ": needs " + (bytes >> 20) + " MiB allocated, but its file system has "
                    + (free >> 20) + " MiB free; free space there, choose a smaller size, or create the file sparse"
                    + " (create_sparse: true) knowing that writes will fail once that file system is full");
        }
    }

    /**
     * {@code e}, or for a full file system an IOException that says so, names the file and what to do: the
     * JDK reports ENOSPC only as the message "No space left on device".
     */
    static IOException explained(Path path, IOException e) {
        String message = e.getMessage();
        if (message == null || !message.contains("No space left on device") || message.startsWith(path.toString())) {
            return e;
        }
        return new IOException(path + ": its file system is full (No space left on device); free space there or move"
                + " the file to a larger one. A sparse file takes its blocks when first written: create members"
                + " allocated (create_sparse: false, the default) so that writes cannot run out of space", e);
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
    protected void readBlocks(long offset, ByteBuffer dst) throws IOException {
        if (needsBounce(offset, dst)) {
            bouncedRead(offset, dst);
        } else {
            readFully(offset, dst);
        }
    }

    private void readFully(long offset, ByteBuffer dst) throws IOException {
        long position = offset;
        while (dst.hasRemaining()) {
            int n = channel.read(dst, position);
            if (n < 0) {
                throw new IOException(path + ": unexpected end of file at byte " + position);
            }
            position += n;
        }
    }

    private void writeFully(long offset, ByteBuffer src) throws IOException {
        long position = offset;
        while (src.hasRemaining()) {
            position += channel.write(src, position);
        }
    }

    private boolean needsBounce(long offset, ByteBuffer buffer) {
        return directAlignment != 0 && (!buffer.isDirect()
                || buffer.alignmentOffset(buffer.position(), directAlignment) != 0
                || buffer.remaining() % directAlignment != 0 || offset % directAlignment != 0);
    }

    private ByteBuffer bounce() {
        ByteBuffer[] holder = BOUNCE.get();
        if (holder[0] == null || holder[0].alignmentOffset(0, directAlignment) != 0) {
            holder[0] = ByteBuffer.allocateDirect(MAX_BOUNCE + directAlignment).alignedSlice(directAlignment);
        }
        return holder[0].clear();
    }

    /** Reads through the bounce buffer, piece by piece, each piece widened to aligned bounds. */
    private void bouncedRead(long offset, ByteBuffer dst) throws IOException {
        ByteBuffer bounce = bounce();
        long position = offset;
        while (dst.hasRemaining()) {
            long alignedStart = position - position % directAlignment;
            int lead = (int) (position - alignedStart);
            int piece = Math.min(dst.remaining(), MAX_BOUNCE - directAlignment);
            int span = roundUp(lead + piece);
            bounce.clear().limit(span);
            readFully(alignedStart, bounce);
            dst.put(bounce.position(lead).limit(lead + piece));
            position += piece;
        }
    }

    /** Writes through the bounce buffer, reading the partial edge blocks of each aligned span first. */
    private void bouncedWrite(long offset, ByteBuffer src) throws IOException {
        ByteBuffer bounce = bounce();
        long position = offset;
        while (src.hasRemaining()) {
            long alignedStart = position - position % directAlignment;
            int lead = (int) (position - alignedStart);
            int piece = Math.min(src.remaining(), MAX_BOUNCE - directAlignment);
            int span = roundUp(lead + piece);
            if (lead != 0) {
                readFully(alignedStart, bounce.clear().limit(directAlignment));
            }
            if ((lead + piece) % directAlignment != 0 && (span > directAlignment || lead == 0)) {
                readFully(alignedStart + span - directAlignment, bounce.clear().position(span - directAlignment).limit(span));
            }
            bounce.clear().position(lead);
            bounce.put(src.duplicate().limit(src.position() + piece));
            writeFully(alignedStart, bounce.position(0).limit(span));
            src.position(src.position() + piece);
            position += piece;
        }
    }

    private int roundUp(int bytes) {
        return (bytes + directAlignment - 1) / directAlignment * directAlignment;
    }

    /**
     * Locks the stripes of the aligned blocks in {@code [offset, offset + length)} in ascending stripe
     * order (no deadlock between writers). The stripes form one range modulo the stripe count, possibly
     * wrapping, so no set needs building.
     */
    private void lockBlocks(long offset, int length) {
        forEachStripe(offset, length, true);
    }

    private void unlockBlocks(long offset, int length) {
        forEachStripe(offset, length, false);
    }

    private void forEachStripe(long offset, int length, boolean lock) {
        long first = offset / directAlignment;
        long count = Math.min((offset + length - 1) / directAlignment - first + 1, LOCK_STRIPES);
        int start = (int) (first % LOCK_STRIPES);
        int end = (int) (start + count); // exclusive, may pass LOCK_STRIPES (wrap)
        if (end > LOCK_STRIPES) {
            stripeRange(0, end - LOCK_STRIPES, lock);
            stripeRange(start, LOCK_STRIPES, lock);
        } else {
            stripeRange(start, end, lock);
        }
    }

    private void stripeRange(int from, int to, boolean lock) {
        for (int i = from; i < to; i++) {
            if (lock) {
                blockLocks[i].lock();
            } else {
                blockLocks[i].unlock();
            }
        }
    }

    @Override
    protected void writeBlocks(long offset, ByteBuffer src) throws IOException {
        if (readOnly) {
            throw new IOException(path + " is open read-only");
        }
        int length = src.remaining();
        if (blockLocks != null) {
            lockBlocks(offset, length);
        }
        try {
            if (needsBounce(offset, src)) {
                bouncedWrite(offset, src);
            } else {
                writeFully(offset, src);
            }
        } catch (IOException e) {
            throw explained(path, e);
        } finally {
            if (blockLocks != null) {
                unlockBlocks(offset, length);
            }
        }
    }

    @Override
    protected void writeBlocksDurable(long offset, ByteBuffer src) throws IOException {
        if (durableChannel == null) {
            super.writeBlocksDurable(offset, src);
            return;
        }
        try {
            long position = offset;
            while (src.hasRemaining()) {
                position += durableChannel.write(src, position);
            }
        } catch (IOException e) {
            throw explained(path, e);
        }
    }

    @Override
    protected void flushDevice() throws IOException {
        if (!readOnly) {
            channel.force(false);
        }
    }

    @Override
    public void close() throws IOException {
        try {
            if (durableChannel != null) {
                durableChannel.close();
            }
        } finally {
            channel.close();
        }
    }

    @Override
    public String toString() {
        return "FileBlockDevice[" + path + ", " + size + " bytes]";
    }
}
