package io.stripestack.bench;

import io.stripestack.bench.raid5.Raid0Array;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.bench.ResultTable.Column;
import io.stripestack.blockdev.Sizes;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The RAID-5 vs RAID-0 read study: reads from a healthy RAID-5 over n members against RAID-0 over n-1 members of the same files,
 * for each chunk size: random large reads with 14 outstanding and single huge reads with one outstanding,
 * RAID-5 at every stripe cache size with check_parity_on_reads off and on. md copied reads through its
 * stripe cache (the study's premise: CPU 35-80% vs RAID-0's 5-15%); this array reads members straight into the
 * caller's buffer, so RAID-5 should cost what RAID-0 costs unless parity checking is on.
 *
 * <p>Both arrays stand on their own files of the same size (RAID-0 over n-1 of them, at the same data
 * offset) and are written end to end before measuring; their measurements are interleaved round by round.
 */
final class Raid5VsRaid0Study implements Study {
    private static final int OUTSTANDING = 14;
    private static final int RANDOM_ALIGNMENT = 4096;

    @Override
    public String name() {
        return "raid5-vs-raid0";
    }

    @Override
    public String title() {
        return "Healthy RAID-5 reads vs RAID-0 over n-1 members (the healthy-reads thread's comparison)";
    }

    private record Row(int chunk, String array, String cache, String parityCheck, int workload, Measured m) {
    }

    @Override
    public Result run(Bench bench) throws IOException {
        BenchSettings s = bench.settings();
        int n = s.members();
        long dataOffset = Raid5Config.DEFAULT_DATA_OFFSET_SECTORS * 512;
        List<Row> rows = new ArrayList<>();
        for (int chunk : s.chunkSizes()) {
            long memberBytes = Math.max(s.memberBytes(), dataOffset + 2L * chunk);
            try (MemberSet raid5Files = bench.memberFiles("r5-" + chunk / 1024 + "k", n, memberBytes);
                 MemberSet raid0Files = bench.memberFiles("r0-" + chunk / 1024 + "k", n - 1, memberBytes);
                 Raid5Array raid5 = bench.createRaid5("r5", raid5Files.open(n), chunk);
                 Raid0Array raid0 = new Raid0Array("r0", raid0Files.open(n - 1), chunk, dataOffset)) {
                bench.prefill(raid5);
                bench.prefill(raid0);
                List<Bench.Trial> trials = new ArrayList<>();
                List<Row> pending = new ArrayList<>();
                String chunkName = " chunk " + Sizes.format(chunk);
                for (boolean parity : new boolean[] {false, true}) {
                    for (int cache : s.stripeCacheSizes()) {
                        String label = "raid5 x" + n + chunkName + " cache " + cache + (parity ? " check" : "");
                        Bench.DeviceOpener configured = () -> {
                            if (raid5.checkParityOnReads() != parity) {
                                raid5.setCheckParityOnReads(parity);
                            }
                            if (raid5.stripeCacheSize() != cache) {
                                raid5.setStripeCacheSize(cache);
                            }
                            return new OffsetView(raid5, 0, false);
                        };
                        addReads(s, trials, label, configured, raid5.size());
                        for (int w = 0; w < 2; w++) {
                            pending.add(new Row(chunk, "raid5 x" + n, Integer.toString(cache), parity ? "on" : "off", w, null));
                        }
                    }
                }
                addReads(s, trials, "raid0 x" + (n - 1) + chunkName, () -> new OffsetView(raid0, 0, false), raid0.size());
                for (int w = 0; w < 2; w++) {
                    pending.add(new Row(chunk, "raid0 x" + (n - 1), "-", "-", w, null));
                }
                List<Measured> measured = bench.measureInterleaved(trials);
                for (int i = 0; i < pending.size(); i++) {
                    Row r = pending.get(i);
                    rows.add(new Row(r.chunk, r.array, r.cache, r.parityCheck, r.workload, measured.get(i)));
                }
            }
        }
        return tabulate(s, rows);
    }

    private static String[] workloadNames(BenchSettings s) {
        return new String[] {"rand " + Sizes.format(s.randomReadBytes()) + " x" + OUTSTANDING,
                "seq " + Sizes.format(s.largeReadBytes()) + " x1"};
    }

