package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import org.junit.jupiter.api.Test;

/** A pooled write buffer never shows what the pool's memory held before. */
class WriteBuffersTest {
    @Test
    void aReusedPooledBufferComesBackZeroed() {
        PooledByteBufAllocator pool = new PooledByteBufAllocator(true);
        int length = 256 << 10;
        ByteBuf first = WriteBuffers.allocate(pool, length);
        long address = first.memoryAddress();
        for (int i = 0; i < length; i++) {
            first.setByte(i, 0xa5);
        }
        first.release();
        ByteBuf second = WriteBuffers.allocate(pool, length);
        try {
            assertEquals(address, second.memoryAddress(), "the pool handed out the same memory again");
            assertEquals(length, second.readableBytes());
            for (int i = 0; i < length; i++) {
                assertEquals(0, second.getByte(i), "byte " + i);
            }
        } finally {
            second.release();
        }
    }
}
