package io.stripestack.raid5;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The stripe cache: copies of recently written (and pre-read) stripe rows, so that the next partial
 * write to a row finds the old data and parity it needs in memory instead of reading members, like
 * md's stripe cache ({@code stripe_cache_size}). Each {@link Entry} holds one whole row: the n-1 data
 * chunks and the parity chunk, with a validity bit per 512-byte block. A valid block always equals
 * what the members hold for that row (for a failed member: what it would hold), because every change
 * to a row goes through the row's entry while the row's writer owns it. The cache is never the only
 * copy of anything: writes reach the members before they are acknowledged.
 *
 * <p>Capacity is counted in rows and can change at run time; an entry's buffer ({@code members x
 * chunk} bytes, direct) is allocated when the entry is first needed and dropped when the capacity
 * shrinks, so an idle cache costs nothing.
 *
 * <p>Concurrency: the index (hash buckets) and the LRU list are guarded by this object's monitor.
 * An entry is <em>pinned</em> by the one writer that processes its row (the row's write slot owner, see
 * {@link WriteScheduler}); only that thread reads or changes the entry's buffers and bits while it is
 * pinned, and unpinned entries are never touched except to be evicted. A writer that needs an entry
 * when all are pinned waits on the monitor until one is released.
 */
final class StripeCache {
    static final int BLOCK = 512;
    static final int PAGE = 4096;
    static final int MIN_ROWS = 1;
    static final int MAX_ROWS = 32768;

    private final int members;
    private final int chunk;
    private final int wordsPerChunk;
    private int capacity;
    private int allocated;
    private Entry[] buckets;
    /** LRU list of unpinned entries holding a row: head = most recent. */
    private Entry lruHead;
    private Entry lruTail;
    /** Unpinned entries that hold no row, ready for reuse. */
    private Entry free;

    StripeCache(int members, int chunk, int capacity) {
        this.members = members;
        this.chunk = chunk;
        this.wordsPerChunk = (chunk / BLOCK + 63) / 64;
        this.capacity = checkCapacity(capacity);
        this.buckets = new Entry[bucketCount(capacity)];
    }

    static int checkCapacity(int rows) {
        if (rows < MIN_ROWS || rows > MAX_ROWS) {
            throw new IllegalArgumentException("stripe cache size " + rows + " rows is out of range; use "
                    + MIN_ROWS + ".." + MAX_ROWS + " rows");
        }
        return rows;
    }

    private static int bucketCount(int capacity) {
        return Integer.highestOneBit(Math.max(16, capacity * 2 - 1)) << 1;
    }

    synchronized int capacity() {
        return capacity;
    }

    /** Rows currently holding a buffer (md's stripe_cache_active). */
    synchronized int allocated() {
        return allocated;
    }

    synchronized void setCapacity(int rows) {
        capacity = checkCapacity(rows);
        while (allocated > capacity && (free != null || lruTail != null)) {
            Entry victim = free != null ? popFree() : evictLru();
            victim.buffer = null;
            allocated--;
        }
        if (buckets.length < bucketCount(capacity)) {
            Entry[] old = buckets;
            buckets = new Entry[bucketCount(capacity)];
            for (Entry head : old) {
                for (Entry e = head; e != null; ) {
                    Entry next = e.nextInBucket;
                    int b = bucket(e.row);
                    e.nextInBucket = buckets[b];
                    buckets[b] = e;
                    e = next;
                }
            }
        }
        notifyAll();
    }

    /**
     * Pins and returns the entry of {@code row}, creating (or recycling the least recently used one)
     * if the row is not cached. A new entry has no valid block. Blocks while every entry is pinned.
     */
    synchronized Entry acquire(long row) throws InterruptedException {
        for (;;) {
            Entry e = find(row);
            if (e != null) {
                unlinkLru(e);
                e.pinned = true;
                return e;
            }
            if (free != null) {
                e = popFree();
            } else if (allocated < capacity) {
                e = new Entry(members, chunk, wordsPerChunk);
                allocated++;
            } else if (lruTail != null) {
                e = evictLru();
            } else {
                wait();
                continue;
            }
            e.row = row;
            e.pinned = true;
            e.clearValid();
            int b = bucket(row);
            e.nextInBucket = buckets[b];
            buckets[b] = e;
            return e;
        }
    }

    /** Unpins an entry; with {@code keep == false} its contents are forgotten. */
    synchronized void release(Entry e, boolean keep) {
        e.pinned = false;
        if (!keep) {
            removeFromIndex(e);
            e.clearValid();
            if (allocated > capacity) {
                e.buffer = null;
                allocated--;
            } else {
                e.nextFree = free;
                free = e;
            }
        } else if (allocated > capacity) {
            removeFromIndex(e);
            e.buffer = null;
            allocated--;
        } else {
            linkLruHead(e);
        }
        notifyAll();
    }