    /** The two read workloads (random large reads x14, one huge read at a time) of one configuration. */
    private static void addReads(BenchSettings s, List<Bench.Trial> trials, String label, Bench.DeviceOpener opener,
                                 long size) {
        int large = (int) Math.min(s.largeReadBytes(), size / 4096 * 4096);
        trials.add(new Bench.Trial(label, opener, Workload.random(false, s.randomReadBytes(), RANDOM_ALIGNMENT,
                OUTSTANDING, s.bytesPerRun(), size)));
        trials.add(new Bench.Trial(label, opener, Workload.sequential(false, large, 0, 1,
                Math.max(s.bytesPerRun(), large), size / large * large)));
    }

    private static Result tabulate(BenchSettings s, List<Row> rows) {
        String[] workloads = workloadNames(s);
        ResultTable table = new ResultTable("Reads, RAID-5 over " + s.members() + " vs RAID-0 over " + (s.members() - 1)
                + " members; 'vs raid0' = RAID-5 / RAID-0 of the same chunk and workload", List.of(
                Column.text("chunk", "chunk"),
                Column.text("array", "array"),
                Column.text("stripe_cache", "stripe cache"),
                Column.text("check_parity_on_reads", "parity check"),
                Column.text("workload", "workload"),
                Column.stat("mbps", "MB/s", 0),
                Column.stat("cpu_pct", "CPU%", 0),
                Column.stat("cpu_ms_per_gib", "CPU ms/GiB", 0),
                Column.number("mbps_vs_raid0", "MB/s vs raid0", 2),
                Column.number("cpu_vs_raid0", "CPU/GiB vs raid0", 2)));
        List<String> groups = new ArrayList<>();
        for (int chunk : s.chunkSizes()) {
            for (String w : workloads) {
                groups.add(Sizes.format(chunk) + " " + w);
            }
        }
        List<String> series = new ArrayList<>();
        series.add("raid0 x" + (s.members() - 1));
        for (String parity : new String[] {"off", "on"}) {
            for (int cache : s.stripeCacheSizes()) {
                series.add("raid5 cache " + cache + (parity.equals("on") ? " +parity check" : ""));
            }
        }
        BarChart chart = new BarChart("Read MB/s: RAID-5 x" + s.members() + " vs RAID-0 x" + (s.members() - 1),
                "MB/s (median, whiskers min..max)", groups, series);
        for (Row r : rows) {
            Measured base = baseline(rows, r.chunk, r.workload);
            table.add(Sizes.format(r.chunk), r.array, r.cache, r.parityCheck, workloads[r.workload],
                    r.m.megabytesPerSecond(), r.m.cpuPercent(), r.m.cpuMillisPerGib(),
                    Stat.ratio(r.m.megabytesPerSecond().median(), base.megabytesPerSecond().median()),
                    Stat.ratio(r.m.cpuMillisPerGib().median(), base.cpuMillisPerGib().median()));
            int group = s.chunkSizes().indexOf(r.chunk) * workloads.length + r.workload;
            int seriesIndex = r.array.startsWith("raid0") ? 0
                    : 1 + (r.parityCheck.equals("on") ? s.stripeCacheSizes().size() : 0)
                    + s.stripeCacheSizes().indexOf(Integer.parseInt(r.cache));
            chart.set(seriesIndex, group, r.m.megabytesPerSecond());
        }
        List<String> notes = List.of(
                "random reads start at 4 KiB-aligned offsets; the large read walks the array sequentially",
                "CPU% is process CPU time over wall time (100 = one core); CPU ms/GiB is the cost per GiB read",
                "healthy reads never use the stripe cache here, so its size should not matter; parity check reads and XORs"
                        + " every touched row (the cost the healthy-reads thread suspected)",
                "each array was written end to end before measuring, so every read reads written blocks");
        return new Result(table, chart, notes);
    }

    private static Measured baseline(List<Row> rows, int chunk, int workload) {
        for (Row r : rows) {
            if (r.chunk == chunk && r.workload == workload && r.array.startsWith("raid0")) {
                return r.m;
            }
        }
        throw new IllegalStateException("no RAID-0 baseline for chunk " + chunk);
    }
}
