package io.stripestack.readahead;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The stream policy alone: which reads form streams, where windows start, how they grow, no I/O. */
class StreamDetectorTest {
    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;
    private static final int SEGMENT = 128 * KIB;
    private static final long LIMIT = 4L * MIB;
    private static final long DEVICE = 1L << 40;

    /** Records what the detector asks for; grants every prefetch unless told to stop at a point. */
    private static final class Recorder implements StreamDetector.Prefetcher {
        final List<long[]> prefetched = new ArrayList<>();
        final List<long[]> abandoned = new ArrayList<>();
        long grantUpTo = Long.MAX_VALUE;

        @Override
        public long prefetch(long from, long to) {
            prefetched.add(new long[] {from, to});
            return Math.max(from, Math.min(to, grantUpTo));
        }

        @Override
        public void abandon(long from, long to) {
            abandoned.add(new long[] {from, to});
        }

        long[] last() {
            return prefetched.get(prefetched.size() - 1);
        }
    }

    private static StreamDetector detector(long size) {
        return new StreamDetector(size, SEGMENT, (int) (MIB / SEGMENT));
    }

    private static void assertRange(long from, long to, long[] range) {
        assertEquals(from, range[0], "from");
        assertEquals(to, range[1], "to");
    }

    @Test
    void windowSizesFollowTheKernelsRampUp() {
        // initial: the request rounded up to a power of two, x4 up to 1/32 of the limit, x2 up to 1/4, else the limit
        assertEquals(4 * 128 * KIB, StreamDetector.initialWindow(128 * KIB, LIMIT, SEGMENT));
        assertEquals(4 * 128 * KIB, StreamDetector.initialWindow(100 * KIB, LIMIT, SEGMENT));
        assertEquals(2 * 512 * KIB, StreamDetector.initialWindow(512 * KIB, LIMIT, SEGMENT));
        assertEquals(LIMIT, StreamDetector.initialWindow(2 * MIB, LIMIT, SEGMENT));
        // rounded up to whole segments, never beyond the limit
        assertEquals(SEGMENT, StreamDetector.initialWindow(4 * KIB, LIMIT, SEGMENT));
        assertEquals(3 * SEGMENT, StreamDetector.initialWindow(SEGMENT, 3L * SEGMENT, SEGMENT));
        // next: x4 under 1/16 of the limit, x2 up to half, then the limit
        assertEquals(4 * 128 * KIB, StreamDetector.nextWindow(128 * KIB, LIMIT));
        assertEquals(2 * 256 * KIB, StreamDetector.nextWindow(256 * KIB, LIMIT));
        assertEquals(LIMIT, StreamDetector.nextWindow(2 * MIB, LIMIT));
        assertEquals(LIMIT, StreamDetector.nextWindow(3 * MIB, LIMIT));
        assertEquals(LIMIT, StreamDetector.nextWindow(LIMIT, LIMIT));
    }

    @Test
    void aStreamsSecondReadOpensAWindowAndEnteringItIssuesTheNextLarger() {
        StreamDetector detector = detector(DEVICE);
        Recorder recorder = new Recorder();
        int read = 128 * KIB;
        detector.onRead(0, read, LIMIT, recorder);
        assertTrue(recorder.prefetched.isEmpty(), "a first read is only a candidate");
        detector.onRead(read, read, LIMIT, recorder);
        // 128 KiB is 1/32 of the limit: four times the request, from the end of the read
        assertRange(2 * read, 2 * read + 512 * KIB, recorder.last());
        // entering that window issues the next, twice as large, where the last one ended
        detector.onRead(2 * read, read, LIMIT, recorder);
        assertEquals(2, recorder.prefetched.size());
        long windowStart = 2 * read + 512 * KIB;
        assertRange(windowStart, windowStart + MIB, recorder.last());
        for (long offset = 3L * read; offset + read <= windowStart; offset += read) {
            detector.onRead(offset, read, LIMIT, recorder);
        }
        assertEquals(2, recorder.prefetched.size(), "no window before the reader enters the latest one");
        detector.onRead(windowStart, read, LIMIT, recorder);
        assertEquals(3, recorder.prefetched.size());
        assertRange(windowStart + MIB, windowStart + 3 * MIB, recorder.last());
        // and then the limit, never more
        for (long offset = windowStart + read; offset + read <= windowStart + MIB; offset += read) {
            detector.onRead(offset, read, LIMIT, recorder);
        }
        detector.onRead(windowStart + MIB, read, LIMIT, recorder);
        assertRange(windowStart + 3 * MIB, windowStart + 3 * MIB + LIMIT, recorder.last());
    }

