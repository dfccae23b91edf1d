package io.stripestack.bench.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.raid5.Raid5Array;
import io.stripestack.raid5.Raid5Layout;
import io.stripestack.raid5.Raid5Status;
import io.stripestack.cli.StripestackCli;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiUrl;
import io.stripestack.targetserver.server.StripestackServer;
import io.stripestack.bench.soak.BlockPattern.Verdict;
import io.stripestack.bench.soak.SoakStats.Corruption;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The soak, briefly: in process (a member failed and a spare rebuilt mid-run) and through iSCSI against the real
 * server (a member failed through the admin socket): zero corruption, blocks verified; the CLI end to end; and the
 * proof that the verifier
 * catches corruption planted in a member file below the running stack, naming the LBA and the kind.
 */
class SoakTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:soak";
    private static final int CHUNK = 64 << 10;

    @TempDir
    Path dir;

    private String yaml() {
        return """
                data_dir: %s
                server:
                  portals: ["127.0.0.1:0"]
                  nop_in_interval_seconds: 0
                arrays:
                  md0:
                    members: [md0/m0.img, md0/m1.img, md0/m2.img]
                    create_member_size: 9MiB
                    chunk: 64KiB
                targets:
                  - iqn: %s
                    luns:
                      - {lun: 0, array: md0}
                """.formatted(dir, IQN);
    }

    private StripestackConfig config() throws Exception {
        return ConfigLoader.parse("soak-test.yaml", yaml(), dir);
    }

    private static SoakSettings brief(Duration duration) {
        return SoakSettings.defaults().withDuration(duration).withLoad(4, 32, 40).withSeed(42)
                .withPeriods(Duration.ofSeconds(1), Duration.ofMillis(300));
    }

    @Test
    void inProcessWithAMemberFailedAndASpareRebuiltMidRunFindsNoCorruption() throws Exception {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        Path spare = dir.resolve("md0/spare.img");
        try (InProcessStack stack = InProcessStack.start(config(), null, 0)) {
            Raid5Array array = stack.array();
            SoakRunner runner = new SoakRunner(stack.device(), brief(Duration.ofSeconds(4))
                    .withMemberFailure(Duration.ofSeconds(1), 1).withSpare(spare), ArrayChaos.of(array),
                    new PrintStream(log, true));
            SoakRunner.Result result = runner.run();
            String output = log.toString(StandardCharsets.UTF_8);
            assertTrue(result.passed(), output);
            assertEquals(0, result.exitCode());
            assertTrue(runner.stats().blocksVerified() > 100, "blocks verified: " + output);
            assertTrue(runner.stats().blocksWritten() > 100, "blocks written: " + output);
            assertTrue(runner.stats().syncs() > 0, output);
            assertTrue(output.contains("failing member 1") && output.contains("adding spare " + spare), output);
            assertTrue(Files.exists(spare), "the spare was created");
            assertTrue(array.awaitSyncIdle(60, TimeUnit.SECONDS), "rebuild onto the spare: " + array.status().mdstat());
            assertEquals(Raid5Status.Health.CLEAN, array.status().health(), array.status().mdstat());
            // every block written, read back from the rebuilt array (the spare now serves role 1)
            assertEquals(0, runner.verifyAll(null), log.toString(StandardCharsets.UTF_8));
            assertTrue(output.contains("soak PASSED"), output);
        }
    }

    @Test
    void throughIscsiWithAMemberFailedThroughTheAdminSocketFindsNoCorruption() throws Exception {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        StripestackConfig config = config();
        try (StripestackServer server = StripestackServer.start(config)) {
            int port = server.boundAddresses().get(0).getPort();
            IscsiInitiator session = IscsiInitiator.login(new IscsiUrl("127.0.0.1", port, IQN, 0, null, null),
                    InitiatorOptions.defaults());
            try (SoakDevice device = SoakDevice.of(session)) {
                SoakRunner runner = new SoakRunner(device, brief(Duration.ofSeconds(3)).withMemberFailure(Duration.ofSeconds(1), 2),
                        ArrayChaos.viaAdminSocket(config.server().adminSocket(), "md0"), new PrintStream(log, true));
                SoakRunner.Result result = runner.run();
                String output = log.toString(StandardCharsets.UTF_8);
                assertTrue(result.passed(), output);
                assertTrue(runner.stats().blocksVerified() > 100, output);
                assertEquals(Raid5Status.Health.DEGRADED, server.arrays().get("md0").status().health(), output);
                assertEquals(0, runner.verifyAll(null), log.toString(StandardCharsets.UTF_8));
            }
        }
    }

    @Test
    void theCommandLineRunsAndExitsZero() throws Exception {
        Path file = dir.resolve("soak.yaml");
        Files.writeString(file, yaml());
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream original = System.out;
        int exit;
        System.setOut(new PrintStream(captured, true));
        try {
            exit = StripestackCli.run("soak", "--config", file.toString(), "--lun", "0", "--duration", "2s",
                    "--queue-depth", "3", "--report-every", "1s", "--fail-member-after", "1s", "--fail-role", "0");
        } finally {
            System.setOut(original);
        }
        String output = captured.toString(StandardCharsets.UTF_8);
        assertEquals(0, exit, output);
        assertTrue(output.contains("soak PASSED"), output);
        assertTrue(output.contains("failing member 0"), output);
        assertTrue(output.lines().anyMatch(l -> l.matches("soak 0:00:0\\d written \\d+ blocks.*corruption: none.*")), output);
    }

    @Test
    void theVerifierCatchesCorruptionPlantedInAMemberFileAndNamesTheLba() throws Exception {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        StripestackConfig config = config();
        List<Path> members = config.arrays().get("md0").members();
        try (InProcessStack stack = InProcessStack.start(config, null, 0)) {
            // writes only, on 1 MiB, so that blocks carry several generations
            SoakRunner runner = new SoakRunner(stack.device(), brief(Duration.ofMillis(1500)).withLoad(4, 8, 0)
                    .withSpan(1 << 20), null, new PrintStream(log, true));
            assertTrue(runner.run().passed(), log.toString(StandardCharsets.UTF_8));
            GenerationTable table = runner.generations();
            int torn = -1;
            int stale = -1;
            int misplaced = -1;
            for (int b = 0; b < table.blocks(); b++) {
                if (torn < 0 && table.acknowledged(b) >= 1) {
                    torn = b;
                } else if (stale < 0 && table.acknowledged(b) >= 2) {
                    stale = b;
                } else if (misplaced < 0 && table.acknowledged(b) >= 1) {
                    misplaced = b;
                }
            }
            int source = -1;
            for (int b = 0; b < table.blocks() && source < 0; b++) {
                if (b != torn && b != stale && b != misplaced && table.acknowledged(b) >= 1) {
                    source = b;
                }
            }
            assertTrue(torn >= 0 && stale >= 0 && misplaced >= 0 && source >= 0, "not enough written blocks: " + log);

            ByteBuffer block = ByteBuffer.allocate(BlockPattern.BLOCK);
            // torn: flip bytes in the middle of the block, in its member file
            readMember(members, torn, block);
            block.put(2000, (byte) (block.get(2000) ^ 0x5a)).put(2001, (byte) ~block.get(2001));
            writeMember(members, torn, block);
            // stale: the previous generation of the block
            new BlockPattern(42, block).fill(0, stale, table.acknowledged(stale) - 1);
            writeMember(members, stale, block);
            // misplaced: another block's valid content
            readMember(members, source, block);
            writeMember(members, misplaced, block);

            long found = runner.verifyAll(null);
            String output = log.toString(StandardCharsets.UTF_8);
            assertEquals(3, found, output);
            Map<Long, Verdict> byLba = runner.stats().firstCorruptions().stream()
                    .collect(Collectors.toMap(Corruption::lba, Corruption::verdict));
            assertEquals(Verdict.TORN, byLba.get(torn * 8L), output);
            assertEquals(Verdict.STALE, byLba.get(stale * 8L), output);
            assertEquals(Verdict.MISPLACED, byLba.get(misplaced * 8L), output);
            assertTrue(output.contains("CORRUPTION block " + torn + " (LBA " + torn * 8L + ","), output);
            assertEquals(1, new SoakRunner.Result(Duration.ZERO, runner.stats()).exitCode());
        }
    }

    /** Where array byte {@code block * 4096} lives: md's left-symmetric placement, read from the superblock. */
    private static long[] locate(List<Path> members, int block) throws Exception {
        ByteBuffer sb = ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN);
        try (FileChannel ch = FileChannel.open(members.get(0))) {
            ch.read(sb, 4096);
        }
        long dataOffset = sb.getLong(128) * 512;
        int chunk = sb.getInt(88) * 512;
        assertEquals(CHUNK, chunk);
        Raid5Layout layout = Raid5Layout.fromMdNumber(sb.getInt(76));
        int n = members.size();
        long offset = (long) block * BlockPattern.BLOCK;
        long c = offset / chunk;
        long row = c / (n - 1);
        int member = layout.dataMember(row, (int) (c % (n - 1)), n);
        return new long[] {member, dataOffset + row * chunk + offset % chunk};
    }

    private static void readMember(List<Path> members, int block, ByteBuffer dst) throws Exception {
        long[] where = locate(members, block);
        try (FileChannel ch = FileChannel.open(members.get((int) where[0]))) {
            dst.clear();
            ch.read(dst, where[1]);
            assertNotNull(dst);
        }
    }

    private static void writeMember(List<Path> members, int block, ByteBuffer src) throws Exception {
        long[] where = locate(members, block);
        try (FileChannel ch = FileChannel.open(members.get((int) where[0]), StandardOpenOption.WRITE)) {
            ch.write(src.clear(), where[1]);
        }
    }
}
