package io.stripestack.blockdev;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Per-device counters in the spirit of /proc/diskstats, plus counters a layer registers for itself
 * (RAID: full-stripe writes, read-modify-writes, member pre-reads; crypto: sectors encrypted...).
 *
 * <p>Concurrency: every counter is a {@link LongAdder} or atomic; any thread may update any counter
 * without locks and without allocating. Layer counters are registered at construction (from the
 * constructing thread, before the device is shared); {@link #counter} after that only looks them up.
 * Readers ({@link #snapshot}) see each counter's value at some instant during the call.
 */
public final class IoStats {
    private final String device;
    private final LongAdder readOps = new LongAdder();
    private final LongAdder readBytes = new LongAdder();
    private final LongAdder readNanos = new LongAdder();
    private final LongAdder writeOps = new LongAdder();
    private final LongAdder writeBytes = new LongAdder();
    private final LongAdder writeNanos = new LongAdder();
    private final LongAdder flushOps = new LongAdder();
    private final LongAdder discardOps = new LongAdder();
    private final LongAdder discardBytes = new LongAdder();
    private final LongAdder errors = new LongAdder();
    private final AtomicLong inFlight = new AtomicLong();
    private final Map<String, LongAdder> layerCounters = Collections.synchronizedMap(new LinkedHashMap<>());

    public IoStats(String device) {
        this.device = device;
    }

    public String device() {
        return device;
    }

    /** Call at the start of a read; pass the result to {@link #endRead}. */
    public long startIo() {
        inFlight.incrementAndGet();
        return System.nanoTime();
    }

    public void endRead(long startNanos, long bytes) {
        readNanos.add(System.nanoTime() - startNanos);
        readOps.increment();
        readBytes.add(bytes);
        inFlight.decrementAndGet();
    }

    public void endWrite(long startNanos, long bytes) {
        writeNanos.add(System.nanoTime() - startNanos);
        writeOps.increment();
        writeBytes.add(bytes);
        inFlight.decrementAndGet();
    }

    /** Ends an I/O that failed; it counts as an error, not as an operation. */
    public void endFailed(long startNanos) {
        errors.increment();
        inFlight.decrementAndGet();
    }

    public void countFlush() {
        flushOps.increment();
    }

    public void countDiscard(long bytes) {
        discardOps.increment();
        discardBytes.add(bytes);
    }

    /**
     * Returns the layer counter of that name, registering it at zero the first time. Hold the returned
     * adder in a field: looking it up per I/O is neither needed nor free.
     */
    public LongAdder counter(String name) {
        return layerCounters.computeIfAbsent(name, n -> new LongAdder());
    }

    public long readOps() { return readOps.sum(); }
    public long readBytes() { return readBytes.sum(); }
    public long readNanos() { return readNanos.sum(); }
    public long writeOps() { return writeOps.sum(); }
    public long writeBytes() { return writeBytes.sum(); }
    public long writeNanos() { return writeNanos.sum(); }
    public long flushOps() { return flushOps.sum(); }
    public long discardOps() { return discardOps.sum(); }
    public long discardBytes() { return discardBytes.sum(); }
    public long errors() { return errors.sum(); }
    public long inFlight() { return inFlight.get(); }

    /** Value of a layer counter, 0 if it was never registered. */
    public long layerCounter(String name) {
        LongAdder adder = layerCounters.get(name);
        return adder == null ? 0 : adder.sum();
    }

    /** Every counter by name, standard ones first, in a stable order. */
    public Map<String, Long> snapshot() {
        Map<String, Long> out = new LinkedHashMap<>();
        out.put("read_ops", readOps.sum());
        out.put("read_bytes", readBytes.sum());
        out.put("read_ms", readNanos.sum() / 1_000_000);
        out.put("write_ops", writeOps.sum());
        out.put("write_bytes", writeBytes.sum());
        out.put("write_ms", writeNanos.sum() / 1_000_000);
        out.put("flush_ops", flushOps.sum());
        out.put("discard_ops", discardOps.sum());
        out.put("discard_bytes", discardBytes.sum());
        out.put("errors", errors.sum());
        out.put("in_flight", inFlight.get());
        List<Map.Entry<String, LongAdder>> entries;
        synchronized (layerCounters) {
            entries = new ArrayList<>(layerCounters.entrySet());
        }
        for (Map.Entry<String, LongAdder> e : entries) {
            out.put(e.getKey(), e.getValue().sum());
        }
        return out;
    }

    @Override
    public String toString() {
        return device + " " + snapshot();
    }
}
