package io.stripestack.bench;

import io.stripestack.crypto.CryptSpec;
import io.stripestack.blockdev.Sizes;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stripestack bench}: builds temporary stacks on sparse files, runs the seed studies in this process
 * and writes, per study, {@code NAME.csv}, {@code NAME.svg} (grouped bar chart) and {@code NAME.txt} (the
 * printed table with the machine and configuration) into {@code --out}. See docs/performance.md.
 *
 * <p>Single-threaded command; the studies' I/O threads are their own.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Run the performance studies on temporary arrays built on files: how the encryption"
                + " payload's alignment to the RAID stripe changes throughput, RAID-5 vs RAID-0 reads of a healthy"
                + " array, full-stripe vs read-modify-write writes, the partial parity log's cost, online reshape,"
                + " and the XOR routines (the fastest is used). Prints tables and writes CSV and SVG charts. Figures"
                + " are page-cache-backed unless --direct.")
public final class BenchCommand implements Callable<Integer> {
    private static final Map<String, Study> STUDIES = new LinkedHashMap<>();

    static {
        for (Study s : List.of(new AlignmentStudy(), new Raid5VsRaid0Study(), new WritePathStudy(), new PplStudy(), new ReshapeStudy(), new XorStudy())) {
            STUDIES.put(s.name(), s);
        }
    }

    @Option(names = "--study", split = ",", paramLabel = "NAME",
            description = "study to run: alignment, raid5-vs-raid0, writes, ppl, reshape, xor or all (default all; repeat or comma-separate)")
    List<String> studies = new ArrayList<>(List.of("all"));

    @Option(names = "--quick", description = "tiny sizes and 2 repeats: checks that everything runs; the figures mean nothing")
    boolean quick;

    @Option(names = "--dir", paramLabel = "DIR",
            description = "where the temporary member files go (a new directory inside it, deleted afterwards; default ./data/bench)")
    Path dir = Path.of("data", "bench");

    @Option(names = "--out", paramLabel = "DIR", description = "where NAME.csv, NAME.svg and NAME.txt go (default ./bench-results)")
    Path out = Path.of("bench-results");

    @Option(names = "--repeat", paramLabel = "N", description = "timed runs per measurement after one warm-up (default 3; 2 with --quick)")
    Integer repeat;

    @Option(names = "--direct", description = "open member files with O_DIRECT (bypass the page cache)")
    boolean direct;

    @Option(names = "--member-mbps", paramLabel = "N",
            description = "pace every member like an independent disk of N MB/s (requests served one after another;"
                    + " default: no pacing)")
    Long memberMbps;

    @Option(names = "--members", paramLabel = "N", description = "RAID-5 members (default 4; RAID-0 gets N-1)")
    Integer members;

    @Option(names = "--member-size", paramLabel = "SIZE", description = "size of each member file (default 256MiB; 8MiB with --quick)")
    String memberSize;

    @Option(names = "--chunk", paramLabel = "SIZE",
            description = "chunk of the alignment and writes studies (default 1MiB)")
    String chunk;

    @Option(names = "--queue-depth", paramLabel = "N", description = "requests outstanding in the alignment and writes studies (default 4)")
    Integer queueDepth;

    @Option(names = "--bytes", paramLabel = "SIZE", description = "bytes moved per timed run (default 256MiB)")
    String bytes;

    @Option(names = "--chunks", split = ",", paramLabel = "SIZE",
            description = "chunk sizes of raid5-vs-raid0 (default 64KiB,256KiB,1MiB,32MiB)")
    List<String> chunks;

    @Option(names = "--stripe-cache-sizes", split = ",", paramLabel = "ROWS",
            description = "stripe cache sizes of raid5-vs-raid0, 1..32768 rows (default 256,8192,16384)")
    List<Integer> stripeCacheSizes;

    @Option(names = "--iscsi", description = "also measure the alignment study end to end: the server in this process,"
            + " qemu-img bench (libiscsi) as the initiator over loopback")
    boolean iscsi;

    @Option(names = "--cipher", paramLabel = "SPEC", description = "dm-crypt cipher spec of the alignment study's encrypted"
            + " stacks and cipher-rate rows, e.g. aes-xts-plain64 (default aes-cbc-essiv:sha256, the crypto layer's default)")
    String cipher;

