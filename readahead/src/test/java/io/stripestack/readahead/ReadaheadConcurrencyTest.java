package io.stripestack.readahead;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.MemoryBlockDevice;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Writers, discarders and sequential readers at once over a slow device, so that prefetches are queued
 * and in flight while writes land. The model: every block holds (block, version) stamped through all its
 * bytes, or zeros after a discard; each block has one writer, which bumps {@code started} before and
 * {@code acked} after its write or discard.
 * A read that overlaps no write of a block (acked before the read == started after it) must return
 * exactly that block's acknowledged version; any read must return at least the version acknowledged
 * before it began. At the end the whole device must equal the model.
 */
class ReadaheadConcurrencyTest {
    private static final int BLOCK = 4096;
    private static final int BLOCKS = 256;
    private static final int WRITERS = 2;
    private static final int READERS = 3;
    /** Longer soaks: -Dreadahead.soak.millis=60000. */
    private static final long RUN_NANOS = TimeUnit.MILLISECONDS.toNanos(Long.getLong("readahead.soak.millis", 1500));

    private final AtomicLongArray started = new AtomicLongArray(BLOCKS);
    private final AtomicLongArray acked = new AtomicLongArray(BLOCKS);
    private final AtomicReference<String> firstViolation = new AtomicReference<>();
    private final AtomicLong stableBlocksChecked = new AtomicLong();
    private final AtomicBoolean stop = new AtomicBoolean();

    /** Version 0 is the zeroed block a discard leaves; others are stamped with block and version. */
    private static void stamp(ByteBuffer block, int blockNumber, long version) {
        for (int i = 0; i < BLOCK; i += 8) {
            block.putLong(i, version == 0 ? 0 : (version << 20) ^ ((long) blockNumber << 8) ^ i);
        }
    }

    /** The version the block's bytes hold, or -1 if they hold no consistent (block, version) stamp. */
    private static long versionIn(ByteBuffer data, int at, int blockNumber) {
        long first = data.getLong(at);
        long version = first == 0 ? 0 : first >>> 20;
        for (int i = 0; i < BLOCK; i += 8) {
            long expected = version == 0 ? 0 : (version << 20) ^ ((long) blockNumber << 8) ^ i;
            if (data.getLong(at + i) != expected) {
                return -1;
            }
        }
        return version;
    }

    private void violation(String message) {
        firstViolation.compareAndSet(null, message);
        stop.set(true);
    }

    @Test
    @Timeout(value = 10, unit = TimeUnit.MINUTES)
    void readsAfterAcknowledgedWritesNeverSeeOldData() throws Exception {
        MemoryBlockDevice memory = new MemoryBlockDevice("model", BLOCKS * BLOCK, 512);
        InstrumentedBlockDevice slow = new InstrumentedBlockDevice(memory);
        slow.delayReads(30_000);
        ReadaheadBudget budget = new ReadaheadBudget(512 * 1024, 16 * 1024);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(slow, budget)) {
            device.setReadAheadKb(64);
            List<Thread> threads = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                int writer = w;
                threads.add(new Thread(() -> write(device, writer), "writer-" + w));
            }
            for (int r = 0; r < READERS; r++) {
                int reader = r;
                threads.add(new Thread(() -> readSequentially(device, memory, reader), "reader-" + r));
            }
            threads.forEach(Thread::start);
            long deadline = System.nanoTime() + RUN_NANOS;
            while (System.nanoTime() < deadline && !stop.get()) {
                Thread.sleep(10);
            }
            stop.set(true);
            for (Thread thread : threads) {
                thread.join();
            }
            assertNull(firstViolation.get());
            // Readers read at most 4 blocks: anything longer is a run of segments fetched with one read,
            // so dropping part of a run while it is queued or loading has been exercised too.
            boolean runSeen = slow.reads.stream().anyMatch(read -> read[1] > 4 * BLOCK);

