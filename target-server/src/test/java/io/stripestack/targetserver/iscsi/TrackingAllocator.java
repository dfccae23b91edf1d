package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledDirectByteBuf;
import io.netty.buffer.UnpooledHeapByteBuf;
import java.util.ArrayList;
import java.util.List;

/**
 * Allocator for tests that remembers every buffer it hands out, to prove all were released, and the
 * most direct-buffer bytes ever live at once (live bytes only grow at an allocation, so measuring
 * there catches the peak).
 */
final class TrackingAllocator extends AbstractByteBufAllocator {
    private final List<ByteBuf> allocated = new ArrayList<>();
    private long peakLiveDirectBytes;

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
        long live = 0;
        for (ByteBuf a : allocated) {
            if (a.isDirect() && a.refCnt() != 0) {
                live += a.capacity();
            }
        }
        peakLiveDirectBytes = Math.max(peakLiveDirectBytes, live);
        return b;
    }

    synchronized long peakLiveDirectBytes() {
        return peakLiveDirectBytes;
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
