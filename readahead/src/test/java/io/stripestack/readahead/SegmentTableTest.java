package io.stripestack.readahead;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class SegmentTableTest {
    @Test
    void behavesLikeAMapWithSparseKeys() {
        // Few distinct keys with colliding low bits stress probe runs and backward shifts.
        check(64, random -> random.nextInt(256) * 1024L + random.nextInt(3));
    }

    @Test
    void behavesLikeAMapWithTheDenseKeysOfOneDevice() {
        // Segment numbers of a small device, half of which fit: the shape of the concurrency test.
        check(32, random -> random.nextInt(64));
        check(5, random -> random.nextInt(12));
    }

    private static void check(int capacity, java.util.function.ToLongFunction<Random> keys) {
        SegmentTable table = new SegmentTable(capacity);
        Map<Long, Segment> model = new HashMap<>();
        Random random = new Random(42);
        for (int step = 0; step < 200_000; step++) {
            long key = keys.applyAsLong(random);
            if (model.containsKey(key) || model.size() == capacity) {
                Long victim = model.containsKey(key) ? key : model.keySet().iterator().next();
                assertSame(model.remove(victim), table.remove(victim));
            } else {
                Segment segment = new Segment(ByteBuffer.allocate(0), 0, 0, 0, true);
                segment.index = key;
                model.put(key, segment);
                table.put(key, segment);
            }
            long probe = keys.applyAsLong(random);
            assertSame(model.get(probe), table.get(probe));
            assertEquals(model.size(), table.size());
        }
        Segment[] out = new Segment[capacity];
        int found = table.collect(0, Long.MAX_VALUE, out);
        assertEquals(model.size(), found);
        for (int i = 0; i < found; i++) {
            assertSame(model.get(out[i].index), out[i]);
        }
    }
}
