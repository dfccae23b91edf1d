package io.stripestack.targetserver.testing;

import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * What the tests of a server's start and stop (ForcedStartTest, FullFileSystemTest, StartPreflightTest) share: a
 * configuration of one RAID-5 array, md0, of four 8 MiB member files (chunk 64 KiB) created at the first start and
 * exported as LUN 0 of one target, and the log that a start or a stop wrote. Stateless.
 */
public final class StartTests {
    private StartTests() {
    }

    /** Code run while the log is captured; it may throw anything. */
    public interface Action {
        void run() throws Exception;
    }

    /**
     * The configuration {@code <name>.yaml} with its member files (and relative paths) in {@code dataDir}, served by
     * target {@code iqn.2026-11.io.stripestack:<name>}.
     *
     * @param server     the entries of the {@code server} map, e.g. {@code portals: ["127.0.0.1:0"]}
     * @param sparse     whether the members are created sparse ({@code create_sparse})
     * @param lunEntries more entries of the LUN's map, each after a comma (e.g. {@code ", crypto: {...}"}), or ""
     */
    public static StripestackConfig oneArray(String name, Path dataDir, String server, boolean sparse, String lunEntries)
            throws Exception {
        return ConfigLoader.parse(name + ".yaml", """
                data_dir: %s
                server: {%s}
                arrays:
                  md0:
                    members: [m0.img, m1.img, m2.img, m3.img]
                    create_member_size: 8MiB
                    create_sparse: %s
                    chunk: 64KiB
                targets:
                  - iqn: iqn.2026-11.io.stripestack:%s
                    luns: [{lun: 0, array: md0%s}]
                """.formatted(dataDir, server, sparse, name, lunEntries), dataDir);
    }

    /**
     * Runs {@code action} with System.err (slf4j-simple's log) captured, prints what it captured to the real
     * System.err afterwards and returns it.
     */
    public static String capturingLog(Action action) throws Exception {
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            action.run();
        } finally {
            System.setErr(original);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        System.err.print(log);
        return log;
    }
}
