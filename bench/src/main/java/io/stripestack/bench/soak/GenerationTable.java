package io.stripestack.bench.soak;

import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * Per 4 KiB block: the generation of the last acknowledged write and the highest generation ever issued
 * (in flight or failed when it is above the acknowledged one). 8 bytes per block.
 *
 * <p>Threads: a block is written by at most one thread at a time (the soak locks its extent), so
 * {@link #issue} and {@link #acknowledge} need no compare-and-set; the arrays are atomic so that readers on
 * other threads ({@link #snapshotAcknowledged}, the crash verifier) see published values.
 */
public final class GenerationTable {
    private final AtomicIntegerArray acknowledged;
    private final AtomicIntegerArray issued;

    public GenerationTable(int blocks) {
        this.acknowledged = new AtomicIntegerArray(blocks);
        this.issued = new AtomicIntegerArray(blocks);
    }

    public int blocks() {
        return issued.length();
    }

    /** The next generation of {@code block}, recorded as issued. The caller owns the block's extent. */
    int issue(int block) {
        int g = issued.get(block) + 1;
        issued.set(block, g);
        return g;
    }

    void acknowledge(int block, int generation) {
        acknowledged.set(block, generation);
    }

    public int acknowledged(int block) {
        return acknowledged.get(block);
    }

    public int issued(int block) {
        return issued.get(block);
    }

    /**
     * A copy of the acknowledged generations. Every value in it was acknowledged before this call returned,
     * so a SYNCHRONIZE CACHE issued afterwards covers all of them.
     */
    public int[] snapshotAcknowledged() {
        int[] copy = new int[acknowledged.length()];
        for (int i = 0; i < copy.length; i++) {
            copy[i] = acknowledged.get(i);
        }
        return copy;
    }
}