    /** Forgets {@code row} if it is cached and not pinned (the caller owns the row, so it cannot be pinned). */
    synchronized void invalidate(long row) {
        Entry e = find(row);
        if (e != null && !e.pinned) {
            unlinkLru(e);
            removeFromIndex(e);
            e.clearValid();
            e.nextFree = free;
            free = e;
        }
    }

    /** Forgets every unpinned row (used when a member fails: cached blocks stay valid, but simpler to drop). */
    synchronized void clear() {
        while (lruTail != null) {
            Entry e = evictLru();
            e.clearValid();
            e.nextFree = free;
            free = e;
        }
    }

    private int bucket(long row) {
        long h = row * 0x9E3779B97F4A7C15L;
        return (int) (h >>> 40) & (buckets.length - 1);
    }

    private Entry find(long row) {
        for (Entry e = buckets[bucket(row)]; e != null; e = e.nextInBucket) {
            if (e.row == row) {
                return e;
            }
        }
        return null;
    }

    private void removeFromIndex(Entry e) {
        int b = bucket(e.row);
        Entry prev = null;
        for (Entry cur = buckets[b]; cur != null; prev = cur, cur = cur.nextInBucket) {
            if (cur == e) {
                if (prev == null) {
                    buckets[b] = cur.nextInBucket;
                } else {
                    prev.nextInBucket = cur.nextInBucket;
                }
                e.nextInBucket = null;
                e.row = -1;
                return;
            }
        }
    }

    private Entry popFree() {
        Entry e = free;
        free = e.nextFree;
        e.nextFree = null;
        return e;
    }

    private Entry evictLru() {
        Entry e = lruTail;
        unlinkLru(e);
        removeFromIndex(e);
        return e;
    }

    private void linkLruHead(Entry e) {
        e.lruPrev = null;
        e.lruNext = lruHead;
        if (lruHead != null) {
            lruHead.lruPrev = e;
        }
        lruHead = e;
        if (lruTail == null) {
            lruTail = e;
        }
        e.inLru = true;
    }

    private void unlinkLru(Entry e) {
        if (!e.inLru) {
            return;
        }
        if (e.lruPrev != null) {
            e.lruPrev.lruNext = e.lruNext;
        } else {
            lruHead = e.lruNext;
        }
        if (e.lruNext != null) {
            e.lruNext.lruPrev = e.lruPrev;
        } else {
            lruTail = e.lruPrev;
        }
        e.lruPrev = null;
        e.lruNext = null;
        e.inLru = false;
    }

    /**
     * One cached row. Index {@code 0..members-2} of {@link #chunk} are the data chunks in data order;
     * index {@code members-1} is the parity chunk. Validity is one bit per {@link #BLOCK} bytes.
     */
    static final class Entry {
        private final int members;
        private final int chunkBytes;
        private final int words;
        private ByteBuffer buffer;
        private final ByteBuffer[] chunkViews;
        final long[][] valid;
        long row = -1;
        boolean pinned;
        private Entry nextInBucket;
        private Entry lruPrev;
        private Entry lruNext;
        private boolean inLru;
        private Entry nextFree;

        Entry(int members, int chunkBytes, int words) {
            this.members = members;
            this.chunkBytes = chunkBytes;
            this.words = words;
            this.chunkViews = new ByteBuffer[members];
            this.valid = new long[members][words];
        }

        /** Chunk {@code index}'s buffer (native order, position 0), allocating the row buffer on first use. */
        ByteBuffer chunk(int index) {
            if (buffer == null) {
                // Page-aligned so that members opened with O_DIRECT accept reads and writes into it.
                buffer = ByteBuffer.allocateDirect(members * chunkBytes + PAGE).alignedSlice(PAGE)
                        .slice(0, members * chunkBytes);
                for (int i = 0; i < members; i++) {
                    chunkViews[i] = buffer.slice(i * chunkBytes, chunkBytes).order(ByteOrder.nativeOrder());
                }
            } else if (chunkViews[0] == null || chunkViews[0].capacity() != chunkBytes) {
                throw new IllegalStateException("stripe cache entry views lost");
            }
            return chunkViews[index];
        }

        void clearValid() {
            for (long[] bits : valid) {
                Arrays.fill(bits, 0L);
            }
        }

        int words() {
            return words;
        }
    }
}
