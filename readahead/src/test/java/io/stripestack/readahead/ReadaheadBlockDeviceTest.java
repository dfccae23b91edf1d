package io.stripestack.readahead;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.testkit.FaultInjectingBlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import io.stripestack.testkit.GrowableBlockDevice;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReadaheadBlockDeviceTest {
    private static final int KIB = 1024;
    private static final int SEGMENT = 64 * KIB;

    /** A memory device whose every 4-byte word holds its own byte offset, so any misplaced byte shows. */
    private static MemoryBlockDevice patterned(String name, int size) throws IOException {
        MemoryBlockDevice device = new MemoryBlockDevice(name, size, 512);
        ByteBuffer all = ByteBuffer.allocate(size);
        for (int i = 0; i < size; i += 4) {
            all.putInt(i, i);
        }
        device.write(0, all);
        return device;
    }

    private static void assertPattern(ByteBuffer data, long offset) {
        for (int i = 0; i < data.limit(); i += 4) {
            if (data.getInt(i) != (int) (offset + i)) {
                throw new AssertionError("byte " + (offset + i) + " holds " + data.getInt(i));
            }
        }
    }

    private static ByteBuffer read(ReadaheadBlockDevice device, long offset, int length) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(length);
        device.read(offset, buffer);
        assertEquals(length, buffer.position());
        return buffer.flip();
    }

    /** Prefetches read whole segments, one or a run of them; the tests' own reads are smaller. */
    private static boolean isPrefetch(long[] read) {
        return read[1] >= SEGMENT && read[1] % SEGMENT == 0 && read[0] % SEGMENT == 0;
    }

    private static long prefetchedBytes(InstrumentedBlockDevice below) {
        long bytes = 0;
        for (long[] read : below.reads) {
            if (isPrefetch(read)) {
                bytes += read[1];
            }
        }
        return bytes;
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(1);
        }
    }

    /**
     * The device below grows while the segment holding its old end is held short: a sequential reader that goes on
     * past the old end reads every byte right (a short segment kept would leave the rest of its buffer unfilled).
     */
    @Test
    void aDeviceThatGrowsUnderHeldSegmentsReadsRightPastItsOldEnd() throws Exception {
        int oldSize = (1 << 20) + 32 * KIB;
        int newSize = 2 << 20;
        GrowableBlockDevice below = new GrowableBlockDevice(patterned("grows", newSize), oldSize);
        ReadaheadBudget budget = new ReadaheadBudget(2 << 20, SEGMENT);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            device.setReadAheadKb(256);
            long stop = oldSize - 48 * KIB;   // inside the last, short (32 KiB) segment's predecessor
            for (long offset = 0; offset < stop; offset += 8 * KIB) {
                assertPattern(read(device, offset, 8 * KIB), offset);
            }
            // the window reaches the old end: the short last segment is prefetched and held
            long settled = -1;
            while (settled != device.stats().layerCounter("prefetch_bytes")) {
                settled = device.stats().layerCounter("prefetch_bytes");
                Thread.sleep(50);   // until the prefetches of the window have landed
            }
            assertTrue(settled % SEGMENT == 32 * KIB, "the short last segment was prefetched: " + settled);
            below.grow(newSize);
            assertEquals(newSize, device.resized());
            for (long offset = stop; offset + 32 * KIB <= newSize; offset += 32 * KIB) {   // one read spans the old end
                assertPattern(read(device, offset, 32 * KIB), offset);
            }
        }
        assertEquals(0, budget.inUseBytes(), "close returns every segment");
    }

    @Test
    void sequentialReadsAreServedFromPrefetchWithFewerLargerReadsBelow() throws Exception {
        int size = 8 << 20;
        InstrumentedBlockDevice below = new InstrumentedBlockDevice(patterned("seq", size));
        below.delayReads(20_000);
        ReadaheadBudget budget = new ReadaheadBudget(2 << 20, SEGMENT);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            device.setReadAheadKb(512);
            int reads = size / (4 * KIB);
            for (int i = 0; i < reads; i++) {
                assertPattern(read(device, (long) i * 4 * KIB, 4 * KIB), (long) i * 4 * KIB);
            }
            long hits = device.stats().layerCounter("readahead_hits");
            long readsBelow = below.foregroundReads.sum() + below.prefetchReads.sum();
            assertTrue(hits > reads * 8L / 10, "hits " + hits + " of " + reads + " reads: " + device.stats());
            assertEquals(reads, hits + device.stats().layerCounter("readahead_misses"));
            assertTrue(readsBelow < reads / 8, readsBelow + " reads below for " + reads + " reads");
            assertTrue(device.stats().layerCounter("prefetch_bytes") >= size - 512 * KIB);
            assertEquals(4L * KIB * hits, device.stats().layerCounter("readahead_hit_bytes"));
            // Once ramped up, each 512 KiB window is one read below of 8 segments.
            long inRuns = below.reads.stream().filter(read -> isPrefetch(read) && read[1] == 8 * SEGMENT)
                    .mapToLong(read -> read[1]).sum();
            assertTrue(inRuns >= prefetchedBytes(below) / 2, inRuns + " of " + prefetchedBytes(below)
                    + " prefetched bytes were read in runs of 8 segments");
        }
        assertEquals(0, budget.inUseBytes(), "close returns every segment");
    }

    @Test
    void largeWindowsAreFetchedInReadsOfOneMibOrOneStripeSoTheReaderStartsEarly() throws Exception {
        int size = 16 << 20;
        InstrumentedBlockDevice below = new InstrumentedBlockDevice(patterned("large", size));
        ReadaheadBudget budget = new ReadaheadBudget(16 << 20, SEGMENT);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            device.setReadAheadKb(4096);
            for (long at = 0; at < size; at += 128 * KIB) {
                assertPattern(read(device, at, 128 * KIB), at);
            }
            long largest = below.reads.stream().filter(ReadaheadBlockDeviceTest::isPrefetch).mapToLong(read -> read[1])
                    .max().orElse(0);
            assertEquals(ReadaheadBlockDevice.PREFETCH_READ_BYTES, largest, "4 MiB windows are read 1 MiB at a time");
            long inFullReads = below.reads.stream().filter(read -> isPrefetch(read) && read[1] == largest)
                    .mapToLong(read -> read[1]).sum();
            assertTrue(inFullReads >= size / 2, inFullReads + " of " + prefetchedBytes(below) + " bytes in 1 MiB reads");
            long hits = device.stats().layerCounter("readahead_hits");
            assertTrue(hits >= size / (128 * KIB) - 4, "hits " + hits + ": " + device.stats());
        }
        assertEquals(1 << 20, ReadaheadBlockDevice.prefetchReadSegments(Geometry.simple(512), budget) * SEGMENT);
        assertEquals(1536 * KIB, ReadaheadBlockDevice.prefetchReadSegments(
                new Geometry(512 * KIB, 1536 * KIB, 0, 0), budget) * SEGMENT, "a full stripe when larger");
        assertEquals(512 * KIB, ReadaheadBlockDevice.prefetchReadSegments(
                new Geometry(4096, 4096, 0, 512 * KIB), budget) * SEGMENT, "within maxTransfer");
        assertEquals(4, ReadaheadBlockDevice.prefetchReadSegments(Geometry.simple(512), new ReadaheadBudget(4 * SEGMENT, SEGMENT)),
                "within the budget");
    }

    @Test
    void anEstablishedStreamIssuesWindowsOfOnePrefetchReadOneWindowEarly() throws Exception {
        InstrumentedBlockDevice below = new InstrumentedBlockDevice(patterned("early", 8 << 20));
        ReadaheadBudget budget = new ReadaheadBudget(8 << 20, SEGMENT);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            device.setReadAheadKb(256);
            // Windows: [0, 64K), [64K, 192K), then 256 KiB each from 192K, each issued when the reader
            // enters the one before, the kernel's mark. Past 512K (two windows of reading) the stream is
            // established, and a 256 KiB window is one prefetch read: the read entering [704K, 960K) issues
            // [960K, 1216K) with its mark at 704K, so the next read issues [1216K, 1472K) too.
            for (long at = 0; at < 720 * KIB; at += 4 * KIB) {
                assertPattern(read(device, at, 4 * KIB), at);
            }
            await("the windows to be prefetched", () -> device.stats().layerCounter("prefetch_bytes") >= 1472 * KIB);
            long issuedTo = below.reads.stream().filter(ReadaheadBlockDeviceTest::isPrefetch)
                    .mapToLong(read -> read[0] + read[1]).max().orElse(0);
            assertEquals(1472 * KIB, issuedTo, "two windows ahead of the one being read, no more");
        }
    }

    @Test
    void slightlyReorderedReadsOfOneInitiatorKeepTheirStream() throws Exception {
        int size = 4 << 20;
        InstrumentedBlockDevice below = new InstrumentedBlockDevice(patterned("reordered", size));
        ReadaheadBudget budget = new ReadaheadBudget(2 << 20, SEGMENT);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            // Queue depth 4: each group of four requests arrives as 2, 0, 3, 1.
            int[] order = {2, 0, 3, 1};
            int reads = 0;
            for (long group = 0; group < size; group += 16 * KIB) {
                for (int k : order) {
                    long at = group + k * 4L * KIB;
                    assertPattern(read(device, at, 4 * KIB), at);
                    reads++;
                }
            }
            long hits = device.stats().layerCounter("readahead_hits");
            assertTrue(hits > reads * 8L / 10, "hits " + hits + " of " + reads + ": " + device.stats());
        }
    }

    @Test
    void interleavedStreamsFromSeveralThreadsEachGetReadahead() throws Exception {
        int streams = 4;
        int region = 2 << 20;
        InstrumentedBlockDevice below = new InstrumentedBlockDevice(patterned("interleaved", streams * region));
        below.delayReads(20_000);
        ReadaheadBudget budget = new ReadaheadBudget(4 << 20, SEGMENT);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            device.setReadAheadKb(256);
            List<Thread> readers = new ArrayList<>();
            List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
            for (int s = 0; s < streams; s++) {
                long base = (long) s * region;
                Thread reader = new Thread(() -> {
                    try {
                        for (long at = base; at < base + region; at += 8 * KIB) {
                            assertPattern(read(device, at, 8 * KIB), at);
                        }
                    } catch (Throwable t) {
                        failures.add(t);
                    }
                }, "reader-" + s);
                readers.add(reader);
                reader.start();
            }
            for (Thread reader : readers) {
                reader.join();
            }
            assertEquals(List.of(), failures);
            long[] prefetchedPerStream = new long[streams];
            for (long[] read : below.reads) {
                if (isPrefetch(read)) {
                    prefetchedPerStream[(int) (read[0] / region)] += read[1];
                }
            }
            for (int s = 0; s < streams; s++) {
                assertTrue(prefetchedPerStream[s] >= region / 2, "stream " + s + " prefetched only "
                        + prefetchedPerStream[s] + " bytes of its " + region);
            }
            long reads = (long) streams * region / (8 * KIB);
            long hits = device.stats().layerCounter("readahead_hits");
            assertTrue(hits > reads * 3 / 4, "hits " + hits + " of " + reads);
        }
    }

    @Test
    void randomReadsTriggerNoPrefetch() throws Exception {
        int size = 32 << 20;
        InstrumentedBlockDevice below = new InstrumentedBlockDevice(patterned("random", size));
        ReadaheadBudget budget = new ReadaheadBudget(1 << 20, SEGMENT);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            Random random = new Random(5);
            Set<Long> ends = new HashSet<>();
            int reads = 3000;
            for (int i = 0; i < reads; i++) {
                long offset;
                do {
                    offset = random.nextInt(size / (4 * KIB)) * 4L * KIB;
                } while (ends.contains(offset));
                ends.add(offset + 4 * KIB);
                assertPattern(read(device, offset, 4 * KIB), offset);
            }
            assertEquals(0, below.prefetchReads.sum());
            assertEquals(reads, below.foregroundReads.sum());
            assertEquals(0, device.stats().layerCounter("prefetch_bytes"));
            assertEquals(reads, device.stats().layerCounter("readahead_misses"));
            assertEquals(0, budget.inUseBytes());
        }
    }

    @Test
    void randomReadsDoNotKeepAFinishedStreamGoing() throws Exception {
        int size = 16 << 20;
        InstrumentedBlockDevice below = new InstrumentedBlockDevice(patterned("mixed", size));
        ReadaheadBudget budget = new ReadaheadBudget(16 << 20, SEGMENT);
        long window;
        long prefetchedBySequential;
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            window = device.readAheadKb() * KIB;
            for (long at = 0; at < 256 * KIB; at += 4 * KIB) {
                read(device, at, 4 * KIB);
            }
            prefetchedBySequential = prefetchedBytes(below);
            assertTrue(prefetchedBySequential > 0);
            Random random = new Random(11);
            Set<Long> ends = new HashSet<>();
            for (int i = 0; i < 4000; i++) {
                long offset;
                do {
                    offset = random.nextInt(size / (4 * KIB)) * 4L * KIB;
                } while (ends.contains(offset) || offset == 256 * KIB);
                ends.add(offset + 4 * KIB);
                assertPattern(read(device, offset, 4 * KIB), offset);
            }
        }
        // Random reads land near the stream now and then, but must not keep it reading ahead; only the
        // windows the sequential reads left in flight may still be fetched.
        long prefetchedDuringRandom = prefetchedBytes(below) - prefetchedBySequential;
        assertTrue(prefetchedDuringRandom <= 2 * window, prefetchedDuringRandom + " bytes prefetched during random reads");
    }

    @Test
    void writeDuringAnInFlightPrefetchIsNotUndoneByIt() throws Exception {
        InstrumentedBlockDevice below = new InstrumentedBlockDevice(patterned("inflight", 4 << 20));
        ReadaheadBudget budget = new ReadaheadBudget(1 << 20, SEGMENT);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            below.holdPrefetches();
            // Two reads ending on a segment boundary: the window starts at segment 1, which no read needs yet.
            read(device, SEGMENT - 8 * KIB, 4 * KIB);
            read(device, SEGMENT - 4 * KIB, 4 * KIB);
            await("a prefetch holding the old bytes of segment 1", () -> below.heldPrefetches.get() == 1);

            byte[] fresh = new byte[4 * KIB];
            java.util.Arrays.fill(fresh, (byte) 0x5a);
            device.write(SEGMENT + 8 * KIB, ByteBuffer.wrap(fresh));
            below.releasePrefetches();
            await("the stale prefetch to finish", () -> device.stats().layerCounter("prefetch_bytes") >= SEGMENT);

            assertArrayEquals(fresh, read(device, SEGMENT + 8 * KIB, 4 * KIB).array());
            assertEquals(SEGMENT, device.stats().layerCounter("wasted_prefetch_bytes"),
                    "the in-flight prefetch was dropped, not installed");
            assertPattern(read(device, SEGMENT + 12 * KIB, 4 * KIB), SEGMENT + 12 * KIB);
        }
    }

    @Test
    void writeAndDiscardDropReadyPrefetchedData() throws Exception {
        InstrumentedBlockDevice below = new InstrumentedBlockDevice(patterned("ready", 4 << 20));
        ReadaheadBudget budget = new ReadaheadBudget(1 << 20, SEGMENT);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            read(device, 0, 4 * KIB);
            // The second read opens the window at its own segment and fetches it itself, like the kernel's
            // synchronous readahead; the third is served from it.
            read(device, 4 * KIB, 4 * KIB);
            assertPattern(read(device, 8 * KIB, 4 * KIB), 8 * KIB);
            assertEquals(2, device.stats().layerCounter("readahead_hits"), "segment 0 was ready and served");

            byte[] fresh = new byte[4 * KIB];
            java.util.Arrays.fill(fresh, (byte) 0x33);
            device.write(16 * KIB, ByteBuffer.wrap(fresh));
            assertPattern(read(device, 12 * KIB, 4 * KIB), 12 * KIB);
            assertArrayEquals(fresh, read(device, 16 * KIB, 4 * KIB).array());

            for (long at = 20 * KIB; at < SEGMENT + 8 * KIB; at += 4 * KIB) {
                read(device, at, 4 * KIB);
            }
            long hitsBefore = device.stats().layerCounter("readahead_hits");
            await("segment 1 prefetched", () -> device.stats().layerCounter("prefetch_bytes") >= 2 * SEGMENT);
            assertPattern(read(device, SEGMENT + 8 * KIB, 4 * KIB), SEGMENT + 8 * KIB);
            assertEquals(hitsBefore + 1, device.stats().layerCounter("readahead_hits"), "segment 1 was ready");

            device.discard(SEGMENT + 12 * KIB, 4 * KIB);
            assertArrayEquals(new byte[4 * KIB], read(device, SEGMENT + 12 * KIB, 4 * KIB).array());
            assertEquals(1, device.stats().discardOps());
        }
    }

    @Test
    void failedPrefetchIsReportedToNoReaderAndReadersGetTheirOwnErrors() throws Exception {
        FaultInjectingBlockDevice faulty = new FaultInjectingBlockDevice(patterned("faulty", 4 << 20));
        InstrumentedBlockDevice below = new InstrumentedBlockDevice(faulty);
        ReadaheadBudget budget = new ReadaheadBudget(1 << 20, SEGMENT);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            below.holdPrefetchesBeforeReading();
            read(device, SEGMENT - 8 * KIB, 4 * KIB);
            read(device, SEGMENT - 4 * KIB, 4 * KIB);
            await("the prefetch of segment 1 to be under way", () -> below.heldPrefetches.get() == 1);
            faulty.failNow();
            below.releasePrefetches();
            await("the prefetch to fail and return its segment", () -> device.stats().layerCounter("prefetch_errors") == 1
                    && budget.inUseBytes() == 0);
            faulty.heal();

            assertPattern(read(device, SEGMENT + 8 * KIB, 4 * KIB), SEGMENT + 8 * KIB);
            assertPattern(read(device, 1 << 20, 4 * KIB), 1 << 20);
            assertEquals(0, device.stats().errors());

            faulty.failNow();
            assertThrows(IOException.class, () -> read(device, 2 << 20, 4 * KIB));
            assertEquals(1, device.stats().errors());
        }
    }

    @Test
    void sharedBudgetIsNeverExceededAndAnExhaustedBudgetNeverBlocksReads() throws Exception {
        ReadaheadBudget budget = new ReadaheadBudget(2 * SEGMENT, SEGMENT);
        InstrumentedBlockDevice belowA = new InstrumentedBlockDevice(patterned("a", 4 << 20));
        InstrumentedBlockDevice belowB = new InstrumentedBlockDevice(patterned("b", 4 << 20));
        ReadaheadBlockDevice deviceA = new ReadaheadBlockDevice(belowA, budget);
        ReadaheadBlockDevice deviceB = new ReadaheadBlockDevice(belowB, budget);
        try {
            assertThrows(IllegalArgumentException.class, () -> deviceA.setReadAheadKb(3 * SEGMENT / KIB));
            belowA.holdPrefetches();
            for (long segmentEnd : new long[] {SEGMENT, 1 << 20}) {
                read(deviceA, segmentEnd - 8 * KIB, 4 * KIB);
                read(deviceA, segmentEnd - 4 * KIB, 4 * KIB);
            }
            await("device A to hold the whole budget", () -> belowA.heldPrefetches.get() == 2);
            assertEquals(budget.totalBytes(), budget.inUseBytes());

            for (long at = 0; at < 512 * KIB; at += 4 * KIB) {
                assertPattern(read(deviceB, at, 4 * KIB), at);
                assertTrue(budget.inUseBytes() <= budget.totalBytes());
            }
            assertEquals(0, deviceB.stats().layerCounter("readahead_hits"));
            assertTrue(deviceB.stats().layerCounter("prefetch_skipped_no_budget") > 0);

            belowA.releasePrefetches();
            deviceA.close();
            assertEquals(0, budget.inUseBytes(), "closing A returned its segments");
            // B's stream is established; the read that finds memory free opens its window and is served from it.
            assertPattern(read(deviceB, 512 * KIB, 4 * KIB), 512 * KIB);
            assertPattern(read(deviceB, 516 * KIB, 4 * KIB), 516 * KIB);
            assertEquals(2, deviceB.stats().layerCounter("readahead_hits"), "B prefetches once memory is free");
        } finally {
            belowA.releasePrefetches();
            deviceA.close();
            deviceB.close();
        }
        assertEquals(0, budget.inUseBytes());
    }

    @Test
    void readAheadDefaultsToTwoStripesAndIsValidatedAtRunTime() throws Exception {
        ReadaheadBudget budget = new ReadaheadBudget(8 << 20);
        Geometry stripe = new Geometry(64 * KIB, 192 * KIB, 0, 1 << 20);
        InstrumentedBlockDevice below = new InstrumentedBlockDevice(patterned("md0", 4 << 20), stripe);
        try (ReadaheadBlockDevice device = new ReadaheadBlockDevice(below, budget)) {
            assertEquals(384, device.readAheadKb());
            assertEquals(stripe, device.geometry());
            assertEquals(4 << 20, device.size());
            assertEquals(512, device.logicalBlockSize());
            assertSame(below, device.below());
            assertEquals("md0", device.name());

            assertThrows(IllegalArgumentException.class, () -> device.setReadAheadKb(-128));
            assertThrows(IllegalArgumentException.class, () -> device.setReadAheadKb(100));
            assertThrows(IllegalArgumentException.class, () -> device.setReadAheadKb(16 * 1024));
            assertEquals(384, device.readAheadKb());

            device.setReadAheadKb(0);
            for (long at = 0; at < 256 * KIB; at += 4 * KIB) {
                assertPattern(read(device, at, 4 * KIB), at);
            }
            assertEquals(0, device.stats().layerCounter("prefetch_bytes"), "read_ahead_kb 0 turns prefetch off");
            assertEquals(64, below.foregroundReads.sum());

            device.flush();
            assertEquals(1, device.stats().flushOps());
            assertEquals(1, below.stats().flushOps());
        }
        assertEquals(128, ReadaheadBlockDevice.defaultReadAheadBytes(Geometry.simple(512), budget) / KIB);
        assertEquals(256, ReadaheadBlockDevice.defaultReadAheadBytes(new Geometry(64 * KIB, 192 * KIB, 0, 0),
                new ReadaheadBudget(256 * KIB)) / KIB, "capped at the budget");
    }
}
