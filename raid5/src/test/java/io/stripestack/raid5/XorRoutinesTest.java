package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Every XOR routine against a byte-at-a-time reference: random data, 1..8 sources, random indices and
 * lengths, sources and destinations of every buffer kind the array may meet (direct, heap, heap slices
 * with an array offset, direct slices, read-only sources; every other case direct buffers only), in
 * either byte order, and for the raw routines in mixed orders.
 */
class XorRoutinesTest {
    private static final int CASES_PER_ROUTINE = 300;

    /** The buffer kinds a case draws from; each one holds {@code bytes} at index 0. */
    private enum Kind {
        DIRECT, HEAP, HEAP_SLICE, DIRECT_SLICE, READ_ONLY_HEAP, READ_ONLY_DIRECT;

        ByteBuffer holding(byte[] bytes, ByteOrder order) {
            ByteBuffer buf = switch (this) {
                case DIRECT, READ_ONLY_DIRECT -> ByteBuffer.allocateDirect(bytes.length);
                case HEAP, READ_ONLY_HEAP -> ByteBuffer.allocate(bytes.length);
                case HEAP_SLICE -> ByteBuffer.wrap(new byte[bytes.length + 24], 13, bytes.length).slice();
                case DIRECT_SLICE -> ByteBuffer.allocateDirect(bytes.length + 24).position(5).limit(5 + bytes.length).slice();
            };
            buf.put(0, bytes);
            if (this == READ_ONLY_HEAP || this == READ_ONLY_DIRECT) {
                buf = buf.asReadOnlyBuffer();
            }
            return buf.order(order);
        }

        boolean writable() {
            return this != READ_ONLY_HEAP && this != READ_ONLY_DIRECT;
        }

        boolean direct() {
            return this == DIRECT || this == DIRECT_SLICE || this == READ_ONLY_DIRECT;
        }

        /** Any kind, or (every other case) only direct ones: the raw routines have a loop for each. */
        static Kind pick(Random random, boolean onlyDirect, boolean writable) {
            Kind kind;
            do {
                kind = values()[random.nextInt(values().length)];
            } while ((onlyDirect && !kind.direct()) || (writable && !kind.writable()));
            return kind;
        }
    }

    @Test
    void everyRoutineMatchesAByteReference() {
        assertTrue(Xor.candidates().size() >= 7, "raw routines missing: " + names());
        Random random = new Random(0x5EED_0002L);
        for (Xor routine : Xor.candidates()) {
            for (int c = 0; c < CASES_PER_ROUTINE; c++) {
                checkCase(routine, random, c);
            }
        }
    }

    private static void checkCase(Xor routine, Random random, int caseNumber) {
        int count = 1 + random.nextInt(8);
        int length = 8 * random.nextInt(maxLongs(caseNumber));
        boolean rawRoutine = addressesMemory(routine);
        boolean onlyDirect = caseNumber % 2 == 0;
        ByteOrder commonOrder = random.nextBoolean() ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
        ByteBuffer[] srcs = new ByteBuffer[count];
        int[] idx = new int[count];
        byte[] sum = new byte[length];
        StringBuilder what = new StringBuilder(routine.name()).append(" case ").append(caseNumber)
                .append(": ").append(count).append(" sources, ").append(length).append(" bytes;");
        for (int k = 0; k < count; k++) {
            idx[k] = 8 * random.nextInt(9);
            byte[] bytes = new byte[idx[k] + length + 8 * random.nextInt(3)];
            random.nextBytes(bytes);
            Kind kind = Kind.pick(random, onlyDirect, false);
            // The raw routines XOR bytes, so they must be right even when the orders differ.
            ByteOrder order = rawRoutine && random.nextBoolean() ? ByteOrder.nativeOrder() : commonOrder;
            srcs[k] = kind.holding(bytes, order);
            what.append(' ').append(kind).append('@').append(idx[k]).append('/').append(order);
            for (int i = 0; i < length; i++) {
                sum[i] ^= bytes[idx[k] + i];
            }
        }
        int dstIndex = 8 * random.nextInt(9);
        byte[] dstBytes = new byte[dstIndex + length + 8 * random.nextInt(3)];
        random.nextBytes(dstBytes);
        Kind dstKind = Kind.pick(random, onlyDirect, true);
        what.append("; dst ").append(dstKind).append('@').append(dstIndex);

        byte[] expectedInto = dstBytes.clone();
        byte[] expectedAssign = dstBytes.clone();
        for (int i = 0; i < length; i++) {
            expectedInto[dstIndex + i] ^= sum[i];
            expectedAssign[dstIndex + i] = sum[i];
        }

        ByteBuffer dst = dstKind.holding(dstBytes, commonOrder);
        ByteBuffer[] callerSrcs = srcs.clone();
        int[] callerIdx = idx.clone();
        routine.xorInto(dst, dstIndex, srcs, idx, count, length);
        assertArrayEquals(expectedInto, contents(dst), "xorInto " + what);

        dst = dstKind.holding(dstBytes, commonOrder);
        routine.xorAssign(dst, dstIndex, srcs, idx, count, length);
        assertArrayEquals(expectedAssign, contents(dst), "xorAssign " + what);

        assertArrayEquals(callerIdx, idx, "the caller's indices changed: " + what);
        for (int k = 0; k < count; k++) {
            assertSame(callerSrcs[k], srcs[k], "the caller's sources changed: " + what);
            assertEquals(0, srcs[k].position(), "a source's position moved: " + what);
        }
        assertEquals(0, dst.position(), "the destination's position moved: " + what);
    }

