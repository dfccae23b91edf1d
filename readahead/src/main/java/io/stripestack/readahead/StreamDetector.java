package io.stripestack.readahead;

/**
 * The readahead policy, apart from any I/O: which reads form a sequential stream, where each stream's next
 * window starts, how large it is and when it is issued. {@link ReadaheadBlockDevice} feeds it every read
 * while readahead is on and carries out what it decides through a {@link Prefetcher}; see that class and
 * docs/readahead.md for the algorithm as a whole.
 *
 * <p>Streams: up to {@value #MAX_STREAMS}, so interleaved sequential readers each keep their own state. A
 * read starting exactly where a stream's furthest read ended continues it; once the stream reads ahead, so
 * does one starting up to four requests before that point, though it issues
 * nothing unless it ends beyond the furthest read. Anything else starts a candidate stream in the slot of
 * an unused one, else of the least recently used candidate, else of the least recently used stream; what
 * the replaced stream prefetched and never read is given back ({@link Prefetcher#abandon}). The second read
 * of a stream opens a window sized from the request ({@link #initialWindow}); each time the reader enters
 * the most recently issued window the next one is issued ({@link #nextWindow}), up to the limit. Once a
 * stream has read two full windows and a window is a single prefetch read, the mark moves one window back.
 *
 * <p>Not thread-safe: the device calls it under its lock.
 */
final class StreamDetector {
    /** Sequential streams tracked per device. */
    static final int MAX_STREAMS = 16;

    /** What the detector asks of the device. */
    interface Prefetcher {
        /**
         * Prefetches what is not yet held of {@code [from, to)} (segment-aligned {@code from}) and returns
         * where it stopped: {@code to}, or less when the budget ran out.
         */
        long prefetch(long from, long to);

        /** A stream is being replaced: gives back what it prefetched in {@code [from, to)} and nobody has read yet. */
        void abandon(long from, long to);
    }

    private long size;
    private final int segmentBytes;
    /** The most segments one prefetch read spans. */
    private final int maxRunSegments;
    private final Stream[] streams = new Stream[MAX_STREAMS];
    private long tick;

    /**
     * @param size           the device's size in bytes: no window reaches past it
     * @param segmentBytes   the budget's segment: windows start on and are sized in whole segments
     * @param maxRunSegments the segments of one prefetch read, which decides when a window is "one read"
     */
    StreamDetector(long size, int segmentBytes, int maxRunSegments) {
        this.size = size;
        this.segmentBytes = segmentBytes;
        this.maxRunSegments = maxRunSegments;
        for (int i = 0; i < streams.length; i++) {
            streams[i] = new Stream();
        }
    }

    /** The device grew: windows may reach up to its new end. */
    void resized(long newSize) {
        size = newSize;
    }

    /** Forgets every stream (the limit changed); the device drops what they had prefetched itself. */
    void clear() {
        for (Stream stream : streams) {
            stream.clear();
        }
    }

    /**
     * Finds or starts the read's stream and, when the reader has entered the last window, has the next one
     * prefetched. {@code limit} is the current {@code read_ahead_kb} in bytes, above 0.
     */
    void onRead(long offset, int length, long limit, Prefetcher prefetcher) {
        long end = offset + length;
        Stream stream = streamContinuedBy(offset, length);
        if (stream == null) {
            stream = victimStream();
            retire(stream, prefetcher);
            stream.start(offset, end, ++tick);
            return;
        }
        stream.lastUse = ++tick;
        long furthest = stream.next;
        stream.next = Math.max(furthest, end);
        boolean rampStart = stream.window == 0;
        if (length >= limit || end <= furthest || (!rampStart && end <= stream.triggerAt)) {
            return;
        }
        long window = rampStart ? initialWindow(length, limit, segmentBytes) : nextWindow(stream.window, limit);
        long from = Math.max(stream.prefetchEnd, end / segmentBytes * segmentBytes);
        long to = Math.min(from + window, size);
        if (from >= to) {
            return;
        }
        long issuedTo = prefetcher.prefetch(from, to);
        if (issuedTo > from) {
            // The kernel's mark: entering this window issues the next. Once a stream has read two full
            // windows, a window that is one prefetch read moves the mark back to the previous window, so
            // two reads stay queued ahead of the reader: unlike the kernel's, our reader waits for a thread
            // hand-off at every read it catches up with. (Not before: an initiator's reordered reads start
            // short-lived extra streams, which must not each run that far ahead.)
            boolean oneRead = window <= (long) maxRunSegments * segmentBytes;
            boolean established = end - stream.startedAt >= 2 * limit;
            stream.triggerAt = oneRead && established && !rampStart ? stream.windowStart : from;
            stream.windowStart = from;
            stream.window = window;
            stream.prefetchEnd = issuedTo;
        }
    }

