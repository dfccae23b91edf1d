package io.stripestack.bench;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.readahead.ReadaheadBlockDevice;
import io.stripestack.readahead.ReadaheadBudget;
import io.stripestack.crypto.PlainModeKeys;
import io.stripestack.crypto.SectorCipher;
import io.stripestack.raid5.Raid5Array;
import io.stripestack.bench.ResultTable.Column;
import io.stripestack.blockdev.Sizes;
import io.stripestack.targetserver.config.StripestackConfig.BackingConfig;
import io.stripestack.targetserver.config.StripestackConfig.CryptoConfig;
import io.stripestack.targetserver.config.StripestackConfig.LunConfig;
import io.stripestack.targetserver.config.StripestackConfig.ReadaheadConfig;
import io.stripestack.targetserver.server.StackBuilder;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The alignment study: where the payload of the layer above RAID-5 starts (4 KiB, 81 KiB, one chunk, one stripe,
 * 4 MiB) against sequential throughput, with and without encryption (the configured cipher spec, by default
 * the crypto layer's aes-cbc-essiv:sha256). The "plain" stack is an offset view over the array (what
 * dm-linear or a partition would be); the "encrypted" stack is the dm-crypt compatible layer with that
 * payload offset, built by the server's {@link StackBuilder} as for a configured LUN (one random key file for
 * all of them). All stacks share one prefilled array.
 *
 * <p>Large requests are one stripe (the seed's {@code dd bs=3145728} for 4 x 1 MiB chunks). The readahead
 * columns read sequentially with 128 KiB requests and one outstanding (a reader that relies on readahead):
 * without readahead, with it on top of the stack, and with it directly above the array (below the crypto
 * layer), where prefetched blocks are decrypted only when read.
 *
 * <p>The encryption goals (encrypted throughput at least {@value #ENCRYPTED_GOAL} x min(plain, cipher), a
 * misaligned payload within {@value #MISALIGNED_GOAL} x aligned) are measured in the same interleaved rounds: the cipher's own rate (the bare
 * {@link SectorCipher} on stripe-sized RAM buffers, one thread per core, which is as many threads as the crypto
 * layer encrypts a large request on), and for each encrypted row its write and read throughput over
 * min(plain stack at the same offset, cipher rate).
 */
final class AlignmentStudy implements Study {
    private static final int SMALL_READ = 128 << 10;
    /** Encryption goal: encrypted writes at least this fraction of min(plain writes, cipher rate). */
    private static final double ENCRYPTED_GOAL = 0.8;
    /** Alignment goal: misaligned payload within this fraction of aligned, reads and writes. */
    private static final double MISALIGNED_GOAL = 0.9;

    /** Index of the stripe-aligned offset (the ratios' baseline) and of the seed's 81 KiB offset in the offsets. */
    private static final int STRIPE_OFFSET = 3;
    private static final int SEED_MISALIGNED_OFFSET = 1;

    private enum Readahead { NONE, TOP, ABOVE_RAID }

    /** Readahead goal (>= 0.9x): 128 KiB reads at queue depth 1 with readahead on top against reads of this size, one outstanding. */
    private static final int LARGE_READ = 4 << 20;

    private static final int TRIALS_PER_STACK = 3 + Readahead.values().length;

    private static final String ARRAY = "align";

    @Override
    public String name() {
        return "alignment";
    }

    @Override
    public String title() {
        return "Payload alignment x encryption over RAID-5 (the dm-crypt over md RAID-5 thread's study)";
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
        int cipherThreads = Runtime.getRuntime().availableProcessors();
        Measured[] cipherRate;
        int cacheRows;
        Path keyFile = bench.scratch().resolve(ARRAY + ".key");
        PlainModeKeys.createRandomKeyFile(keyFile, s.cipherKeyBytes());
        try (MemberSet files = bench.memberFiles(ARRAY, s.members(), s.memberBytes())) {
            List<BlockDevice> members = files.open(s.members());
            try (Raid5Array raid = bench.createRaid5(ARRAY, members, chunk)) {
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
                        trials.addAll(trials(s, raid, budget, keyFile, offset, encrypted, stripe, writeProbes));
                    }
                }
                long cipherRegion = (long) stripe * cipherThreads;
                for (boolean encrypt : new boolean[] {true, false}) {
                    trials.add(new Bench.Trial("cipher " + s.cipher() + (encrypt ? " encrypt" : " decrypt") + " (RAM)",
                            () -> new CipherOnlyDevice(newCipher(s), cipherRegion),
                            Workload.sequential(encrypt, stripe, 0, cipherThreads, s.bytesPerRun(), cipherRegion)));
                }
                List<Measured> measured = bench.measureInterleaved(trials);
                cipherRate = measured.subList(measured.size() - 2, measured.size()).toArray(new Measured[0]);
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
        return tabulate(s, offsetNames, results, cipherRate, cipherThreads, endToEnd, cacheRows);
    }

    /**
     * The {@value #TRIALS_PER_STACK} measurements of one offset and stack, in this order: read and write
     * with large requests, then small sequential reads without readahead, with it on top, and with it
     * directly above the array.
     */
    private static List<Bench.Trial> trials(BenchSettings s, Raid5Array raid, ReadaheadBudget budget, Path keyFile,
                                            long offset, boolean encrypted, int stripe, Probe[] writeProbes) {
        String label = (encrypted ? "encrypted" : "plain") + " @" + Sizes.format(offset);
        long region = (raid.size() - offset) / stripe * stripe;
        List<Bench.Trial> trials = new ArrayList<>();
        Bench.DeviceOpener plainStack = () -> stack(s, raid, keyFile, offset, encrypted, Readahead.NONE, budget);
        trials.add(new Bench.Trial(label, plainStack,
                Workload.sequential(false, stripe, 0, s.queueDepth(), s.bytesPerRun(), region)));
        trials.add(new Bench.Trial(label, plainStack,
                Workload.sequential(true, stripe, 0, s.queueDepth(), s.bytesPerRun(), region), writeProbes));
        for (Readahead placement : Readahead.values()) {
            trials.add(new Bench.Trial(label + " readahead " + placement.name().toLowerCase(java.util.Locale.ROOT),
                    () -> stack(s, raid, keyFile, offset, encrypted, placement, budget),
                    Workload.sequential(false, SMALL_READ, 0, 1, s.bytesPerRun(), region)));
        }
        trials.add(new Bench.Trial(label + " large reads", plainStack,
                Workload.sequential(false, LARGE_READ, 0, 1, s.bytesPerRun(), region)));
        return trials;
    }

    /** The readahead goal (>= 0.9x) at the stripe-aligned offset: 128 KiB reads, one outstanding, readahead on top, vs 4 MiB reads. */
    private static String readaheadGoalSummary(Measured[][] alignedStacks) {
        StringBuilder line = new StringBuilder("readahead goal, 128 KiB reads at queue depth 1 with readahead on top vs 4 MiB"
                + " reads at queue depth 1 (stripe-aligned offset):");
        boolean met = true;
        for (int e = 0; e < 2; e++) {
            double ratio = alignedStacks[e][3].megabytesPerSecond().median() / alignedStacks[e][5].megabytesPerSecond().median();
            met &= ratio >= 0.9;
            line.append(String.format(java.util.Locale.ROOT, " %s %.2fx", e == 0 ? "plain" : "encrypted", ratio));
        }
        return line.append(met ? " (goal >= 0.9: met)" : " (goal >= 0.9: NOT met)").toString();
    }

    /** Builds one stack over the shared array; closing it closes everything but the array. */
    private static BlockDevice stack(BenchSettings s, Raid5Array raid, Path keyFile, long offset, boolean encrypted,
                                     Readahead readahead, ReadaheadBudget budget) throws IOException {
        BlockDevice array = new OffsetView(raid, 0, false);
        if (encrypted) {
            return StackBuilder.buildLun(ARRAY, encryptedLun(s, keyFile, offset, readahead), array, false, budget).top();
        }
        BlockDevice base = readahead == Readahead.ABOVE_RAID ? new ReadaheadBlockDevice(array, budget) : array;
        BlockDevice top = new OffsetView(base, offset, true);
        return readahead == Readahead.TOP ? new ReadaheadBlockDevice(top, budget) : top;
    }

    /**
     * The LUN configuration of an encrypted stack: the configured cipher with the key size a LUN gets by default,
     * 512-byte sectors, the payload at {@code offset}; readahead at its default size, or off.
     */
    private static LunConfig encryptedLun(BenchSettings s, Path keyFile, long offset, Readahead readahead) {
        CryptoConfig crypto = new CryptoConfig(false, s.cipher().toString(), s.cipherKeyBytes() * 8, keyFile, null,
                null, offset / 512, 0, 512, false, false, false);
        ReadaheadConfig readaheadConfig = new ReadaheadConfig(readahead == Readahead.NONE ? 0 : -1,
                readahead == Readahead.ABOVE_RAID);
        return new LunConfig(0, new BackingConfig(ARRAY, null, 0, false), crypto, readaheadConfig, false, null);
    }

    /** A cipher of the configured spec under a fresh random key (512-byte sectors, as the server's default). */
    private static SectorCipher newCipher(BenchSettings s) {
        byte[] key = new byte[s.cipherKeyBytes()];
        new SecureRandom().nextBytes(key);
        try {
            return SectorCipher.create(s.cipher(), key, 512, false);
        } finally {
            Arrays.fill(key, (byte) 0);
        }
    }

    private static Result tabulate(BenchSettings s, String[] offsetNames, Measured[][][] results, Measured[] cipherRate,
                                   int cipherThreads, IscsiEndToEnd.ReadWrite[] endToEnd, int cacheRows) {
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
                Column.stat("ra_above_raid_mbps", "RA below crypto MB/s", 0),
                Column.stat("large_read_mbps", "4M x1 read MB/s", 0),
                Column.number("ra_top_vs_large_read", "RA top / 4M x1", 2),
                Column.stat("cipher_encrypt_mbps", "cipher enc MB/s", 0),
                Column.stat("cipher_decrypt_mbps", "cipher dec MB/s", 0),
                Column.number("write_vs_goal_base", "write/min(plain,enc)", 2),
                Column.number("read_vs_goal_base", "read/min(plain,dec)", 2)));
        if (endToEnd != null) {
            columns.addAll(List.of(
                    Column.stat("iscsi_read_mbps", "iSCSI read MB/s", 0),
                    Column.stat("iscsi_read_cpu_pct", "iSCSI read target CPU%", 0),
                    Column.stat("iscsi_write_mbps", "iSCSI write MB/s", 0),
                    Column.stat("iscsi_write_cpu_pct", "iSCSI write target CPU%", 0)));
        }
        ResultTable table = new ResultTable("Sequential throughput by payload offset (RAID-5, " + s.cipher()
                + " for 'encrypted'); 'x' ratios are to the same stack at the stripe-aligned offset", columns);
        int aligned = STRIPE_OFFSET;
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
                        m[2].megabytesPerSecond(), m[3].megabytesPerSecond(), m[4].megabytesPerSecond(),
                        m[5].megabytesPerSecond(),
                        Stat.ratio(m[3].megabytesPerSecond().median(), m[5].megabytesPerSecond().median())));
                if (e == 1) {
                    cells.addAll(List.of(cipherRate[0].megabytesPerSecond(), cipherRate[1].megabytesPerSecond(),
                            versusGoalBase(m[1], results[o][0][1], cipherRate[0]),
                            versusGoalBase(m[0], results[o][0][0], cipherRate[1])));
                } else {
                    cells.addAll(List.of(Stat.NONE, Stat.NONE, Double.NaN, Double.NaN));
                }
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
        List<String> notes = new ArrayList<>(List.of(
                "read/write: sequential requests of one stripe; CPU% is process CPU time over wall time (100 = one core);"
                        + " CPU ms/GiB is process CPU time per GiB moved (steadier than MB/s on a shared machine)",
                "pre-reads/GiB: the RAID layer's member_prereads (member read runs issued to complete partial rows) per GiB"
                        + " written; pre-read MiB/GiB: bytes read from the member files per GiB written",
                "partial rows/GiB: rmw_writes + reconstruct_writes per GiB written (0 when every write fills whole rows);"
                        + " a partial row needs no pre-read when the stripe cache (" + cacheRows + " rows, automatic size)"
                        + " still holds the rest of it, e.g. from the previous request, which half-wrote it",
                "RA columns: 128 KiB sequential reads, one outstanding; 'RA below crypto' puts readahead directly above"
                        + " the array (for 'plain' that is below the offset view); '4M x1': 4 MiB sequential reads, one"
                        + " outstanding, without readahead; 'RA top / 4M x1' is the readahead goal (>= 0.9)",
                "the array was written end to end before measuring, so every read reads written blocks",
                "cipher enc/dec: the bare SectorCipher (" + s.cipher() + ") on stripe-sized RAM buffers, " + cipherThreads
                        + " threads (one per core, the threads the crypto layer splits a large request over), measured in the"
                        + " same interleaved rounds; write/min(plain,enc) = encrypted write / min(plain write at the same"
                        + " offset, cipher encrypt rate), read likewise with the decrypt rate (medians)",
                goalSummary(offsetNames, results, cipherRate, aligned, SEED_MISALIGNED_OFFSET),
                readaheadGoalSummary(results[aligned])));
        if (endToEnd != null) {
            notes.add("iSCSI columns: the server in this process (readahead on top, the default), qemu-img bench over"
                    + " loopback with the same request size and queue depth; target CPU% is this process's CPU over the"
                    + " run; plain rows n/a (a server LUN has no offset layer without encryption)");
        }
        return new Result(table, chart, notes);
    }

    /** {@code encrypted / min(plain, cipher)} of the medians. */
    private static double versusGoalBase(Measured encrypted, Measured plain, Measured cipher) {
        return Stat.ratio(encrypted.megabytesPerSecond().median(),
                Math.min(plain.megabytesPerSecond().median(), cipher.megabytesPerSecond().median()));
    }

    /** One line stating the two encryption goals for the encrypted stack and whether this run meets them. */
    private static String goalSummary(String[] offsetNames, Measured[][][] results, Measured[] cipherRate, int aligned,
                                      int misaligned) {
        Measured[] encryptedAligned = results[aligned][1];
        Measured[] encryptedMisaligned = results[misaligned][1];
        double writeVsBase = versusGoalBase(encryptedAligned[1], results[aligned][0][1], cipherRate[0]);
        double readRatio = Stat.ratio(encryptedMisaligned[0].megabytesPerSecond().median(),
                encryptedAligned[0].megabytesPerSecond().median());
        double writeRatio = Stat.ratio(encryptedMisaligned[1].megabytesPerSecond().median(),
                encryptedAligned[1].megabytesPerSecond().median());
        // When both are CPU-bound on the same cores, encrypted writes cost the cipher's CPU plus the RAID layer's,
        // so they cannot beat cipher / (cipher + plain) CPU ms per GiB of the cipher's rate.
        // CPU time per GiB is steadier than MB/s when other processes take a core for a while; on a machine left
        // to this process, CPU-bound rates are in inverse proportion to it.
        double cipherCpu = cipherRate[0].cpuMillisPerGib().median();
        double encryptedCpu = encryptedAligned[1].cpuMillisPerGib().median();
        double plainCpu = results[aligned][0][1].cpuMillisPerGib().median();
        return String.format(Locale.ROOT, "encryption goals, encrypted stack: stripe-aligned writes %.0f MB/s = %.2fx"
                        + " min(plain %.0f, cipher %.0f) (goal >= %.1f: %s; by CPU ms/GiB, steadier on a shared machine:"
                        + " cipher %.0f / encrypted write %.0f = %s, and cipher / (cipher + plain write %.0f) = %s is the"
                        + " most two CPU-bound layers sharing the cores can reach); %s payload vs stripe-aligned:"
                        + " reads %.2fx, writes %.2fx (goal >= %.1f: %s)",
                encryptedAligned[1].megabytesPerSecond().median(), writeVsBase,
                results[aligned][0][1].megabytesPerSecond().median(), cipherRate[0].megabytesPerSecond().median(),
                ENCRYPTED_GOAL, writeVsBase >= ENCRYPTED_GOAL ? "met" : "NOT met", cipherCpu, encryptedCpu,
                ratioText(cipherCpu, encryptedCpu), plainCpu, ratioText(cipherCpu, cipherCpu + plainCpu),
                offsetNames[misaligned], readRatio,
                writeRatio, MISALIGNED_GOAL, readRatio >= MISALIGNED_GOAL && writeRatio >= MISALIGNED_GOAL ? "met" : "NOT met");
    }

    /** {@code value / baseline} as {@code 0.00x}, or n/a without a baseline (CPU time below the clock's resolution). */
    private static String ratioText(double value, double baseline) {
        double ratio = Stat.ratio(value, baseline);
        return Double.isNaN(ratio) ? "n/a" : String.format(Locale.ROOT, "%.2fx", ratio);
    }

    /** Sum of two per-GiB statistics (medians added, min to min, max to max: a bound, fine for counters). */
    private static Stat sum(Stat a, Stat b) {
        return new Stat(a.median() + b.median(), a.min() + b.min(), a.max() + b.max());
    }

    /**
     * The cipher alone, for the cipher-rate rows: a write encrypts the caller's bytes into this thread's RAM
     * buffer, a read decrypts this thread's RAM buffer into the caller's, each with the bare {@link SectorCipher}
     * (no parallel split, no device below). Owns the cipher and zeroes its key on close.
     *
     * <p>Concurrency: any number of callers; each thread works on its own buffer (a ThreadLocal, allocated on
     * its first request and kept, so timed runs allocate nothing), the cipher is thread-safe.
     */
    private static final class CipherOnlyDevice implements BlockDevice {
        private final SectorCipher cipher;
        private final long size;
        private final IoStats stats = new IoStats("cipher");
        private final ThreadLocal<ByteBuffer> ram = new ThreadLocal<>();

        CipherOnlyDevice(SectorCipher cipher, long size) {
            this.cipher = cipher;
            this.size = size;
        }

        @Override
        public String name() {
            return "cipher " + cipher;
        }

        @Override
        public long size() {
            return size;
        }

        @Override
        public int logicalBlockSize() {
            return cipher.sectorSize();
        }

        @Override
        public Geometry geometry() {
            return Geometry.simple(cipher.sectorSize());
        }

        @Override
        public void read(long offset, ByteBuffer dst) {
            int length = dst.remaining();
            cipher.decrypt(ram(length), 0, dst, dst.position(), length, offset / 512);
            dst.position(dst.limit());
        }

        @Override
        public void write(long offset, ByteBuffer src) {
            int length = src.remaining();
            cipher.encrypt(src, src.position(), ram(length), 0, length, offset / 512);
            src.position(src.limit());
        }

        private ByteBuffer ram(int length) {
            ByteBuffer buffer = ram.get();
            if (buffer == null || buffer.capacity() < length) {
                buffer = ByteBuffer.allocateDirect(length);
                ram.set(buffer);
            }
            return buffer;
        }

        @Override
        public void flush() {
        }

        @Override
        public IoStats stats() {
            return stats;
        }

        @Override
        public void close() {
            cipher.close();
        }
    }
}
