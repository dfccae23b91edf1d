package io.stripestack.bench.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.stripestack.bench.soak.BlockPattern.Verdict;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** Every verdict of the block check, on hand-made blocks at a non-zero offset of the buffer. */
class SoakBlockPatternTest {
    private static final int AT = BlockPattern.BLOCK;

    private final ByteBuffer buffer = ByteBuffer.allocateDirect(2 * BlockPattern.BLOCK);
    private final BlockPattern pattern = new BlockPattern(99, buffer);

    @Test
    void tellsEveryKindOfWrongBlockApart() {
        pattern.fill(AT, 12, 5);
        assertEquals(Verdict.OK, pattern.check(AT, 12, 5, 5));
        assertEquals(Verdict.OK, pattern.check(AT, 12, 4, 6), "a generation inside the allowed range");
        assertEquals(Verdict.STALE, pattern.check(AT, 12, 6, 6));
        assertEquals(5, pattern.foundGeneration());
        assertEquals(Verdict.PHANTOM, pattern.check(AT, 12, 3, 4));
        assertEquals(Verdict.MISPLACED, pattern.check(AT, 13, 5, 5));
        assertEquals(12, pattern.foundBlock());
        assertEquals(Verdict.UNWRITTEN, pattern.check(AT, 12, 0, 0), "blocks never written are not judged");

        new BlockPattern(100, buffer).fill(AT, 12, 5);
        assertEquals(Verdict.STALE, pattern.check(AT, 12, 5, 5), "another run's block where this run wrote");
        assertEquals(Verdict.UNWRITTEN, pattern.check(AT, 12, 0, 1), "another run's block where a write may be lost");

        pattern.fill(AT, 12, 5);
        buffer.put(AT + 3000, (byte) (buffer.get(AT + 3000) ^ 1));
        assertEquals(Verdict.TORN, pattern.check(AT, 12, 5, 5), "one bit flipped in the payload");

        for (int i = 0; i < BlockPattern.BLOCK; i++) {
            buffer.put(AT + i, (byte) 0);
        }
        assertEquals(Verdict.STALE, pattern.check(AT, 12, 1, 1), "zeros where a write was acknowledged");
        assertEquals(Verdict.UNWRITTEN, pattern.check(AT, 12, 0, 1), "zeros where a write was only in flight");

        pattern.fill(0, 7, 1);
        assertEquals(Verdict.OK, pattern.check(0, 7, 1, 1));
        assertEquals(Verdict.STALE, pattern.check(AT, 12, 1, 1), "a fill at offset 0 leaves the zeroed block at AT alone");
    }
}
