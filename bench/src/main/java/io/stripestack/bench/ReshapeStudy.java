package io.stripestack.bench;

import io.stripestack.bench.ResultTable.Column;
import io.stripestack.blockdev.BlockDevice;
import io.stripestack.raid5.ConsistencyPolicy;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Config;
import io.stripestack.raid5.Raid5Options;
import io.stripestack.blockdev.Sizes;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * How fast an array grows by one member (md's reshape), against what its members allow: md moves every byte
 * once read and once written, so with members working in parallel the least a grow can take is the time for
 * one member to read its old data and write its new data sequentially. Measured in the same run: the
 * members' sequential rates (one member file, paced like the array's when --member-mbps is given), the grow
 * of a filled array from n to n+1 members, and the latency of 4 KiB random reads of the array, idle and
 * while the reshape runs; then the grown array's chunk is halved (a reshape with the same members), rated the
 * same way.
 */
final class ReshapeStudy implements Study {
    /** Latency probes per measurement: one request at a time, so each is one request's latency. */
    private static final int LATENCY_READS = 2000;
    /** The reshape moves as fast as it can here: md's sync_speed_max in KiB/s. */
    private static final int UNTHROTTLED_KIB_PER_SECOND = 100_000_000;
    /**
     * 2 MiB: each reshape moves the data offset down by half the free chunks (of the larger chunk involved), so the
     * default 1 MiB leaves a 512 KiB array no room for a second reshape; mdadm gives members of this size more.
     */
    private static final long DATA_OFFSET_SECTORS = 4096;

    @Override
    public String name() {
        return "reshape";
    }

    @Override
    public String title() {
        return "Growing an array by one member and changing its chunk (reshape): speed vs the members' sequential rate,"
                + " and read latency";
    }

