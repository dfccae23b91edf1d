package io.stripestack.blockdev;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The request plumbing every layer shares, in one place: {@link #read} and {@link #write} check the
 * request ({@link #checkRequest}: block-aligned and inside the device, plus a layer's own rules), time
 * it and count it in {@link #stats()} (a failure as a failure), {@link #flush} and {@link #discard}
 * count theirs. A layer implements only what it does with the bytes.
 *
 * <p>Concurrency: as the contract says, every method may be called by many threads at once; the
 * counters are thread-safe, and a subclass documents its own state.
 */
public abstract class MeteredBlockDevice implements BlockDevice {
    protected final IoStats stats;

    protected MeteredBlockDevice(String statsName) {
        this.stats = new IoStats(statsName);
    }

    @Override
    public final void read(long offset, ByteBuffer dst) throws IOException {
        int length = dst.remaining();
        checkRequest(offset, length);
        long start = stats.startIo();
        try {
            readBlocks(offset, dst);
        } catch (IOException | RuntimeException e) {
            stats.endFailed(start);
            throw e;
        }
        stats.endRead(start, length);
    }

    @Override
    public final void write(long offset, ByteBuffer src) throws IOException {
        countedWrite(offset, src, false);
    }

    @Override
    public final void writeDurable(long offset, ByteBuffer src) throws IOException {
        countedWrite(offset, src, true);
        stats.countFlush();
    }

    private void countedWrite(long offset, ByteBuffer src, boolean durable) throws IOException {
        int length = src.remaining();
        checkRequest(offset, length);
        long start = stats.startIo();
        try {
            if (durable) {
                writeBlocksDurable(offset, src);
            } else {
                writeBlocks(offset, src);
            }
        } catch (IOException | RuntimeException e) {
            stats.endFailed(start);
            throw e;
        }
        stats.endWrite(start, length);
    }

    @Override
    public final void flush() throws IOException {
        stats.countFlush();
        flushDevice();
    }

    @Override
    public final void discard(long offset, long length) throws IOException {
        checkRequest(offset, length);
        discardBlocks(offset, length);
        stats.countDiscard(length);
    }

    @Override
    public final IoStats stats() {
        return stats;
    }

    /** Refuses a request outside the device or not block-aligned; a layer with more rules adds them. */
    protected void checkRequest(long offset, long length) throws IOException {
        BlockDevice.checkRange(this, offset, length);
    }

    /** Fills {@code dst}'s remaining bytes from {@code offset} (already checked). */
    protected abstract void readBlocks(long offset, ByteBuffer dst) throws IOException;

    /** Writes {@code src}'s remaining bytes at {@code offset} (already checked); never keeps {@code src}. */
    protected abstract void writeBlocks(long offset, ByteBuffer src) throws IOException;

    protected abstract void flushDevice() throws IOException;

    /** {@link #writeDurable} after the checks: by default the write, then a flush. */
    protected void writeBlocksDurable(long offset, ByteBuffer src) throws IOException {
        writeBlocks(offset, src);
        flushDevice();
    }

    /** Discards a checked range; a device that offers discard overrides this and {@link #supportsDiscard}. */
    protected void discardBlocks(long offset, long length) throws IOException {
        throw new UnsupportedOperationException(name() + " does not support discard");
    }
}
