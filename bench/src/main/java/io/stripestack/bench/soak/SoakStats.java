package io.stripestack.bench.soak;

import io.stripestack.bench.soak.BlockPattern.Verdict;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The soak's counters and the first corruptions it saw. Updated by every worker (LongAdders); the list of
 * first corruptions and the first I/O error are guarded by {@code this}.
 */
public final class SoakStats {
    /** How many corruptions are kept with their details (the counters count all of them). */
    public static final int KEPT_CORRUPTIONS = 20;

    /** One corrupted block read: where, what was allowed, what was found. */
    public record Corruption(long block, long lba, Verdict verdict, int minGeneration, int maxGeneration,
            int foundGeneration, long foundBlock) {
        @Override
        public String toString() {
            String expected = minGeneration == maxGeneration ? "generation " + maxGeneration
                    : "generation " + minGeneration + ".." + maxGeneration;
            String found = switch (verdict) {
                case TORN -> "bytes that fail the checksum (torn or corrupted)";
                case STALE -> foundGeneration == 0 ? "zeros or another run's data (stale)"
                        : "generation " + foundGeneration + " (stale)";
                case MISPLACED -> "the content of block " + foundBlock + " generation " + foundGeneration + " (misplaced)";
                case PHANTOM -> "generation " + foundGeneration + ", never written there (phantom)";
                default -> verdict.toString();
            };
            return "block " + block + " (LBA " + lba + ", byte " + block * BlockPattern.BLOCK + "): expected "
                    + expected + ", found " + found;
        }
    }

    final LongAdder blocksWritten = new LongAdder();
    final LongAdder blocksVerified = new LongAdder();
    final LongAdder writes = new LongAdder();
    final LongAdder reads = new LongAdder();
    final LongAdder syncs = new LongAdder();
    final LongAdder ioErrors = new LongAdder();
    private final Map<Verdict, LongAdder> corrupted = new EnumMap<>(Verdict.class);
    private final List<Corruption> first = new ArrayList<>();
    private String firstIoError;

    SoakStats() {
        for (Verdict v : Verdict.values()) {
            if (v != Verdict.OK && v != Verdict.UNWRITTEN) {
                corrupted.put(v, new LongAdder());
            }
        }
    }

    /** Counts a corruption; returns true when it is one of the first {@link #KEPT_CORRUPTIONS} (print it). */
    boolean corruption(Corruption c) {
        corrupted.get(c.verdict()).increment();
        synchronized (this) {
            if (first.size() < KEPT_CORRUPTIONS) {
                first.add(c);
                return true;
            }
            return false;
        }
    }

    /** Counts an I/O error; returns true for the first one (print it). */
    boolean ioError(String message) {
        ioErrors.increment();
        synchronized (this) {
            if (firstIoError == null) {
                firstIoError = message;
                return true;
            }
            return false;
        }
    }

    public long blocksWritten() {
        return blocksWritten.sum();
    }

    public long blocksVerified() {
        return blocksVerified.sum();
    }

    public long syncs() {
        return syncs.sum();
    }

    public long ioErrors() {
        return ioErrors.sum();
    }

    public long corruptions() {
        long n = 0;
        for (LongAdder a : corrupted.values()) {
            n += a.sum();
        }
        return n;
    }

    public long corruptions(Verdict v) {
        LongAdder a = corrupted.get(v);
        return a == null ? 0 : a.sum();
    }

    public synchronized List<Corruption> firstCorruptions() {
        return List.copyOf(first);
    }

    public synchronized String firstIoError() {
        return firstIoError;
    }

    /** "stale 1, torn 2" or "none". */
    String corruptionSummary() {
        StringBuilder s = new StringBuilder();
        for (Map.Entry<Verdict, LongAdder> e : corrupted.entrySet()) {
            long n = e.getValue().sum();
            if (n > 0) {
                s.append(s.length() == 0 ? "" : ", ").append(e.getKey().name().toLowerCase()).append(' ').append(n);
            }
        }
        return s.length() == 0 ? "none" : s.toString();
    }
}
