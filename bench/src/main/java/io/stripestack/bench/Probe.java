package io.stripestack.bench;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.IoStats;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * A counter read before and after each timed run; {@link Measured} reports its change per GiB moved.
 *
 * @param name    what it counts, for diagnostics
 * @param counter reads the counter's current value
 */
record Probe(String name, LongSupplier counter) {

    /** A layer counter of {@code stats}, e.g. the RAID layer's {@code member_prereads}. */
    static Probe layerCounter(IoStats stats, String counterName) {
        return new Probe(counterName, () -> stats.layerCounter(counterName));
    }

    /** Bytes read from all of {@code devices} (the member files: pre-reads show up here during writes). */
    static Probe bytesRead(List<? extends BlockDevice> devices) {
        return new Probe("member_bytes_read", () -> {
            long sum = 0;
            for (BlockDevice d : devices) {
                sum += d.stats().readBytes();
            }
            return sum;
        });
    }
}
