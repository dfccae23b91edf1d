package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Test;

class XorTest {

    @Test
    void everyRoutineMatchesAByteReference() {
        Random r = new Random(42);
        for (Xor routine : Xor.candidates()) {
            for (int sources = 1; sources <= 7; sources++) {
                int length = 8 * (1 + r.nextInt(300));
                ByteBuffer[] srcs = new ByteBuffer[sources];
                int[] idx = new int[sources];
                byte[] expected = new byte[length];
                byte[] dstInit = new byte[length];
                r.nextBytes(dstInit);
                System.arraycopy(dstInit, 0, expected, 0, length);
                byte[] assignExpected = new byte[length];
                for (int k = 0; k < sources; k++) {
                    idx[k] = 8 * r.nextInt(5);
                    byte[] bytes = new byte[idx[k] + length];
                    r.nextBytes(bytes);
                    srcs[k] = (k % 2 == 0 ? ByteBuffer.allocateDirect(bytes.length) : ByteBuffer.allocate(bytes.length))
                            .order(ByteOrder.nativeOrder()).put(0, bytes);
                    for (int i = 0; i < length; i++) {
                        expected[i] ^= bytes[idx[k] + i];
                        assignExpected[i] ^= bytes[idx[k] + i];
                    }
                }
                int dstIndex = 16;
                ByteBuffer dst = ByteBuffer.allocateDirect(dstIndex + length).order(ByteOrder.nativeOrder());
                dst.put(dstIndex, dstInit);
                routine.xorInto(dst, dstIndex, srcs, idx, sources, length);
                byte[] got = new byte[length];
                dst.get(dstIndex, got);
                assertEquals(ByteBuffer.wrap(expected), ByteBuffer.wrap(got), routine.name() + " with " + sources);

                ByteBuffer first = srcs[0];
                routine.xorAssign(dst, dstIndex, srcs, idx, sources, length);
                dst.get(dstIndex, got);
                assertEquals(ByteBuffer.wrap(assignExpected), ByteBuffer.wrap(got), routine.name() + " assign " + sources);
                assertTrue(first == srcs[0], "xorAssign must leave the caller's source array as it was");
            }
        }
    }

    @Test
    void selectionPicksAMeasuredCandidate() {
        assertTrue(Xor.candidates().contains(Xor.best()));
        assertTrue(Xor.bestMegabytesPerSecond() > 0);
    }
}
