package io.stripestack.target.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledDirectByteBuf;
import io.netty.buffer.UnpooledHeapByteBuf;
import java.util.ArrayList;
import java.util.List;

/** Allocator for tests that remembers every buffer it hands out, to prove all were released. */
final class TrackingAllocator extends AbstractByteBufAllocator {
    private final List<ByteBuf> allocated = new ArrayList<>();

    TrackingAllocator() {
        super(false);
    }

    @Override
    protected synchronized ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
        ByteBuf b = new UnpooledHeapByteBuf(this, initialCapacity, maxCapacity);
        allocated.add(b);
        return b;
    }

    @Override
    protected synchronized ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
        ByteBuf b = new UnpooledDirectByteBuf(this, initialCapacity, maxCapacity);
        allocated.add(b);
        return b;
    }

    @Override
    public boolean isDirectBufferPooled() {
        return false;
    }

    /** Fails if any buffer handed out is still referenced. */
    synchronized void assertAllReleased() {
        int live = 0;
        for (ByteBuf b : allocated) {
            if (b.refCnt() != 0) {
                live++;
            }
        }
        assertEquals(0, live, "buffers still referenced out of " + allocated.size() + " allocated");
    }
}
