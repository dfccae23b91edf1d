package io.stripestack.bench.soak;

import java.time.Duration;

/**
 * How a soak runs.
 *
 * @param duration        how long; null runs until {@link SoakRunner#stop()} (Ctrl-C)
 * @param queueDepth      I/Os in flight, one worker thread each
 * @param maxIoBlocks     largest I/O in 4 KiB blocks; also the extent a worker locks, so one I/O never races
 *                        another on the same block
 * @param readPercent     share of I/Os that read and verify (the rest write)
 * @param seed            the run's seed: payloads derive from it, and another run's blocks are told apart by it
 * @param spanBytes       bytes from the start of the device to use; 0 = the whole device
 * @param reportEvery     period of the running summary
 * @param syncEvery       period of SYNCHRONIZE CACHE / flush, ZERO for never
 * @param failMemberAfter when to fail a member of the array below, null for never
 * @param failRole        which member role to fail
 * @param spare           a file to add as a hot spare right after the member failure (rebuilt under load), or null
 */
public record SoakSettings(Duration duration, int queueDepth, int maxIoBlocks, int readPercent, long seed,
        long spanBytes, Duration reportEvery, Duration syncEvery, Duration failMemberAfter, int failRole,
        java.nio.file.Path spare) {

    public SoakSettings {
        if (queueDepth < 1 || queueDepth > 1024) {
            throw new IllegalArgumentException("queue depth " + queueDepth + " is out of range 1..1024");
        }
        if (maxIoBlocks < 1 || maxIoBlocks > 4096) {
            throw new IllegalArgumentException("the largest I/O must be 4 KiB..16 MiB, got " + maxIoBlocks + " blocks");
        }
        if (readPercent < 0 || readPercent > 100) {
            throw new IllegalArgumentException("read percentage " + readPercent + " is out of range 0..100");
        }
        if (spare != null && failMemberAfter == null) {
            throw new IllegalArgumentException("a spare is added after the member failure: give --fail-member-after too");
        }
        if (spanBytes < 0) {
            throw new IllegalArgumentException("span " + spanBytes + " is negative");
        }
    }

    public static SoakSettings defaults() {
        return new SoakSettings(null, 8, 32, 30, System.nanoTime(), 0, Duration.ofSeconds(10), Duration.ofSeconds(5),
                null, 0, null);
    }

    public SoakSettings withDuration(Duration d) {
        return new SoakSettings(d, queueDepth, maxIoBlocks, readPercent, seed, spanBytes, reportEvery, syncEvery,
                failMemberAfter, failRole, spare);
    }

    public SoakSettings withLoad(int depth, int ioBlocks, int reads) {
        return new SoakSettings(duration, depth, ioBlocks, reads, seed, spanBytes, reportEvery, syncEvery,
                failMemberAfter, failRole, spare);
    }

    public SoakSettings withSpan(long bytes) {
        return new SoakSettings(duration, queueDepth, maxIoBlocks, readPercent, seed, bytes, reportEvery, syncEvery,
                failMemberAfter, failRole, spare);
    }

    public SoakSettings withSeed(long s) {
        return new SoakSettings(duration, queueDepth, maxIoBlocks, readPercent, s, spanBytes, reportEvery, syncEvery,
                failMemberAfter, failRole, spare);
    }

    public SoakSettings withPeriods(Duration report, Duration sync) {
        return new SoakSettings(duration, queueDepth, maxIoBlocks, readPercent, seed, spanBytes, report, sync,
                failMemberAfter, failRole, spare);
    }

    public SoakSettings withMemberFailure(Duration after, int role) {
        return new SoakSettings(duration, queueDepth, maxIoBlocks, readPercent, seed, spanBytes, reportEvery, syncEvery,
                after, role, spare);
    }

    /** After the member failure, add {@code file} as a hot spare: the array rebuilds onto it under the soak. */
    public SoakSettings withSpare(java.nio.file.Path file) {
        return new SoakSettings(duration, queueDepth, maxIoBlocks, readPercent, seed, spanBytes, reportEvery, syncEvery,
                failMemberAfter, failRole, file);
    }

    /** {@code 500ms}, {@code 30s}, {@code 90m}, {@code 2h}, {@code 3d}; a bare number is seconds. */
    public static Duration parseDuration(String text) {
        String t = text.trim().toLowerCase();
        try {
            if (t.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2)));
            }
            char unit = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
            if (Character.isDigit(unit)) {
                return Duration.ofSeconds(Long.parseLong(t));
            }
            long n = Long.parseLong(t.substring(0, t.length() - 1));
            switch (unit) {
                case 's':
                    return Duration.ofSeconds(n);
                case 'm':
                    return Duration.ofMinutes(n);
                case 'h':
                    return Duration.ofHours(n);
                case 'd':
                    return Duration.ofDays(n);
                default:
                    break;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("'" + text + "' is not a duration (e.g. 500ms, 30s, 90m, 2h, 3d)");
    }

    /** {@code 0:00:05} or {@code 2d 3:04:05}. */
    public static String format(Duration d) {
        long s = d.toSeconds();
        String hms = String.format("%d:%02d:%02d", s / 3600 % 24, s / 60 % 60, s % 60);
        return s >= 86400 ? (s / 86400) + "d " + hms : hms;
    }
}
