package io.stripestack.blockdev;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A byte-addressed block device: one layer of a LUN's stack (member file, RAID-5 array, crypto layer,
 * readahead stage). Each layer wraps the one below and knows nothing of the layers above.
 *
 * <p>Contract, for every implementation:
 * <ul>
 *   <li>Thread-safe: any number of threads may call {@link #read}, {@link #write}, {@link #flush} and
 *       {@link #discard} at once. Calls are synchronous; they run on I/O worker threads, never on a
 *       network event loop. A layer may fan a call out to threads of its own.</li>
 *   <li>{@code read(offset, dst)} fills {@code dst} from its position to its limit with the bytes at
 *       {@code offset}, and leaves the position at the limit. {@code write(offset, src)} stores
 *       {@code src}'s remaining bytes and leaves its position at the limit. No layer keeps a reference
 *       to the caller's buffer after the call returns, and a write never modifies the caller's bytes.</li>
 *   <li>Offsets and lengths are multiples of {@link #logicalBlockSize()}; {@code offset + length}
 *       never exceeds {@link #size()}. A violation throws {@link IllegalArgumentException} (the SCSI
 *       layer checks ranges itself and answers with sense data before calling).</li>
 *   <li>A returned write is in the layer's write-back cache at least; it is durable after a later
 *       {@link #flush()} returns. Member files are written with positional writes, so a write that
 *       returned survives the death of this process; flush makes it survive power loss.</li>
 *   <li>Failures: {@link MediumErrorException} when data cannot be read or written correctly (for
 *       example a RAID-5 array that lost two members); any other {@link IOException} for everything
 *       else. A layer never returns wrong data in place of an error.</li>
 * </ul>
 */
public interface BlockDevice extends Closeable {

    /** A short name for logs and statistics, e.g. {@code md0}, {@code crypt0}, {@code /data/m0.img}. */
    String name();

    /**
     * Size in bytes, a multiple of {@link #logicalBlockSize()}. It may grow at run time (an array reshaped onto
     * more members), never shrink; a layer above that derives its size from it learns of the change through
     * {@link #resized()}.
     */
    long size();

    /**
     * A device below grew: re-reads the size of the chain below and returns this device's size afterwards. A
     * layer that keeps its size in a field (the crypto layer, readahead) overrides it to recompute the field after
     * the layers below did theirs; the others' size already follows the device below.
     */
    default long resized() {
        BlockDevice b = below();
        if (b != null) {
            b.resized();
        }
        return size();
    }

    /** 512 or 4096. */
    int logicalBlockSize();

    /** I/O hints passed up the stack (chunk, stripe width, alignment, maximum transfer). */
    Geometry geometry();

    void read(long offset, ByteBuffer dst) throws IOException;

    void write(long offset, ByteBuffer src) throws IOException;

    /** Makes every write that returned before this call durable on every device below. */
    void flush() throws IOException;

    /**
     * A write that is durable when it returns, the others not necessarily (a disk's FUA write): what a log
     * needs before the writes it protects may go out. Devices that can make one write durable without
     * flushing everything written before override it; the default writes and flushes.
     */
    default void writeDurable(long offset, ByteBuffer src) throws IOException {
        write(offset, src);
        flush();
    }

    /** Whether {@link #discard} releases space or is at least accepted (UNMAP is offered only if so). */
    default boolean supportsDiscard() {
        return false;
    }

    /**
     * Tells the device the range's contents are no longer needed. After a discard the range reads as
     * zeros if {@link #discardZeroes()} says so, otherwise its contents are undefined but stable.
     */
    default void discard(long offset, long length) throws IOException {
        throw new UnsupportedOperationException(name() + " does not support discard");
    }

    /** Whether a discarded range reads back as zeros. */
    default boolean discardZeroes() {
        return false;
    }

    /** Counters of this layer (like /proc/diskstats plus the layer's own). Never null. */
    IoStats stats();

    /** The device directly below this one, or null for a leaf (a member file). */
    default BlockDevice below() {
        return null;
    }

    /** Checks that {@code [offset, offset + length)} is block-aligned and inside the device. */
    static void checkRange(BlockDevice device, long offset, long length) {
        int block = device.logicalBlockSize();
        if (offset < 0 || length < 0 || offset + length > device.size() || offset + length < 0) {
            throw new IllegalArgumentException(device.name() + ": range [" + offset + ", " + (offset + length)
                    + ") outside device of " + device.size() + " bytes");
        }
        if ((offset % block) != 0 || (length % block) != 0) {
            throw new IllegalArgumentException(device.name() + ": offset " + offset + " / length " + length
                    + " not a multiple of the " + block + "-byte block");
        }
    }
}