    /**
     * The kernel's initial window: the request rounded up to a power of two, times 4 or 2 while small,
     * rounded up to whole segments, at most the limit.
     */
    static long initialWindow(int length, long limit, int segmentBytes) {
        long size = Long.highestOneBit(length);
        if (size < length) {
            size <<= 1;
        }
        if (size <= limit / 32) {
            size *= 4;
        } else if (size <= limit / 4) {
            size *= 2;
        } else {
            size = limit;
        }
        long segments = (size + segmentBytes - 1) / segmentBytes;
        return Math.min(limit, segments * segmentBytes);
    }

    /** The kernel's next window: four times the last while under 1/16 of the limit, else twice, up to the limit. */
    static long nextWindow(long window, long limit) {
        if (window < limit / 16) {
            return 4 * window;
        }
        return window <= limit / 2 ? 2 * window : limit;
    }

    private Stream streamContinuedBy(long offset, int length) {
        for (Stream stream : streams) {
            if (stream.continuedBy(offset, length)) {
                return stream;
            }
        }
        return null;
    }

    /** An unused slot, else the least recently used candidate, else the least recently used stream. */
    private Stream victimStream() {
        Stream candidate = null;
        Stream any = null;
        for (Stream stream : streams) {
            if (!stream.active) {
                return stream;
            }
            if (stream.window == 0 && (candidate == null || stream.lastUse < candidate.lastUse)) {
                candidate = stream;
            }
            if (any == null || stream.lastUse < any.lastUse) {
                any = stream;
            }
        }
        return candidate != null ? candidate : any;
    }

    /** Gives back what a stream being replaced prefetched and never read. */
    private static void retire(Stream stream, Prefetcher prefetcher) {
        if (stream.active && stream.prefetchEnd > stream.next) {
            prefetcher.abandon(stream.next, stream.prefetchEnd);
        }
        stream.clear();
    }

    /** Per-stream readahead state. */
    private static final class Stream {
        static final int REORDER_REQUESTS = 4;
        boolean active;
        long lastUse;
        /** Where the stream's first read started. */
        long startedAt;
        /** End of the furthest read of the stream. */
        long next;
        /** Size of the most recent window; 0 while the stream is only a candidate. */
        long window;
        /** A read ending beyond it issues the next window: the start of the most recent one, or of the one before. */
        long triggerAt;
        /** Start of the most recent window. */
        long windowStart;
        /** End of the prefetched range. */
        long prefetchEnd;

        void start(long offset, long end, long now) {
            active = true;
            lastUse = now;
            startedAt = offset;
            next = end;
            window = 0;
            triggerAt = 0;
            windowStart = 0;
            prefetchEnd = 0;
        }

        /**
         * Exactly where the stream's furthest read ended, or, once it reads ahead, up to
         * {@value #REORDER_REQUESTS} requests before it: one initiator's queued reads arrive slightly out of
         * order. Such a late read extends the stream only if it ends beyond the furthest read.
         */
        boolean continuedBy(long offset, int length) {
            if (!active) {
                return false;
            }
            return offset == next || (window > 0 && offset < next && offset >= next - (long) REORDER_REQUESTS * length);
        }

        void clear() {
            active = false;
            window = 0;
            prefetchEnd = 0;
        }
    }
}
