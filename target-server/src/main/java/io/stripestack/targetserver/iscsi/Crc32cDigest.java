package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * CRC32C header and data digests (RFC 7143 section 13.1, appendix B), computed over ByteBuf
 * regions without copying. The 32-bit digest travels least significant byte first.
 *
 * <p>Not thread-safe: each codec handler keeps its own instance on its channel's event loop.
 */
final class Crc32cDigest {
    static final int LENGTH = 4;
    private static final byte[] ZERO_PAD = new byte[3];

    private final CRC32C crc = new CRC32C();

    /** CRC32C of {@code length} bytes at {@code index}, followed by {@code padding} zero bytes. */
    int compute(ByteBuf buf, int index, int length, int padding) {
        crc.reset();
        if (length > 0) {
            if (buf.nioBufferCount() == 1) {
                crc.update(buf.nioBuffer(index, length));
            } else {
                for (ByteBuffer part : buf.nioBuffers(index, length)) {
                    crc.update(part);
                }
            }
        }
        if (padding > 0) {
            crc.update(ZERO_PAD, 0, padding);
        }
        return (int) crc.getValue();
    }
}