    @Test
    void randomReadsAndReadsAsLargeAsTheLimitPrefetchNothing() {
        StreamDetector detector = detector(DEVICE);
        Recorder recorder = new Recorder();
        long[] offsets = {7 * MIB, 300 * MIB, 2 * MIB, 90 * MIB, 512 * MIB, 40 * MIB, 3 * MIB, 700 * MIB};
        for (long offset : offsets) {
            detector.onRead(offset, 4 * KIB, LIMIT, recorder);
        }
        for (long offset = 0; offset < 64L * MIB; offset += LIMIT) {
            detector.onRead(offset + 800L * MIB, (int) LIMIT, LIMIT, recorder);
        }
        assertTrue(recorder.prefetched.isEmpty());
    }

    @Test
    void slightlyReorderedReadsKeepTheirStreamButIssueNothingUnlessTheyGoFurther() {
        int read = 64 * KIB;
        long base = 16L * MIB;
        // A late read up to four requests before the furthest one is part of the stream; five back, it
        // starts a candidate of its own, which the next read (half as long, so that only the candidate can
        // continue it) ramps up.
        for (int back = 2; back <= 5; back++) {
            StreamDetector detector = detector(DEVICE);
            Recorder recorder = new Recorder();
            detector.onRead(base, read, LIMIT, recorder);
            detector.onRead(base + read, read, LIMIT, recorder);
            assertEquals(1, recorder.prefetched.size());
            long late = base + 2 * read - (long) back * read;
            detector.onRead(late, read, LIMIT, recorder);
            assertEquals(1, recorder.prefetched.size(), "a late read issues nothing");
            detector.onRead(late + read, read / 2, LIMIT, recorder);
            if (back <= 4) {
                assertEquals(1, recorder.prefetched.size(), back + " requests back: part of the stream");
            } else {
                assertEquals(2, recorder.prefetched.size(), "5 requests back: a candidate of its own");
            }
            assertTrue(recorder.abandoned.isEmpty(), "the stream was never replaced");
        }
        // a candidate is continued only exactly where it ended: read backwards it never prefetches
        StreamDetector fresh = detector(DEVICE);
        Recorder other = new Recorder();
        for (int i = 20; i > 0; i--) {
            fresh.onRead(base + (long) i * read, read, LIMIT, other);
        }
        assertTrue(other.prefetched.isEmpty());
    }

    @Test
    void interleavedStreamsEachKeepTheirOwnWindows() {
        StreamDetector detector = detector(DEVICE);
        Recorder recorder = new Recorder();
        int read = 128 * KIB;
        long[] bases = new long[StreamDetector.MAX_STREAMS];
        for (int s = 0; s < bases.length; s++) {
            bases[s] = s * 64L * MIB;
        }
        for (int step = 0; step < 2; step++) {
            for (long base : bases) {
                detector.onRead(base + step * read, read, LIMIT, recorder);
            }
        }
        assertEquals(StreamDetector.MAX_STREAMS, recorder.prefetched.size(), "every stream opened its window");
        for (int s = 0; s < bases.length; s++) {
            assertRange(bases[s] + 2 * read, bases[s] + 2 * read + 512 * KIB, recorder.prefetched.get(s));
        }
    }

