package io.stripestack.bench;

import io.stripestack.crypto.PlainModeKeys;
import io.stripestack.targetserver.config.ConfigException;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.server.StripestackServer;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The end-to-end variant of a measurement: the real server started in this process on a generated
 * configuration (loopback, port 0) and driven by {@code qemu-img bench} through its libiscsi driver, so
 * the figures include the initiator, TCP and the iSCSI and SCSI layers. One RAID-5 array is created on
 * the first start and assembled again by each later start with another LUN stack on top.
 *
 * <p>Throughput is what qemu-img reports (requests x size over its "Run completed in" time); CPU is this
 * process's (the target's) CPU time over that time. Single-threaded: one server at a time.
 */
final class IscsiEndToEnd {
    private static final String IQN = "iqn.2026-11.io.stripestack:bench";
    private static final Pattern COMPLETED = Pattern.compile("Run completed in ([0-9.]+) seconds");
    private static final long TIMEOUT_SECONDS = 600;

    private final Path dataDir;
    private final BenchSettings settings;
    private final int chunk;
    private boolean created;

    IscsiEndToEnd(Path scratch, BenchSettings settings, int chunk) throws IOException {
        this.dataDir = scratch.resolve("iscsi");
        this.settings = settings;
        this.chunk = chunk;
        Files.createDirectories(dataDir);
        PlainModeKeys.createRandomKeyFile(dataDir.resolve("bench.key"), 64);
    }

    /** Whether qemu-img (with its iSCSI driver) can be run. */
    static boolean available() {
        String path = System.getenv("PATH");
        for (String dir : (path == null ? "/usr/bin:/bin" : path).split(File.pathSeparator)) {
            if (new File(dir, "qemu-img").canExecute()) {
                return true;
            }
        }
        return false;
    }

    /** Sequential read and write results of one LUN stack, measured like the in-process runs. */
    record ReadWrite(Measured read, Measured write) {
    }

    /**
     * Serves the array with a crypto layer (the configured cipher spec, the server's default key size) whose
     * payload starts {@code offsetSectors} in and readahead on top, prefills it on the first start, and measures
     * sequential reads and writes of {@code ioBytes} with the configured queue depth.
     */
    ReadWrite measureEncrypted(long offsetSectors, int ioBytes) throws IOException {
        String yaml = String.format(Locale.ROOT, """
                data_dir: %s
                server:
                  portals: ["127.0.0.1:0"]
                arrays:
                  bench:
                    members: [m0.img%s]
                    create_member_size: %d
                    create_sparse: true
                    chunk: %d
                targets:
                  - iqn: %s
                    luns:
                      - lun: 0
                        array: bench
                        crypto: {cipher: %s, key_file: bench.key, offset: %d}
                """, dataDir.toAbsolutePath(), memberList(), settings.memberBytes(), chunk, IQN, settings.cipher(),
                offsetSectors);
        StripestackConfig config;
        try {
            config = ConfigLoader.parse("bench-iscsi.yaml", yaml, dataDir);
        } catch (ConfigException e) {
            throw new IllegalStateException("the benchmark generated a configuration the server refuses: " + e.getMessage(), e);
        }
        try (StripestackServer server = StripestackServer.start(config)) {
            String url = "iscsi://127.0.0.1:" + server.boundAddresses().get(0).getPort() + "/" + IQN + "/0";
            long size = server.luns().get(0).top().size();
            long count = Math.max(1, Math.min(settings.bytesPerRun(), size) / ioBytes);
            if (!created) {
                qemuImgBench(url, true, size / ioBytes, ioBytes, 2);
                created = true;
            }
            return new ReadWrite(measure(url, false, count, ioBytes), measure(url, true, count, ioBytes));
        }
    }

    private String memberList() {
        StringBuilder list = new StringBuilder();
        for (int i = 1; i < settings.members(); i++) {
            list.append(", m").append(i).append(".img");
        }
        return list.toString();
    }

    private Measured measure(String url, boolean write, long count, int ioBytes) throws IOException {
        qemuImgBench(url, write, Math.max(1, count / 4), ioBytes, settings.queueDepth());
        Sample[] samples = new Sample[settings.repeat()];
        for (int i = 0; i < samples.length; i++) {
            samples[i] = qemuImgBench(url, write, count, ioBytes, settings.queueDepth());
        }
        return Measured.of(samples, new long[0][]);
    }

    /** Runs one {@code qemu-img bench} and returns the bytes it moved, its reported time and our CPU time. */
    private static Sample qemuImgBench(String url, boolean write, long count, int ioBytes, int depth) throws IOException {
        List<String> command = new ArrayList<>(List.of("qemu-img", "bench", "-f", "raw", "-c", Long.toString(count),
                "-d", Integer.toString(depth), "-s", Integer.toString(ioBytes)));
        if (write) {
            command.add("-w");
        }
        command.add(url);
        long cpu0 = LoadRunner.processCpuNanos();
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        process.getOutputStream().close();
        String output;
        try {
            output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException(String.join(" ", command) + " did not finish within " + TIMEOUT_SECONDS + " s");
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running qemu-img bench", e);
        }
        long cpu = LoadRunner.processCpuNanos() - cpu0;
        Matcher m = COMPLETED.matcher(output);
        if (process.exitValue() != 0 || !m.find()) {
            throw new IOException(String.join(" ", command) + " failed (exit " + process.exitValue() + "): " + output.trim());
        }
        long wallNanos = Math.max(1, (long) (Double.parseDouble(m.group(1)) * 1e9));
        return new Sample(count * ioBytes, wallNanos, cpu);
    }
}
