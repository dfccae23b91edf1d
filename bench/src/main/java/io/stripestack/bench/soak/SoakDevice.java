package io.stripestack.bench.soak;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.initiator.IscsiInitiator;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * What the soak writes to and reads from: a BlockDevice chain in this process, or a LUN behind an iSCSI
 * session. Thread-safe: the soak's workers call it concurrently. Reads fill {@code dst} from position to limit;
 * writes store {@code src}'s remaining bytes; offsets are byte offsets, multiples of 4 KiB.
 */
public interface SoakDevice extends Closeable {
    String description();

    long size();

    int logicalBlockSize();

    void read(long offset, ByteBuffer dst) throws IOException;

    void write(long offset, ByteBuffer src) throws IOException;

    /** Makes every acknowledged write durable (SYNCHRONIZE CACHE / BlockDevice.flush). */
    void flush() throws IOException;

    /** False once the device can no longer be used at all (an iSCSI connection that is gone). */
    default boolean usable() {
        return true;
    }

    /** The top of an in-process chain; {@code owner} is closed with it (the in-process server, or nothing). */
    static SoakDevice of(BlockDevice device, String description, Closeable owner) {
        return new SoakDevice() {
            @Override
            public String description() {
                return description;
            }

            @Override
            public long size() {
                return device.size();
            }

            @Override
            public int logicalBlockSize() {
                return device.logicalBlockSize();
            }

            @Override
            public void read(long offset, ByteBuffer dst) throws IOException {
                device.read(offset, dst);
            }

            @Override
            public void write(long offset, ByteBuffer src) throws IOException {
                device.write(offset, src);
            }

            @Override
            public void flush() throws IOException {
                device.flush();
            }

            @Override
            public void close() throws IOException {
                if (owner != null) {
                    owner.close();
                }
            }
        };
    }

    /** A LUN through {@code session}; closing logs out. */
    static SoakDevice of(IscsiInitiator session) {
        int block = session.capacity().blockSize();
        return new SoakDevice() {
            @Override
            public String description() {
                return session.toString();
            }

            @Override
            public long size() {
                return session.capacity().bytes();
            }

            @Override
            public int logicalBlockSize() {
                return block;
            }

            @Override
            public void read(long offset, ByteBuffer dst) throws IOException {
                session.read16(offset / block, dst);
            }

            @Override
            public void write(long offset, ByteBuffer src) throws IOException {
                session.write16(offset / block, src);
                src.position(src.limit());
            }

            @Override
            public void flush() throws IOException {
                session.synchronizeCache16();
            }

            @Override
            public boolean usable() {
                return session.isConnected();
            }

            @Override
            public void close() throws IOException {
                if (session.isConnected()) {
                    try {
                        session.logout();
                        return;
                    } catch (IOException e) {
                        // the session is closed below either way
                    }
                }
                session.close();
            }
        };
    }
}