    /** Mostly short lengths (where the pass set-up matters), sometimes chunk-sized ones. */
    private static int maxLongs(int caseNumber) {
        return caseNumber % 10 == 0 ? 2048 : 80;
    }

    private static byte[] contents(ByteBuffer buf) {
        byte[] bytes = new byte[buf.capacity()];
        buf.get(0, bytes);
        return bytes;
    }

    @Test
    void rawRoutinesRefuseRangesOutsideABufferAndReadOnlyDestinations() {
        for (Xor routine : Xor.candidates()) {
            if (!addressesMemory(routine)) {
                continue;
            }
            ByteBuffer dst = ByteBuffer.allocateDirect(64);
            ByteBuffer[] srcs = {ByteBuffer.allocateDirect(64), ByteBuffer.allocate(64).limit(32)};
            int[] idx = {0, 0};
            assertThrows(IndexOutOfBoundsException.class, () -> routine.xorInto(dst, 8, srcs, idx, 1, 64),
                    routine.name() + " wrote past the destination's limit");
            assertThrows(IndexOutOfBoundsException.class, () -> routine.xorInto(dst, 0, srcs, idx, 2, 40),
                    routine.name() + " read past a source's limit");
            assertThrows(IndexOutOfBoundsException.class, () -> routine.xorInto(dst, -8, srcs, idx, 1, 8),
                    routine.name() + " accepted a negative index");
            assertThrows(ReadOnlyBufferException.class,
                    () -> routine.xorInto(dst.asReadOnlyBuffer(), 0, srcs, idx, 1, 8),
                    routine.name() + " wrote into a read-only buffer");
            assertThrows(IllegalArgumentException.class, () -> routine.xorInto(dst, 0, srcs, idx, 1, 12),
                    routine.name() + " accepted a length that is not a multiple of 8");
            assertEquals(0, contents(dst)[0] | contents(dst)[63], routine.name() + " touched memory before refusing");
        }
    }

    @Test
    void bestIsACandidateThatComputesParity() {
        Xor best = Xor.best();
        assertTrue(Xor.candidates().contains(best), best.name() + " is not among " + names());
        assertTrue(Xor.bestMegabytesPerSecond() > 0);
        Random random = new Random(7);
        for (int c = 0; c < 50; c++) {
            checkCase(best, random, c);
        }
    }

    /** The raw and native routines work on memory addresses, checked by the routine, not by the buffers. */
    private static boolean addressesMemory(Xor routine) {
        return routine.name().startsWith("raw") || Xor.nativeRoutines().contains(routine);
    }

    private static String names() {
        StringBuilder names = new StringBuilder();
        for (Xor routine : Xor.candidates()) {
            names.append(' ').append(routine.name());
        }
        return names.toString();
    }
}