            ByteBuffer whole = ByteBuffer.allocate(BLOCKS * BLOCK);
            device.read(0, whole);
            for (int b = 0; b < BLOCKS; b++) {
                assertEquals(expectedVersion(b, acked.get(b)), versionIn(whole, b * BLOCK, b), "block " + b + " at the end");
            }
            assertTrue(stableBlocksChecked.get() > 1000, "only " + stableBlocksChecked + " blocks checked");
            assertTrue(device.stats().layerCounter("readahead_hits") > 100, device.stats().toString());
            assertTrue(device.stats().layerCounter("wasted_prefetch_bytes") > 0,
                    "writes should have dropped prefetched data: " + device.stats());
            assertTrue(runSeen, "no prefetch run spanned segments");
        }
        assertEquals(0, budget.inUseBytes());
    }

    /** Writer {@code w} owns the w-th contiguous share of the blocks: it writes runs of them and sometimes discards one. */
    private void write(ReadaheadBlockDevice device, int writer) {
        Random random = new Random(100 + writer);
        int share = BLOCKS / WRITERS;
        int base = writer * share;
        ByteBuffer run = ByteBuffer.allocateDirect(4 * BLOCK);
        try {
            while (!stop.get()) {
                int first = base + random.nextInt(share);
                if (random.nextInt(8) == 0) {
                    long version = started.incrementAndGet(first);
                    discardStarted.set(first, version);
                    device.discard((long) first * BLOCK, BLOCK);
                    zeroVersions.set(first, version);
                    acked.set(first, version);
                } else {
                    int blocks = Math.min(1 + random.nextInt(4), base + share - first);
                    long[] versions = new long[blocks];
                    run.clear().limit(blocks * BLOCK);
                    for (int k = 0; k < blocks; k++) {
                        versions[k] = started.incrementAndGet(first + k);
                        stamp(run.slice(k * BLOCK, BLOCK), first + k, versions[k]);
                    }
                    device.write((long) first * BLOCK, run);
                    for (int k = 0; k < blocks; k++) {
                        acked.set(first + k, versions[k]);
                    }
                }
                LockSupport.parkNanos(20_000);
            }
        } catch (Throwable t) {
            violation("writer " + writer + ": " + t);
        }
    }

    private static long versionBelow(MemoryBlockDevice memory, int block) {
        ByteBuffer data = ByteBuffer.allocate(BLOCK);
        try {
            memory.read((long) block * BLOCK, data);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e); // a memory device does not fail; the contract may
        }
        return versionIn(data, 0, block);
    }

    /** The version a block's bytes show when {@code version} is its latest: 0 if that was a discard. */
    private long expectedVersion(int block, long version) {
        return zeroVersions.get(block) == version ? 0 : version;
    }

    /** Per block, the version that was a discard (its bytes are zeros); 0 at the start, when all is zero. */
    private final AtomicLongArray zeroVersions = new AtomicLongArray(BLOCKS);
    /** Per block, the version of the latest discard begun (zeros may show from then on). */
    private final AtomicLongArray discardStarted = new AtomicLongArray(BLOCKS);

    private void readSequentially(ReadaheadBlockDevice device, MemoryBlockDevice memory, int reader) {
        Random random = new Random(200 + reader);
        ByteBuffer buffer = ByteBuffer.allocate(4 * BLOCK);
        long[] ackedBefore = new long[4];
        int block = random.nextInt(BLOCKS);
        try {
            while (!stop.get()) {
                int blocks = Math.min(1 << random.nextInt(3), BLOCKS - block);
                for (int k = 0; k < blocks; k++) {
                    ackedBefore[k] = acked.get(block + k);
                }
                buffer.clear().limit(blocks * BLOCK);
                device.read((long) block * BLOCK, buffer);
                for (int k = 0; k < blocks; k++) {
                    int b = block + k;
                    // Which version was a discard, read before started: if no operation started by then,
                    // none has replaced the discard version either (writers set it before acked).
                    long zeroVersion = zeroVersions.get(b);
                    long startedAfter = started.get(b);
                    long seen = versionIn(buffer, k * BLOCK, b);
                    boolean zeroed = seen == 0
                            && (expectedVersion(b, ackedBefore[k]) == 0 || discardStarted.get(b) > ackedBefore[k]);
                    if (startedAfter == ackedBefore[k]) {
                        stableBlocksChecked.incrementAndGet();
                        long expected = zeroVersion == ackedBefore[k] ? 0 : ackedBefore[k];
                        if (seen != expected) {
                            violation("reader " + reader + ": block " + b + " holds version " + seen
                                    + ", acknowledged version " + ackedBefore[k] + " (no write in flight); read of "
                                    + blocks + " blocks from " + block + "; below now holds "
                                    + versionBelow(memory, b) + ", " + device.stats());
                        }
                    } else if (seen != -1 && !zeroed && seen < ackedBefore[k]) {
                        violation("reader " + reader + ": block " + b + " holds version " + seen
                                + " older than acknowledged " + ackedBefore[k]);
                    }
                }
                block = (block + blocks) % BLOCKS;
            }
        } catch (Throwable t) {
            violation("reader " + reader + ": " + t);
        }
    }
}
