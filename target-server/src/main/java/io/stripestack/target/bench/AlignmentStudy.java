package io.stripestack.target.bench;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.FileBlockDevice;
import io.stripestack.blockdev.readahead.ReadaheadBlockDevice;
import io.stripestack.blockdev.readahead.ReadaheadBudget;
import io.stripestack.crypto.CryptSpec;
import io.stripestack.crypto.CryptoBlockDevice;
import io.stripestack.crypto.SectorCipher;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.target.bench.ResultTable.Column;
import io.stripestack.target.config.Sizes;
import java.io.IOException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Seed 004: where the payload of the layer above RAID-5 starts (4 KiB, 81 KiB, one chunk, one stripe,
 * 4 MiB) against sequential throughput, with and without AES-XTS encryption. The "plain" stack is an
 * offset view over the array (what dm-linear or a partition would be); the "encrypted" stack is the
 * dm-crypt compatible layer with that payload offset. All stacks share one prefilled array.
 *
 * <p>Large requests are one stripe (the seed's {@code dd bs=3145728} for 4 x 1 MiB chunks). The readahead
 * columns read sequentially with 128 KiB requests and one outstanding (a reader that relies on readahead):
 * without readahead, with it on top of the stack, and with it directly above the array (below the crypto
 * layer), where prefetched blocks are decrypted only when read.
 */
final class AlignmentStudy implements Study {
    private static final int SMALL_READ = 128 << 10;
    private static final String CIPHER = "aes-xts-plain64";

    private enum Readahead { NONE, TOP, ABOVE_RAID }

    private static final int TRIALS_PER_STACK = 2 + Readahead.values().length;

    @Override
    public String name() {
        return "alignment";
    }

    @Override
    public String title() {
        return "Payload alignment x encryption over RAID-5 (seed 004)";
    }

    @Override
    public Result run(Bench bench) throws IOException {
        BenchSettings s = bench.settings();
        int chunk = s.chunkBytes();
        int stripe = chunk * (s.members() - 1);
        long[] offsets = {4 << 10, 81 << 10, chunk, stripe, 4 << 20};
        String[] offsetNames = {"4KiB", "81KiB", Sizes.format(chunk) + " (chunk)", Sizes.format(stripe) + " (stripe)",
                "4MiB"};
        Measured[][][] results = new Measured[offsets.length][2][];
        int cacheRows;
        try (MemberSet files = bench.memberFiles("align", s.members(), s.memberBytes())) {
            List<FileBlockDevice> members = files.open(s.members());
            try (Raid5Array raid = bench.createRaid5("align", members, chunk)) {
                cacheRows = raid.stripeCacheSize();
                bench.prefill(raid);
                ReadaheadBudget budget = new ReadaheadBudget(s.readaheadBytes());
                Probe[] writeProbes = {
                        Probe.layerCounter(raid.stats(), "member_prereads"),
                        Probe.bytesRead(members),
                        Probe.layerCounter(raid.stats(), "rmw_writes"),
                        Probe.layerCounter(raid.stats(), "reconstruct_writes")};
                List<Bench.Trial> trials = new ArrayList<>();
                for (long offset : offsets) {
                    for (boolean encrypted : new boolean[] {false, true}) {
                        trials.addAll(trials(s, raid, budget, offset, encrypted, stripe, writeProbes));
                    }
                }
                List<Measured> measured = bench.measureInterleaved(trials);
                int next = 0;
                for (int o = 0; o < offsets.length; o++) {
                    for (int e = 0; e < 2; e++) {
                        results[o][e] = measured.subList(next, next + TRIALS_PER_STACK).toArray(new Measured[0]);
                        next += TRIALS_PER_STACK;
                    }
                }
            }
        }
        IscsiEndToEnd.ReadWrite[] endToEnd = null;
        if (s.iscsi()) {
            IscsiEndToEnd iscsi = new IscsiEndToEnd(bench.scratch(), s, chunk);
            endToEnd = new IscsiEndToEnd.ReadWrite[offsets.length];
            for (int o = 0; o < offsets.length; o++) {
                endToEnd[o] = iscsi.measureEncrypted(offsets[o] / 512, stripe);
                String label = "iscsi encrypted @" + Sizes.format(offsets[o]);
                String what = "qemu-img bench " + Sizes.format(stripe) + " -d " + s.queueDepth();
                bench.report(label, what + " read", endToEnd[o].read());
                bench.report(label, what + " write", endToEnd[o].write());
            }
        }
        return tabulate(offsetNames, results, endToEnd, cacheRows);
    }

    /**
     * The {@value #TRIALS_PER_STACK} measurements of one offset and stack, in this order: read and write
     * with large requests, then small sequential reads without readahead, with it on top, and with it
     * directly above the array.
     */
    private static List<Bench.Trial> trials(BenchSettings s, Raid5Array raid, ReadaheadBudget budget, long offset,
                                            boolean encrypted, int stripe, Probe[] writeProbes) {
        String label = (encrypted ? "encrypted" : "plain") + " @" + Sizes.format(offset);
        long region = (raid.size() - offset) / stripe * stripe;
        List<Bench.Trial> trials = new ArrayList<>();
        Bench.DeviceOpener plainStack = () -> stack(raid, offset, encrypted, Readahead.NONE, budget);
        trials.add(new Bench.Trial(label, plainStack,
                Workload.sequential(false, stripe, 0, s.queueDepth(), s.bytesPerRun(), region)));
        trials.add(new Bench.Trial(label, plainStack,
                Workload.sequential(true, stripe, 0, s.queueDepth(), s.bytesPerRun(), region), writeProbes));
        for (Readahead placement : Readahead.values()) {
            trials.add(new Bench.Trial(label + " readahead " + placement.name().toLowerCase(java.util.Locale.ROOT),
                    () -> stack(raid, offset, encrypted, placement, budget),
                    Workload.sequential(false, SMALL_READ, 0, 1, s.bytesPerRun(), region)));
        }
        return trials;
    }

    /** Builds one stack over the shared array; closing it closes everything but the array. */
    private static BlockDevice stack(Raid5Array raid, long offset, boolean encrypted, Readahead readahead,
                                     ReadaheadBudget budget) {
        BlockDevice base = new OffsetView(raid, 0, false);
        if (readahead == Readahead.ABOVE_RAID) {
            base = new ReadaheadBlockDevice(base, budget);
        }
        BlockDevice top;
        if (encrypted) {
            byte[] key = new byte[64];
            new SecureRandom().nextBytes(key);
            SectorCipher cipher = SectorCipher.create(CryptSpec.parse(CIPHER), key, 512, false);
            Arrays.fill(key, (byte) 0);
            top = new CryptoBlockDevice("crypt", base, cipher, offset / 512, 0, false);
        } else {
            top = new OffsetView(base, offset, true);
        }
        return readahead == Readahead.TOP ? new ReadaheadBlockDevice(top, budget) : top;
    }

    private static Result tabulate(String[] offsetNames, Measured[][][] results, IscsiEndToEnd.ReadWrite[] endToEnd,
                                   int cacheRows) {
        List<Column> columns = new ArrayList<>(List.of(
                Column.text("offset", "offset"),
                Column.text("stack", "stack"),
                Column.stat("read_mbps", "read MB/s", 0),
                Column.stat("read_cpu_pct", "read CPU%", 0),
                Column.stat("read_cpu_ms_per_gib", "read CPU ms/GiB", 0),
                Column.stat("write_mbps", "write MB/s", 0),
                Column.stat("write_cpu_pct", "write CPU%", 0),
                Column.stat("write_cpu_ms_per_gib", "write CPU ms/GiB", 0),
                Column.stat("prereads_per_gib", "pre-reads/GiB", 0),
                Column.stat("preread_mib_per_gib", "pre-read MiB/GiB", 0),
                Column.stat("partial_rows_per_gib", "partial rows/GiB", 0),
                Column.number("read_vs_aligned", "read x", 2),
                Column.number("write_vs_aligned", "write x", 2),
                Column.stat("ra_none_mbps", "128K no-RA MB/s", 0),
                Column.stat("ra_top_mbps", "RA top MB/s", 0),
                Column.stat("ra_above_raid_mbps", "RA below crypto MB/s", 0)));
        if (endToEnd != null) {
            columns.addAll(List.of(
                    Column.stat("iscsi_read_mbps", "iSCSI read MB/s", 0),
                    Column.stat("iscsi_read_cpu_pct", "iSCSI read target CPU%", 0),
                    Column.stat("iscsi_write_mbps", "iSCSI write MB/s", 0),
                    Column.stat("iscsi_write_cpu_pct", "iSCSI write target CPU%", 0)));
        }
        ResultTable table = new ResultTable("Sequential throughput by payload offset (RAID-5, " + CIPHER
                + " for 'encrypted'); ratios are to the same stack at the stripe-aligned offset", columns);
        int aligned = 3;
        List<String> groups = new ArrayList<>(Arrays.asList(offsetNames));
        BarChart chart = new BarChart("Sequential MB/s by payload offset over RAID-5", "MB/s (median, whiskers min..max)",
                groups, List.of("plain read", "plain write", "encrypted read", "encrypted write"));
        for (int o = 0; o < offsetNames.length; o++) {
            for (int e = 0; e < 2; e++) {
                Measured[] m = results[o][e];
                Measured[] base = results[aligned][e];
                Stat preReads = m[1].perGib()[0];
                Stat preReadMib = m[1].perGib()[1].scaled(1.0 / (1 << 20));
                Stat partialRows = sum(m[1].perGib()[2], m[1].perGib()[3]);
                List<Object> cells = new ArrayList<>(List.of(offsetNames[o], e == 0 ? "plain" : "encrypted",
                        m[0].megabytesPerSecond(), m[0].cpuPercent(), m[0].cpuMillisPerGib(),
                        m[1].megabytesPerSecond(), m[1].cpuPercent(), m[1].cpuMillisPerGib(),
                        preReads, preReadMib, partialRows,
                        Stat.ratio(m[0].megabytesPerSecond().median(), base[0].megabytesPerSecond().median()),
                        Stat.ratio(m[1].megabytesPerSecond().median(), base[1].megabytesPerSecond().median()),
                        m[2].megabytesPerSecond(), m[3].megabytesPerSecond(), m[4].megabytesPerSecond()));
                if (endToEnd != null) {
                    // A server configuration has no offset layer without encryption: plain rows are not measured.
                    IscsiEndToEnd.ReadWrite rw = endToEnd[o];
                    boolean measured = e == 1;
                    cells.addAll(List.of(measured ? rw.read().megabytesPerSecond() : Stat.NONE,
                            measured ? rw.read().cpuPercent() : Stat.NONE,
                            measured ? rw.write().megabytesPerSecond() : Stat.NONE,
                            measured ? rw.write().cpuPercent() : Stat.NONE));
                }
                table.add(cells.toArray());
                chart.set(2 * e, o, m[0].megabytesPerSecond());
                chart.set(2 * e + 1, o, m[1].megabytesPerSecond());
            }
        }
        List<String> notes = List.of(
                "read/write: sequential requests of one stripe; CPU% is process CPU time over wall time (100 = one core);"
                        + " CPU ms/GiB is process CPU time per GiB moved (steadier than MB/s on a shared machine)",
                "pre-reads/GiB: the RAID layer's member_prereads (member read runs issued to complete partial rows) per GiB"
                        + " written; pre-read MiB/GiB: bytes read from the member files per GiB written",
                "partial rows/GiB: rmw_writes + reconstruct_writes per GiB written (0 when every write fills whole rows);"
                        + " a partial row needs no pre-read when the stripe cache (" + cacheRows + " rows, automatic size)"
                        + " still holds the rest of it, e.g. from the previous request, which half-wrote it",
                "RA columns: 128 KiB sequential reads, one outstanding; 'RA below crypto' puts readahead directly above"
                        + " the array (for 'plain' that is below the offset view)",
                "the array was written end to end before measuring, so every read reads written blocks");
        if (endToEnd != null) {
            notes = new ArrayList<>(notes);
            notes.add("iSCSI columns: the server in this process (readahead on top, the default), qemu-img bench over"
                    + " loopback with the same request size and queue depth; target CPU% is this process's CPU over the"
                    + " run; plain rows n/a (a server LUN has no offset layer without encryption)");
        }
        return new Result(table, chart, notes);
    }

    /** Sum of two per-GiB statistics (medians added, min to min, max to max: a bound, fine for counters). */
    private static Stat sum(Stat a, Stat b) {
        return new Stat(a.median() + b.median(), a.min() + b.min(), a.max() + b.max());
    }
}
