package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.stripestack.iscsi.proto.Crc32cDigest;
import java.nio.ByteBuffer;

/**
 * The shared {@link Crc32cDigest} over regions of Netty buffers, read in place through their NIO views (a
 * composite buffer part by part), so no byte is copied.
 *
 * <p>Not thread-safe: each codec handler keeps its own instance on its channel's event loop.
 */
final class ByteBufDigest {
    private final Crc32cDigest crc = new Crc32cDigest();

    /** CRC32C of {@code length} bytes at {@code index}, followed by {@code padding} zero bytes. */
    int compute(ByteBuf buf, int index, int length, int padding) {
        crc.start();
        if (length > 0) {
            if (buf.nioBufferCount() == 1) {
                crc.add(buf.nioBuffer(index, length));
            } else {
                for (ByteBuffer part : buf.nioBuffers(index, length)) {
                    crc.add(part);
                }
            }
        }
        crc.addZeroPadding(padding);
        return crc.value();
    }
}