    @Override
    public Integer call() throws IOException {
        List<Study> selected = selectedStudies();
        BenchSettings settings = settings();
        if (settings.iscsi() && !IscsiEndToEnd.available()) {
            throw new IllegalArgumentException("--iscsi needs qemu-img with its iSCSI driver on the PATH (Debian: apt-get"
                    + " install qemu-utils), or run without --iscsi");
        }
        PrintStream console = System.out;
        List<String> header = new ArrayList<>();
        header.add("stripestack bench, " + Instant.now().truncatedTo(ChronoUnit.SECONDS));
        header.addAll(MachineInfo.describe());
        header.addAll(settings.describe());
        for (String line : header) {
            console.println(line);
        }
        Files.createDirectories(out);
        Files.createDirectories(dir);
        Path scratch = Files.createTempDirectory(dir, "run-");
        console.println("scratch: " + scratch.toAbsolutePath() + " (deleted afterwards); results: " + out.toAbsolutePath());
        List<Path> written = new ArrayList<>();
        try (Bench bench = new Bench(settings, scratch, console)) {
            for (Study study : selected) {
                console.println();
                console.println("== " + study.name() + ": " + study.title());
                Study.Result result = study.run(bench);
                String report = report(study, result);
                console.print(report);
                written.addAll(write(study, result, header, report));
            }
        } finally {
            deleteTree(scratch);
        }
        console.println();
        console.println("load average at the end: " + MachineInfo.loadAverage());
        console.println("wrote: " + String.join(", ", written.stream().map(Path::toString).toList()));
        return 0;
    }

    private List<Study> selectedStudies() {
        List<Study> selected = new ArrayList<>();
        for (String name : studies) {
            if (name.equals("all")) {
                selected.addAll(STUDIES.values());
            } else if (STUDIES.containsKey(name)) {
                selected.add(STUDIES.get(name));
            } else {
                throw new IllegalArgumentException("unknown study '" + name + "'; use one of " + STUDIES.keySet() + " or all");
            }
        }
        return selected.stream().distinct().toList();
    }

    BenchSettings settings() {
        BenchSettings d = quick ? BenchSettings.quickDefaults() : BenchSettings.defaults();
        List<Integer> chunkSizes = d.chunkSizes();
        if (chunks != null) {
            chunkSizes = new ArrayList<>();
            for (String c : chunks) {
                chunkSizes.add(toInt(Sizes.parse(c), "--chunks"));
            }
        }
        return new BenchSettings(quick, repeat != null ? repeat : d.repeat(), direct,
                memberMbps != null ? memberMbps * 1_000_000L : d.memberBytesPerSecond(),
                members != null ? members : d.members(),
                memberSize != null ? Sizes.parse(memberSize) : d.memberBytes(),
                chunk != null ? toInt(Sizes.parse(chunk), "--chunk") : d.chunkBytes(),
                queueDepth != null ? queueDepth : d.queueDepth(),
                bytes != null ? Sizes.parse(bytes) : d.bytesPerRun(),
                chunkSizes, stripeCacheSizes != null ? stripeCacheSizes : d.stripeCacheSizes(),
                d.randomReadBytes(), d.largeReadBytes(), d.readaheadBytes(), d.xorMillis(), iscsi,
                cipher != null ? CryptSpec.parse(cipher) : d.cipher());
    }

    private static int toInt(long value, String option) {
        if (value > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(option + " " + value + " is too large (at most 1GiB)");
        }
        return (int) value;
    }

    private static String report(Study study, Study.Result result) {
        StringBuilder text = new StringBuilder(result.table().toText());
        for (String note : result.notes()) {
            text.append("  * ").append(note).append('\n');
        }
        return text.toString();
    }

    private List<Path> write(Study study, Study.Result result, List<String> header, String report) throws IOException {
        Path csv = out.resolve(study.name() + ".csv");
        Path svg = out.resolve(study.name() + ".svg");
        Path txt = out.resolve(study.name() + ".txt");
        result.table().writeCsv(csv);
        result.chart().write(svg);
        Files.writeString(txt, String.join("\n", header) + "\n\n== " + study.name() + ": " + study.title() + "\n" + report,
                StandardCharsets.UTF_8);
        return List.of(csv, svg, txt);
    }

    /** Removes the scratch directory and whatever a failed study left in it. */
    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
