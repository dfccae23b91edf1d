package io.stripestack.bench;

/**
 * What one timed run of a workload did.
 *
 * @param bytes     bytes read or written
 * @param wallNanos elapsed time
 * @param cpuNanos  CPU time of the whole process over the run (every thread: callers, member I/O,
 *                  readahead and cipher workers)
 */
record Sample(long bytes, long wallNanos, long cpuNanos) {

    /** Decimal megabytes per second, as dd and fio print them. */
    double megabytesPerSecond() {
        return bytes / 1e6 / (wallNanos / 1e9);
    }

    /** Process CPU time over wall time: 100 means one core busy for the whole run (top's convention). */
    double cpuPercent() {
        return 100.0 * cpuNanos / wallNanos;
    }

    /** CPU milliseconds spent per GiB moved: the cost, independent of how busy the machine was. */
    double cpuMillisPerGib() {
        return cpuNanos / 1e6 / gibibytes();
    }

    double gibibytes() {
        return bytes / (double) (1L << 30);
    }
}
