package io.stripestack.readahead;

/**
 * Segment number to {@link Segment}, open addressing with linear probing: lookups on the read path box
 * nothing and allocate nothing. Sized once for every segment of the budget, so it never grows.
 *
 * <p>Not thread-safe: the owning {@link ReadaheadBlockDevice}'s lock guards it.
 */
final class SegmentTable {
    private final long[] keys;
    private final Segment[] values;
    private final int mask;
    private int size;

    SegmentTable(int maxEntries) {
        int capacity = Integer.highestOneBit(Math.max(2, maxEntries) * 2 - 1) << 1;
        keys = new long[capacity];
        values = new Segment[capacity];
        mask = capacity - 1;
    }

    private int slotOf(long key) {
        return (int) ((key * 0x9E3779B97F4A7C15L) >>> 40) & mask;
    }

    int size() {
        return size;
    }

    Segment get(long key) {
        for (int i = slotOf(key); ; i = (i + 1) & mask) {
            Segment value = values[i];
            if (value == null || keys[i] == key) {
                return value;
            }
        }
    }

    /** Adds a key that is not in the table. */
    void put(long key, Segment value) {
        int i = slotOf(key);
        while (values[i] != null) {
            i = (i + 1) & mask;
        }
        keys[i] = key;
        values[i] = value;
        size++;
    }

    Segment remove(long key) {
        int i = slotOf(key);
        while (values[i] != null && keys[i] != key) {
            i = (i + 1) & mask;
        }
        Segment removed = values[i];
        if (removed == null) {
            return null;
        }
        values[i] = null;
        size--;
        // Backward-shift deletion: move later entries of the probe run into the hole when their home
        // slot does not lie cyclically in (hole, their slot], so every run stays unbroken.
        int hole = i;
        for (int j = (hole + 1) & mask; values[j] != null; j = (j + 1) & mask) {
            int home = slotOf(keys[j]);
            boolean homeBetween = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!homeBetween) {
                keys[hole] = keys[j];
                values[hole] = values[j];
                values[j] = null;
                hole = j;
            }
        }
        return removed;
    }

    /** Copies every entry with a key in {@code [first, last]} into {@code out}; returns how many. */
    int collect(long first, long last, Segment[] out) {
        int n = 0;
        for (int i = 0; i < values.length; i++) {
            if (values[i] != null && keys[i] >= first && keys[i] <= last) {
                out[n++] = values[i];
            }
        }
        return n;
    }
}
