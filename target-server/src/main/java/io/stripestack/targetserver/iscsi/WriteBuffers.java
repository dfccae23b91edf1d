package io.stripestack.targetserver.iscsi;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * Data-Out buffers. They come from the pooled allocator, whose memory last held another session's
 * data (possibly another tenant's plaintext), so each is zeroed before use. The connection's
 * byte accounting already keeps a command whose data did not all arrive from ever reaching a LUN;
 * zeroing makes sure that, whatever else goes wrong, no other session's bytes can.
 */
final class WriteBuffers {
    private WriteBuffers() {
    }

    /** A zero-filled direct buffer of exactly {@code length} bytes, readable from 0 to {@code length}. */
    static ByteBuf allocate(ByteBufAllocator allocator, int length) {
        ByteBuf buffer = allocator.directBuffer(length, length);
        buffer.setZero(0, length);
        buffer.writerIndex(length);
        return buffer;
    }
}