    @Test
    void aNewReadReplacesACandidateBeforeAStreamAndTheReplacedStreamGivesBackWhatItDidNotRead() {
        StreamDetector detector = detector(DEVICE);
        Recorder recorder = new Recorder();
        int read = 128 * KIB;
        // stream 0 reads ahead; the other slots fill with candidates
        detector.onRead(0, read, LIMIT, recorder);
        detector.onRead(read, read, LIMIT, recorder);
        for (int s = 1; s < StreamDetector.MAX_STREAMS; s++) {
            detector.onRead(s * 64L * MIB, read, LIMIT, recorder);
        }
        // a new read takes the least recently used candidate's slot: nothing to give back
        detector.onRead(2000L * MIB, read, LIMIT, recorder);
        assertTrue(recorder.abandoned.isEmpty());
        // the stream still continues
        detector.onRead(2 * read, read, LIMIT, recorder);
        assertEquals(2, recorder.prefetched.size());
        long prefetchEnd = recorder.last()[1];
        // once every slot is a reading stream, the least recently used one (stream 0) is replaced
        for (int s = 1; s < StreamDetector.MAX_STREAMS; s++) {
            long base = s == 1 ? 2000L * MIB : s * 64L * MIB;
            detector.onRead(base + read, read, LIMIT, recorder);
        }
        recorder.abandoned.clear();
        detector.onRead(3000L * MIB, read, LIMIT, recorder);
        assertEquals(1, recorder.abandoned.size());
        assertRange(3 * read, prefetchEnd, recorder.abandoned.get(0));
    }

    @Test
    void aWindowTheBudgetCouldNotGrantIsAskedForAgainByTheNextRead() {
        StreamDetector detector = detector(DEVICE);
        Recorder recorder = new Recorder();
        int read = 128 * KIB;
        recorder.grantUpTo = 0;
        detector.onRead(0, read, LIMIT, recorder);
        detector.onRead(read, read, LIMIT, recorder);
        assertRange(2 * read, 2 * read + 512 * KIB, recorder.last());
        recorder.grantUpTo = Long.MAX_VALUE;
        detector.onRead(2 * read, read, LIMIT, recorder);
        // still ramping: the same initial window, from where the reader now is
        assertRange(3 * read, 3 * read + 512 * KIB, recorder.last());
    }

    @Test
    void windowsStopAtTheEndOfTheDevice() {
        long size = 1 * MIB;
        StreamDetector detector = detector(size);
        Recorder recorder = new Recorder();
        int read = 128 * KIB;
        detector.onRead(size - 4L * read, read, LIMIT, recorder);
        detector.onRead(size - 3L * read, read, LIMIT, recorder);
        assertRange(size - 2L * read, size, recorder.last());
        detector.onRead(size - 2L * read, read, LIMIT, recorder);
        detector.onRead(size - read, read, LIMIT, recorder);
        assertEquals(1, recorder.prefetched.size(), "nothing lies past the end");
    }

    @Test
    void anEstablishedStreamWhoseWindowIsOneReadIssuesOneWindowEarly() {
        long limit = MIB; // one prefetch read (1 MiB) per window once ramped up
        StreamDetector detector = detector(DEVICE);
        Recorder recorder = new Recorder();
        int read = 128 * KIB;
        long offset = 0;
        // read well past two full windows
        while (offset < 4L * limit) {
            detector.onRead(offset, read, limit, recorder);
            offset += read;
        }
        int issued = recorder.prefetched.size();
        long[] latest = recorder.last();
        long[] before = recorder.prefetched.get(issued - 2);
        assertEquals(limit, latest[1] - latest[0], "ramped up to the limit");
        assertTrue(offset + read <= latest[0], "the reader has not entered the latest window");
        // entering the window before the latest one already issues the next
        while (offset + read <= before[0]) {
            offset += read;
        }
        assertTrue(offset < latest[0]);
        detector.onRead(offset, read, limit, recorder);
        assertEquals(issued + 1, recorder.prefetched.size(), "issued from the previous window");
        assertRange(latest[1], latest[1] + limit, recorder.last());
    }

    @Test
    void clearForgetsEveryStream() {
        StreamDetector detector = detector(DEVICE);
        Recorder recorder = new Recorder();
        int read = 128 * KIB;
        detector.onRead(0, read, LIMIT, recorder);
        detector.clear();
        detector.onRead(read, read, LIMIT, recorder);
        assertTrue(recorder.prefetched.isEmpty(), "the continuation started a new candidate");
        assertTrue(recorder.abandoned.isEmpty());
    }
}
