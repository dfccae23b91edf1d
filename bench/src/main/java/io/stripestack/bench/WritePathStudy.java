package io.stripestack.bench;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.bench.ResultTable.Column;
import io.stripestack.targetserver.config.Sizes;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The write-path study: RAID-5 writes that fill whole stripes (parity from the new data alone, no member read) against
 * misaligned and small writes, which must pre-read data or parity (read-modify-write or reconstruct-write,
 * whichever reads less). Counts come from the RAID layer's counters and the member files' read bytes.
 */
final class WritePathStudy implements Study {
    /** Cap on requests per timed run, so 4 KiB random writes do not take minutes. */
    private static final long MAX_REQUESTS = 8192;

    @Override
    public String name() {
        return "writes";
    }

    @Override
    public String title() {
        return "Full-stripe writes vs read-modify-write (the stripe-aligned writes thread's comparison)";
    }

    /** One write pattern: label, request size, misalignment, queue depth, random or sequential. */
    private record Pattern(String label, int ioBytes, long shift, int queueDepth, boolean random) {
    }

    @Override
    public Result run(Bench bench) throws IOException {
        BenchSettings s = bench.settings();
        int chunk = s.chunkBytes();
        int stripe = chunk * (s.members() - 1);
        int qd = s.queueDepth();
        List<Pattern> patterns = List.of(
                new Pattern("full stripe aligned", stripe, 0, qd, false),
                new Pattern("full stripe +4KiB", stripe, 4096, qd, false),
                new Pattern("full stripe +81KiB", stripe, 81 << 10, qd, false),
                new Pattern("chunk seq x1", chunk, 0, 1, false),
                new Pattern("chunk seq x" + qd, chunk, 0, qd, false),
                new Pattern("64KiB random", 64 << 10, 0, qd, true),
                new Pattern("4KiB random", 4096, 0, qd, true));
        List<Measured> results = new ArrayList<>();
        int cacheRows;
        try (MemberSet files = bench.memberFiles("writes", s.members(), s.memberBytes())) {
            List<BlockDevice> members = files.open(s.members());
            try (Raid5Array raid = bench.createRaid5("writes", members, chunk)) {
                cacheRows = raid.stripeCacheSize();
                bench.prefill(raid);
                Probe[] probes = {
                        Probe.layerCounter(raid.stats(), "full_stripe_writes"),
                        Probe.layerCounter(raid.stats(), "rmw_writes"),
                        Probe.layerCounter(raid.stats(), "reconstruct_writes"),
                        Probe.layerCounter(raid.stats(), "member_prereads"),
                        Probe.bytesRead(members)};
                long size = raid.size();
                List<Bench.Trial> trials = new ArrayList<>();
                for (Pattern p : patterns) {
                    long total = Math.min(s.bytesPerRun(), p.ioBytes * MAX_REQUESTS);
                    Workload w = p.random
                            ? Workload.random(true, p.ioBytes, p.ioBytes, p.queueDepth, total, size)
                            : Workload.sequential(true, p.ioBytes, p.shift, p.queueDepth, total,
                                    size - (stripe - p.shift % stripe) % stripe);
                    trials.add(new Bench.Trial("raid5 x" + s.members() + " " + p.label, () -> new OffsetView(raid, 0, false),
                            w, probes));
                }
                results.addAll(bench.measureInterleaved(trials));
            }
        }
        return tabulate(s, patterns, results, cacheRows);
    }

    private static Result tabulate(BenchSettings s, List<Pattern> patterns, List<Measured> results, int cacheRows) {
        ResultTable table = new ResultTable("RAID-5 x" + s.members() + " writes, chunk " + Sizes.format(s.chunkBytes())
                + "; counts per GiB written; 'vs aligned' = MB/s / aligned full-stripe MB/s", List.of(
                Column.text("pattern", "pattern"),
                Column.text("request", "request"),
                Column.number("queue_depth", "QD", 0),
                Column.stat("mbps", "MB/s", 0),
                Column.stat("cpu_pct", "CPU%", 0),
                Column.stat("cpu_ms_per_gib", "CPU ms/GiB", 0),
                Column.stat("full_stripe_per_gib", "full rows/GiB", 0),
                Column.stat("rmw_per_gib", "RMW/GiB", 0),
                Column.stat("reconstruct_per_gib", "reconstruct/GiB", 0),
                Column.stat("prereads_per_gib", "pre-reads/GiB", 0),
                Column.stat("preread_mib_per_gib", "pre-read MiB/GiB", 0),
                Column.number("mbps_vs_aligned", "vs aligned", 2)));
        List<String> groups = new ArrayList<>();
        for (Pattern p : patterns) {
            groups.add(p.label);
        }
        BarChart chart = new BarChart("RAID-5 write MB/s by request pattern", "MB/s (median, whiskers min..max)", groups,
                List.of("MB/s"));
        double aligned = results.get(0).megabytesPerSecond().median();
        for (int i = 0; i < patterns.size(); i++) {
            Pattern p = patterns.get(i);
            Measured m = results.get(i);
            Stat[] c = m.perGib();
            double mib = 1.0 / (1 << 20);
            table.add(p.label, Sizes.format(p.ioBytes) + (p.shift == 0 ? "" : " +" + Sizes.format(p.shift)),
                    p.queueDepth, m.megabytesPerSecond(), m.cpuPercent(), m.cpuMillisPerGib(), c[0], c[1], c[2], c[3],
                    c[4].scaled(mib), Stat.ratio(m.megabytesPerSecond().median(), aligned));
            chart.set(0, i, m.megabytesPerSecond());
        }
        List<String> notes = List.of(
                "full rows / RMW / reconstruct: the RAID layer's full_stripe_writes, rmw_writes and reconstruct_writes per GiB"
                        + " written; pre-reads: member_prereads (member read runs) per GiB; pre-read MiB: member file bytes read",
                "sequential patterns walk the array from the given offset; random ones pick request-aligned offsets;"
                        + " stripe cache " + cacheRows + " rows (automatic size): rows it still holds need no pre-read",
                "concurrent writes to one row are merged before parity is computed (md-style batching), so adjacent"
                        + " chunk writes with several outstanding may still fill whole rows",
                "the array was written end to end before measuring, so pre-reads read written blocks");
        return new Result(table, chart, notes);
    }
}
