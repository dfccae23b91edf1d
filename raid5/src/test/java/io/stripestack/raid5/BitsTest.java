package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.BitSet;
import java.util.Random;
import org.junit.jupiter.api.Test;

class BitsTest {
    @Test
    void agreesWithBitSet() {
        Random r = new Random(1);
        for (int trial = 0; trial < 500; trial++) {
            int length = 1 + r.nextInt(300);
            long[] bits = new long[(length + 63) / 64];
            BitSet reference = new BitSet();
            for (int k = 0; k < 3; k++) {
                int from = r.nextInt(length);
                int to = from + r.nextInt(length - from + 1);
                Bits.setRange(bits, from, to);
                reference.set(from, to);
            }
            for (int from = 0; from <= length; from++) {
                int set = reference.nextSetBit(from);
                assertEquals(set < 0 || set >= length ? length : set, Bits.nextSet(bits, from, length));
                int clear = reference.nextClearBit(from);
                assertEquals(Math.min(clear, length), Bits.nextClear(bits, from, length));
            }
            assertEquals(reference.cardinality() == length, Bits.isFull(bits, length));
            assertEquals(reference.isEmpty(), Bits.isEmpty(bits));
        }
    }
}
