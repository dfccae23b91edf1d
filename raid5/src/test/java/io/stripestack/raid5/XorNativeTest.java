package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The native routines ({@link NativeXor}) are built and loaded where gcc is installed, which CI requires;
 * elsewhere they may be missing and the Java routines serve. Their results are checked against the byte
 * reference with the other candidates in {@link XorRoutinesTest}; here, in addition, a large pass whose
 * length is not a multiple of the vector width, where a vector loop's tail handling would show.
 */
class XorNativeTest {

    @Test
    void nativeRoutinesAreLoadedWhereTheBuildHadGcc() {
        boolean ci = "true".equals(System.getenv("CI"));
        if (!ci) {
            assumeFalse(Xor.nativeRoutines().isEmpty(), "no native XOR here: " + Xor.nativeUnavailableReason());
        }
        assertFalse(Xor.nativeRoutines().isEmpty(),
                "CI builds the native XOR routines (apt-get install gcc): " + Xor.nativeUnavailableReason());
        assertTrue(Xor.candidates().containsAll(Xor.nativeRoutines()));
        assertEquals("sse2-4src", Xor.nativeRoutines().get(0).name());
    }

    @Test
    void everyNativeRoutineHandlesVectorTailsAndFourSourcePasses() {
        assumeFalse(Xor.nativeRoutines().isEmpty(), "no native XOR here: " + Xor.nativeUnavailableReason());
        Random random = new Random(11);
        for (Xor routine : Xor.nativeRoutines()) {
            for (int sources = 1; sources <= 9; sources++) {
                int length = 65536 + 8 * random.nextInt(16);
                byte[] expected = new byte[length];
                ByteBuffer[] srcs = new ByteBuffer[sources];
                int[] idx = new int[sources];
                for (int k = 0; k < sources; k++) {
                    byte[] bytes = new byte[length + 64];
                    random.nextBytes(bytes);
                    idx[k] = 8 * random.nextInt(8);
                    srcs[k] = ByteBuffer.allocateDirect(bytes.length).order(ByteOrder.nativeOrder()).put(0, bytes);
                    for (int i = 0; i < length; i++) {
                        expected[i] ^= bytes[idx[k] + i];
                    }
                }
                ByteBuffer dst = ByteBuffer.allocateDirect(length + 16);
                routine.xorInto(dst, 8, srcs, idx, sources, length);
                byte[] got = new byte[length];
                dst.get(8, got);
                assertEquals(ByteBuffer.wrap(expected), ByteBuffer.wrap(got), routine.name() + " with " + sources + " sources");
                assertEquals(0, dst.getLong(0) | dst.getLong(8 + length), routine.name() + " wrote outside its range");
            }
        }
    }
}
