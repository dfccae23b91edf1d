package io.stripestack.blockdev.readahead;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class SegmentTableTest {
    @Test
    void behavesLikeAMapUnderRandomPutsAndRemoves() {
        int capacity = 64;
        SegmentTable table = new SegmentTable(capacity);
        Map<Long, Segment> model = new HashMap<>();
        Random random = new Random(42);
        for (int step = 0; step < 200_000; step++) {
            // Few distinct keys with colliding low bits stress probe runs and backward shifts.
            long key = random.nextInt(256) * 1024L + random.nextInt(3);
            if (model.containsKey(key) || model.size() == capacity) {
                Long victim = model.containsKey(key) ? key : model.keySet().iterator().next();
                assertSame(model.remove(victim), table.remove(victim));
            } else {
                Segment segment = new Segment(ByteBuffer.allocate(0));
                segment.index = key;
                model.put(key, segment);
                table.put(key, segment);
            }
            long probe = random.nextInt(256) * 1024L + random.nextInt(3);
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
