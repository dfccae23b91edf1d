package io.stripestack.bench;

import io.stripestack.bench.ResultTable.Column;
import io.stripestack.blockdev.BlockDevice;
import io.stripestack.raid5.ConsistencyPolicy;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Options;
import io.stripestack.blockdev.Sizes;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * What closing the write hole costs: the same writes on RAID-5 arrays that differ only in consistency policy,
 * the partial parity log (ppl) against none (resync) and the write-intent bitmap, measured interleaved in
 * one run. The log's own counters say how many row updates one log write carried (the batching).
 */
final class PplStudy implements Study {
    private static final long MAX_REQUESTS = 8192;
    private static final List<ConsistencyPolicy> POLICIES =
            List.of(ConsistencyPolicy.RESYNC, ConsistencyPolicy.BITMAP, ConsistencyPolicy.PPL);

    @Override
    public String name() {
        return "ppl";
    }

    @Override
    public String title() {
        return "Partial parity log vs no log: the write cost of closing the RAID-5 write hole";
    }

    private record Pattern(String label, int ioBytes, int queueDepth, boolean random) {
    }

    @Override
    public Result run(Bench bench) throws IOException {
        BenchSettings s = bench.settings();
        int chunk = Math.min(s.chunkBytes(), Raid5Config.PPL_MAX_CHUNK_AT_DEFAULT_OFFSET);
        int stripe = chunk * (s.members() - 1);
        int qd = Math.max(4, s.queueDepth());
        List<Pattern> patterns = List.of(
                new Pattern("4KiB random", 4096, qd, true),
                new Pattern("64KiB random", 64 << 10, qd, true),
                new Pattern("4KiB sequential", 4096, qd, false),
                new Pattern("chunk sequential", chunk, qd, false),
                new Pattern("full stripe sequential", stripe, qd, false));
        List<MemberSet> sets = new ArrayList<>();
        List<Raid5Array> arrays = new ArrayList<>();
        try {
            for (ConsistencyPolicy policy : POLICIES) {
                MemberSet files = bench.memberFiles("ppl-" + policy.mdName(), s.members(), s.memberBytes());
                sets.add(files);
                Raid5Array raid = bench.createRaid5("ppl-" + policy.mdName(), files.open(s.members()), chunk,
                        Raid5Options.defaults().withConsistencyPolicy(policy));
                arrays.add(raid);
                bench.prefill(raid);
            }
            List<Bench.Trial> trials = new ArrayList<>();
            for (Pattern p : patterns) {
                for (int a = 0; a < arrays.size(); a++) {
                    Raid5Array raid = arrays.get(a);
                    long size = raid.size();
                    long total = Math.min(s.bytesPerRun(), p.ioBytes * MAX_REQUESTS);
                    Workload w = p.random
                            ? Workload.random(true, p.ioBytes, p.ioBytes, p.queueDepth, total, size)
                            : Workload.sequential(true, p.ioBytes, 0, p.queueDepth, total, size);
                    Probe[] probes = {
                            Probe.layerCounter(raid.stats(), "ppl_writes"),
                            Probe.layerCounter(raid.stats(), "ppl_rows"),
                            Probe.layerCounter(raid.stats(), "ppl_bytes"),
                            Probe.layerCounter(raid.stats(), "ppl_ordering_flushes")};
                    trials.add(new Bench.Trial(POLICIES.get(a).mdName() + " " + p.label,
                            () -> new OffsetView(raid, 0, false), w, probes));
                }
            }
            List<Measured> results = bench.measureInterleaved(trials);
            return tabulate(s, chunk, patterns, results);
        } finally {
            for (Raid5Array raid : arrays) {
                raid.close();
            }
            for (MemberSet files : sets) {
                files.close();
            }
        }
    }

    private static Result tabulate(BenchSettings s, int chunk, List<Pattern> patterns, List<Measured> results) {
        ResultTable table = new ResultTable("RAID-5 x" + s.members() + " writes, chunk " + Sizes.format(chunk)
                + ", by consistency policy; 'vs resync' = MB/s / the same writes without any log", List.of(
                Column.text("pattern", "pattern"),
                Column.text("policy", "policy"),
                Column.number("queue_depth", "QD", 0),
                Column.stat("mbps", "MB/s", 0),
                Column.stat("cpu_ms_per_gib", "CPU ms/GiB", 0),
                Column.stat("ppl_writes_per_gib", "log writes/GiB", 0),
                Column.stat("ppl_rows_per_gib", "logged rows/GiB", 0),
                Column.stat("ppl_mib_per_gib", "log MiB/GiB", 1),
                Column.stat("ppl_ordering_flushes_per_gib", "ordering flushes/GiB", 0),
                Column.number("mbps_vs_resync", "vs resync", 2)));
        List<String> groups = new ArrayList<>();
        for (Pattern p : patterns) {
            groups.add(p.label);
        }
        List<String> series = new ArrayList<>();
        for (ConsistencyPolicy policy : POLICIES) {
            series.add(policy.mdName());
        }
        BarChart chart = new BarChart("RAID-5 write MB/s by consistency policy", "MB/s (median, whiskers min..max)",
                groups, series);
        double mib = 1.0 / (1 << 20);
        for (int i = 0; i < patterns.size(); i++) {
            Pattern p = patterns.get(i);
            double baseline = results.get(i * POLICIES.size()).megabytesPerSecond().median();
            for (int a = 0; a < POLICIES.size(); a++) {
                Measured m = results.get(i * POLICIES.size() + a);
                Stat[] c = m.perGib();
                table.add(p.label, POLICIES.get(a).mdName(), p.queueDepth, m.megabytesPerSecond(), m.cpuMillisPerGib(),
                        c[0], c[1], c[2].scaled(mib), c[3], Stat.ratio(m.megabytesPerSecond().median(), baseline));
                chart.set(a, i, m.megabytesPerSecond());
            }
        }
        List<String> notes = List.of(
                "resync: no log (a crash resyncs every row, the write hole stays open); bitmap: md's write-intent bitmap;"
                        + " ppl: md's partial parity log, written and flushed on the row's parity member before the row is",
                "log writes / logged rows per GiB: the log units written and the row updates they carried; rows per"
                        + " write above 1 is the group commit at work",
                "the arrays were written end to end before measuring; trials of the three policies run interleaved");
        return new Result(table, chart, notes);
    }
}