    @Override
    public Result run(Bench bench) throws IOException {
        BenchSettings s = bench.settings();
        int chunk = Math.min(s.chunkBytes(), Raid5Config.PPL_MAX_CHUNK_AT_DEFAULT_OFFSET);
        int n = s.members();
        Stat[] member = memberRates(bench, s, chunk);
        double[] reshapeMbps = new double[s.repeat()];
        double[] ideal = new double[s.repeat()];
        double[] rechunkMbps = new double[s.repeat()];
        double[] rechunkIdeal = new double[s.repeat()];
        int newChunk = chunk / 2;
        long[] idle = new long[s.repeat() * LATENCY_READS];
        long[] during = new long[s.repeat() * LATENCY_READS];
        int duringCount = 0;
        long arrayBytes = 0;
        for (int round = 0; round < s.repeat(); round++) {
            MemberSet files = bench.memberFiles("reshape-" + round, n + 1, s.memberBytes());
            try {
                List<BlockDevice> devices = files.open(n + 1);
                BlockDevice spare = devices.remove(n);
                Raid5Array created;
                try {
                    created = bench.createRaid5("reshape", devices, chunk, DATA_OFFSET_SECTORS,
                            Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.RESYNC));
                    created.addSpare(spare);
                } catch (IOException | RuntimeException e) {
                    spare.close();
                    throw e;
                }
                try (Raid5Array raid = created) {
                    bench.prefill(raid);
                    arrayBytes = raid.size();
                    raid.setSyncSpeedMax(UNTHROTTLED_KIB_PER_SECOND);
                    Random random = new Random(round);
                    ByteBuffer block = ByteBuffer.allocateDirect(4096);
                    probeLatency(raid, arrayBytes, random, block, idle, round * LATENCY_READS, LATENCY_READS);
                    long start = System.nanoTime();
                    raid.setRaidDevices(n + 1);
                    duringCount += probeLatency(raid, arrayBytes, random, block, during, duringCount, LATENCY_READS);
                    if (!raid.awaitSyncIdle(1, TimeUnit.HOURS)) {
                        throw new IOException("the reshape did not finish within an hour");
                    }
                    long nanos = System.nanoTime() - start;
                    if (raid.memberCount() != n + 1) {
                        throw new IOException("the reshape ended with " + raid.memberCount() + " members, not " + (n + 1));
                    }
                    reshapeMbps[round] = arrayBytes / 1e6 / (nanos / 1e9);
                    // each member reads its old data and writes its new data; members work in parallel
                    double leastSeconds = arrayBytes / (double) (n - 1) / (member[0].median() * 1e6)
                            + arrayBytes / (double) n / (member[1].median() * 1e6);
                    ideal[round] = leastSeconds / (nanos / 1e9);

                    // then the grown array changes its chunk: the n + 1 members each read and write their share
                    long grownBytes = raid.size();
                    start = System.nanoTime();
                    raid.setChunkSize(newChunk);
                    if (!raid.awaitSyncIdle(1, TimeUnit.HOURS)) {
                        throw new IOException("the chunk change did not finish within an hour");
                    }
                    nanos = System.nanoTime() - start;
                    if (raid.chunkBytes() != newChunk) {
                        throw new IOException("the chunk change ended with " + raid.chunkBytes() + "-byte chunks");
                    }
                    rechunkMbps[round] = grownBytes / 1e6 / (nanos / 1e9);
                    double share = grownBytes / (double) n;
                    rechunkIdeal[round] = (share / (member[0].median() * 1e6) + share / (member[1].median() * 1e6))
                            / (nanos / 1e9);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while the reshape ran", e);
                }
            } finally {
                files.close();
            }
        }
        Stat reshape = Stat.of(reshapeMbps);
        Stat vsIdeal = Stat.of(ideal);
        double[] idleUs = percentiles(idle, idle.length);
        double[] duringUs = percentiles(during, duringCount);
        ResultTable table = new ResultTable("RAID-5 " + n + " -> " + (n + 1) + " members, chunk " + Sizes.format(chunk)
                + ", " + Sizes.format(arrayBytes) + " of data; member rates of one member file", List.of(
                Column.text("what", "what"),
                Column.stat("mbps", "MB/s", 0),
                Column.stat("vs_least_time", "least time / time", 2),
                Column.number("read_p50_us", "4K read p50 us", 0),
                Column.number("read_p99_us", "4K read p99 us", 0),
                Column.number("reads", "reads timed", 0)));
        table.add("member sequential read", member[0], Stat.NONE, Double.NaN, Double.NaN, Double.NaN);
        table.add("member sequential write", member[1], Stat.NONE, Double.NaN, Double.NaN, Double.NaN);
        table.add("array idle", Stat.NONE, Stat.NONE, idleUs[0], idleUs[1], idle.length);
        table.add("reshape " + n + " -> " + (n + 1), reshape, vsIdeal, duringUs[0], duringUs[1], duringCount);
        Stat rechunk = Stat.of(rechunkMbps);
        table.add("chunk " + Sizes.format(chunk) + " -> " + Sizes.format(newChunk) + " on " + (n + 1), rechunk,
                Stat.of(rechunkIdeal), Double.NaN, Double.NaN, Double.NaN);
        BarChart chart = new BarChart("Reshape vs member sequential rates", "MB/s (median, whiskers min..max)",
                List.of("member read", "member write", "grow (array bytes)", "chunk change (array bytes)"),
                List.of("MB/s"));
        chart.set(0, 0, member[0]);
        chart.set(0, 1, member[1]);
        chart.set(0, 2, reshape);
        chart.set(0, 3, rechunk);
        List<String> notes = List.of(
                "least time = one member's old data at its sequential read rate + its new data at its sequential write"
                        + " rate (members move in parallel; md reads and writes every byte once); 1.00 would be that bound",
                "reshape MB/s = the array's data bytes / the time from the start of the grow to its end; sync_speed_max"
                        + " raised so the throttle does not decide it",
                "chunk change: the grown array's chunk halved (a reshape with the same members); least time = each"
                        + " member's share read and written once at its sequential rates",
                "4K read latency: one random read at a time on the array, before the grow and while it runs (the"
                        + " reads while it runs stop when it ends)");
        return new Result(table, chart, notes);
    }

    /** The sequential read and write rate of one member file, as the array's members are opened. */
    private static Stat[] memberRates(Bench bench, BenchSettings s, int chunk) throws IOException {
        MemberSet one = bench.memberFiles("reshape-member", 1, s.memberBytes());
        try {
            long total = Math.min(s.bytesPerRun(), s.memberBytes()) / chunk * chunk;
            List<Bench.Trial> trials = new ArrayList<>();
            for (boolean write : new boolean[] {true, false}) {
                trials.add(new Bench.Trial("member sequential " + (write ? "write" : "read"),
                        () -> one.open(1).get(0), Workload.sequential(write, chunk, 0, 1, total, s.memberBytes())));
            }
            List<Measured> m = bench.measureInterleaved(trials);
            return new Stat[] {m.get(1).megabytesPerSecond(), m.get(0).megabytesPerSecond()};
        } finally {
            one.close();
        }
    }

    /**
     * Times up to {@code count} random 4 KiB reads into {@code into} from {@code at}; while a reshape runs,
     * stops when it ends. Returns how many it timed.
     */
    private static int probeLatency(Raid5Array raid, long size, Random random, ByteBuffer block, long[] into, int at,
                                    int count) throws IOException {
        boolean reshaping = raid.syncAction().equals("reshape");
        int timed = 0;
        while (timed < count && (!reshaping || raid.syncAction().equals("reshape"))) {
            long offset = (long) (random.nextDouble() * (size / 4096)) * 4096;
            block.clear();
            long start = System.nanoTime();
            raid.read(offset, block);
            into[at + timed++] = System.nanoTime() - start;
        }
        return timed;
    }

    /** {p50, p99} in microseconds of the first {@code count} latencies; NaN (n/a) when there are none. */
    private static double[] percentiles(long[] nanos, int count) {
        if (count == 0) {
            return new double[] {Double.NaN, Double.NaN};
        }
        long[] sorted = Arrays.copyOf(nanos, count);
        Arrays.sort(sorted);
        return new double[] {sorted[count / 2] / 1e3, sorted[Math.min(count - 1, count * 99 / 100)] / 1e3};
    }
}
