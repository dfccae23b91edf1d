package io.stripestack.bench;

import io.stripestack.bench.raid5.Raid0Array;
import io.stripestack.blockdev.BlockDevice;
import io.stripestack.raid5.ConsistencyPolicy;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Options;
import io.stripestack.bench.ResultTable.Column;
import io.stripestack.blockdev.Sizes;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The write-path study: RAID-5 writes that fill whole stripes (parity from the new data alone, no member read) against
 * misaligned and small writes, which must pre-read data or parity (read-modify-write or reconstruct-write,
 * whichever reads less); and sequential streams of small requests at several queue depths under each consistency
 * policy, against RAID-0 over n-1 members (whether concurrent writes of a stream become full rows). Counts come from
 * the RAID layer's counters and the member files' read bytes.
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

    /** The consistency policies the sequential streams run under, each on its own array, then RAID-0. */
    private static final List<ConsistencyPolicy> POLICIES =
            List.of(ConsistencyPolicy.RESYNC, ConsistencyPolicy.BITMAP, ConsistencyPolicy.PPL);

    /** One measured row: the pattern, the array it ran on, and the ratios that apply to it (NaN: none). */
    private record Row(Pattern pattern, String array, Measured m, double vsAligned, double vsResync, double vsRaid0) {
    }

    @Override
    public Result run(Bench bench) throws IOException {
        BenchSettings s = bench.settings();
        List<Row> rows = new ArrayList<>();
        int cacheRows = requestPatterns(bench, rows);
        streams(bench, rows);
        return tabulate(s, rows, cacheRows);
    }

    /** The request patterns on one array of the default policy and {@code --chunk}; returns its stripe cache rows. */
    private static int requestPatterns(Bench bench, List<Row> rows) throws IOException {
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
        try (MemberSet files = bench.memberFiles("writes", s.members(), s.memberBytes())) {
            List<BlockDevice> members = files.open(s.members());
            try (Raid5Array raid = bench.createRaid5("writes", members, chunk)) {
                bench.prefill(raid);
                Probe[] probes = raid5Probes(raid, members);
                List<Bench.Trial> trials = new ArrayList<>();
                for (Pattern p : patterns) {
                    trials.add(new Bench.Trial("raid5 x" + s.members() + " " + p.label, () -> new OffsetView(raid, 0, false),
                            workload(s, p, raid.size(), stripe), probes));
                }
                List<Measured> results = bench.measureInterleaved(trials);
                double aligned = results.get(0).megabytesPerSecond().median();
                String array = "raid5 x" + s.members() + " " + raid.consistencyPolicy().mdName();
                for (int i = 0; i < patterns.size(); i++) {
                    rows.add(new Row(patterns.get(i), array, results.get(i),
                            Stat.ratio(results.get(i).megabytesPerSecond().median(), aligned), Double.NaN, Double.NaN));
                }
                return raid.stripeCacheSize();
            }
        }
    }

    /**
     * Sequential streams of 4 KiB and 64 KiB requests at queue depth 1, 4 and 32, two streams with 4 MiB outstanding
     * (64 KiB x 64, 256 KiB x 16: more than two rows of the default geometry, enough to fill rows while the row
     * before is written), and aligned full stripes, on one
     * array per consistency policy and on RAID-0 over n-1 members, all of the same chunk ({@code --chunk} capped at
     * what the partial parity log holds), measured interleaved.
     */
    private static void streams(Bench bench, List<Row> rows) throws IOException {
        BenchSettings s = bench.settings();
        int n = s.members();
        int chunk = Math.min(s.chunkBytes(), Raid5Config.PPL_MAX_CHUNK_AT_DEFAULT_OFFSET);
        int stripe = chunk * (n - 1);
        List<Pattern> patterns = new ArrayList<>();
        for (int size : new int[] {4096, 64 << 10}) {
            for (int qd : new int[] {1, 4, 32}) {
                patterns.add(new Pattern(Sizes.format(size) + " sequential x" + qd, size, 0, qd, false));
            }
        }
        patterns.add(new Pattern(Sizes.format(64 << 10) + " sequential x64", 64 << 10, 0, 64, false));
        patterns.add(new Pattern(Sizes.format(256 << 10) + " sequential x16", 256 << 10, 0, 16, false));
        patterns.add(new Pattern("full stripe aligned x" + s.queueDepth(), stripe, 0, s.queueDepth(), false));
        List<MemberSet> sets = new ArrayList<>();
        List<BlockDevice> arrays = new ArrayList<>();
        List<String> names = new ArrayList<>();
        List<Probe[]> probes = new ArrayList<>();
        try {
            for (ConsistencyPolicy policy : POLICIES) {
                MemberSet files = bench.memberFiles("writes-" + policy.mdName(), n, s.memberBytes());
                sets.add(files);
                List<BlockDevice> members = files.open(n);
                Raid5Array raid = bench.createRaid5("writes-" + policy.mdName(), members, chunk,
                        Raid5Options.defaults().withConsistencyPolicy(policy));
                arrays.add(raid);
                names.add("raid5 x" + n + " " + raid.consistencyPolicy().mdName());
                probes.add(raid5Probes(raid, members));
            }
            MemberSet raid0Files = bench.memberFiles("writes-raid0", n - 1, s.memberBytes());
            sets.add(raid0Files);
            List<BlockDevice> raid0Members = raid0Files.open(n - 1);
            Raid0Array raid0 = new Raid0Array("writes-raid0", raid0Members, chunk,
                    Raid5Config.DEFAULT_DATA_OFFSET_SECTORS * 512);
            arrays.add(raid0);
            names.add("raid0 x" + (n - 1));
            probes.add(raid5Probes(raid0, raid0Members));
            long size = Long.MAX_VALUE;
            for (BlockDevice array : arrays) {
                bench.prefill(array);
                size = Math.min(size, array.size());
            }
            List<Bench.Trial> trials = new ArrayList<>();
            for (Pattern p : patterns) {
                for (int a = 0; a < arrays.size(); a++) {
                    BlockDevice array = arrays.get(a);
                    trials.add(new Bench.Trial(names.get(a) + " " + p.label, () -> new OffsetView(array, 0, false),
                            workload(s, p, size, stripe), probes.get(a)));
                }
            }
            List<Measured> results = bench.measureInterleaved(trials);
            int perPattern = arrays.size();
            for (int i = 0; i < patterns.size(); i++) {
                double resync = results.get(i * perPattern).megabytesPerSecond().median();
                double raid0Mbps = results.get(i * perPattern + perPattern - 1).megabytesPerSecond().median();
                for (int a = 0; a < perPattern; a++) {
                    Measured m = results.get(i * perPattern + a);
                    boolean isRaid0 = a == perPattern - 1;
                    double mbps = m.megabytesPerSecond().median();
                    rows.add(new Row(patterns.get(i), names.get(a), m, Double.NaN,
                            isRaid0 ? Double.NaN : Stat.ratio(mbps, resync),
                            isRaid0 ? Double.NaN : Stat.ratio(mbps, raid0Mbps)));
                }
            }
        } finally {
            for (BlockDevice array : arrays) {
                array.close();
            }
            for (MemberSet files : sets) {
                files.close();
            }
        }
    }

    /** The RAID layer's counters (zero on RAID-0, which has none) and the members' read bytes. */
    private static Probe[] raid5Probes(BlockDevice array, List<BlockDevice> members) {
        return new Probe[] {
                Probe.layerCounter(array.stats(), "full_stripe_writes"),
                Probe.layerCounter(array.stats(), "rmw_writes"),
                Probe.layerCounter(array.stats(), "reconstruct_writes"),
                Probe.layerCounter(array.stats(), "member_prereads"),
                Probe.bytesRead(members)};
    }

    private static Workload workload(BenchSettings s, Pattern p, long size, int stripe) {
        long total = Math.min(s.bytesPerRun(), p.ioBytes * MAX_REQUESTS);
        return p.random
                ? Workload.random(true, p.ioBytes, p.ioBytes, p.queueDepth, total, size)
                : Workload.sequential(true, p.ioBytes, p.shift, p.queueDepth, total,
                        size - (stripe - p.shift % stripe) % stripe);
    }

    private static Result tabulate(BenchSettings s, List<Row> rows, int cacheRows) {
        ResultTable table = new ResultTable("RAID-5 x" + s.members() + " writes; counts per GiB written; 'vs aligned' ="
                + " MB/s / aligned full-stripe MB/s of the same array; 'vs resync' and 'vs raid0' = MB/s / the same"
                + " pattern on the resync array and on RAID-0 over n-1 members", List.of(
                Column.text("pattern", "pattern"),
                Column.text("array", "array"),
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
                Column.number("mbps_vs_aligned", "vs aligned", 2),
                Column.number("mbps_vs_resync", "vs resync", 2),
                Column.number("mbps_vs_raid0", "vs raid0", 2)));
        List<String> groups = new ArrayList<>();
        for (Row r : rows) {
            groups.add(r.pattern.label + " " + r.array);
        }
        BarChart chart = new BarChart("RAID-5 write MB/s by request pattern and array", "MB/s (median, whiskers min..max)",
                groups, List.of("MB/s"));
        double mib = 1.0 / (1 << 20);
        for (int i = 0; i < rows.size(); i++) {
            Row r = rows.get(i);
            Pattern p = r.pattern;
            Measured m = r.m;
            Stat[] c = m.perGib();
            table.add(p.label, r.array, Sizes.format(p.ioBytes) + (p.shift == 0 ? "" : " +" + Sizes.format(p.shift)),
                    p.queueDepth, m.megabytesPerSecond(), m.cpuPercent(), m.cpuMillisPerGib(), c[0], c[1], c[2], c[3],
                    c[4].scaled(mib), r.vsAligned, r.vsResync, r.vsRaid0);
            chart.set(0, i, m.megabytesPerSecond());
        }
        List<String> notes = List.of(
                "full rows / RMW / reconstruct: the RAID layer's full_stripe_writes, rmw_writes and reconstruct_writes per GiB"
                        + " written; pre-reads: member_prereads (member read runs) per GiB; pre-read MiB: member file bytes read",
                "sequential patterns walk the array from the given offset (one stream, QD requests outstanding); random"
                        + " ones pick request-aligned offsets; stripe cache " + cacheRows + " rows (automatic size) on the"
                        + " first array: rows it still holds need no pre-read",
                "concurrent writes to one row are merged before parity is computed (md-style batching); a partial row"
                        + " waits for more only while other work runs, so sequential streams fill whole rows once enough"
                        + " of them is in flight",
                "the stream rows (4KiB/64KiB/256KiB sequential, full stripe xQD) run on one array per consistency policy and"
                        + " on RAID-0 over n-1 members, chunk --chunk capped at what the partial parity log holds",
                "the arrays were written end to end before measuring, so pre-reads read written blocks");
        return new Result(table, chart, notes);
    }
}
