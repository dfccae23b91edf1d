package io.stripestack.cli.crash;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.bench.soak.SoakDevice;
import io.stripestack.bench.soak.SoakRunner;
import io.stripestack.bench.soak.SoakSettings;
import io.stripestack.cli.crash.CrashHarness.ParityScan;
import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiUrl;
import io.stripestack.targetserver.control.AdminServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A reshape (md's grow from 3 to 4 members, or a chunk change from 64 to 128 KiB) started through the admin socket
 * under an iSCSI write load, and the server process killed with SIGKILL at a random moment of it; the restart on the
 * same files resumes the reshape from the checkpoint in the superblocks, and afterwards every block reads back as
 * one of the generations acknowledged or in flight for it (synced ones intact, and, since only the process died,
 * unsynced acknowledged ones too), the array has its new shape, and every row's parity is consistent on the member
 * files. Needs only java.
 */
class ReshapeCrashKillTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:reshape-crash";
    /** md's feature bit of a reshape in progress. */
    private static final int FEATURE_RESHAPE_ACTIVE = 4;

    @TempDir
    Path dir;

    @ParameterizedTest
    @CsvSource({"21, raid_disks, 4", "22, raid_disks, 4", "23, raid_disks, 4", "24, chunk_size, 131072",
            "25, chunk_size, 131072", "26, chunk_size, 131072"})
    void aReshapeKilledAnywhereResumesAndLosesNothing(long seed, String attribute, String value) throws Exception {
        int port = CrashHarness.freePort();
        Path config = dir.resolve("reshape.yaml");
        Files.writeString(config, """
                data_dir: %s
                server:
                  portals: ["127.0.0.1:%d"]
                  admin_socket: admin.sock
                  nop_in_interval_seconds: 0
                  io_threads: 4
                arrays:
                  md0:
                    members: [md0/m0.img, md0/m1.img, md0/m2.img]
                    spares: [md0/m3.img]
                    create_member_size: 9MiB
                    chunk: 64KiB
                targets:
                  - iqn: %s
                    luns:
                      - {lun: 0, array: md0}
                """.formatted(dir, port, IQN));
        List<Path> members = List.of(dir.resolve("md0/m0.img"), dir.resolve("md0/m1.img"), dir.resolve("md0/m2.img"),
                dir.resolve("md0/m3.img"));
        Path socket = dir.resolve("admin.sock");
        IscsiUrl url = new IscsiUrl("127.0.0.1", port, IQN, 0, null, null);
        ByteArrayOutputStream soakLog = new ByteArrayOutputStream();
        Random random = new Random(seed);

        // 1. load, a slow grow to 4 members, SIGKILL at a random moment of it
        Process first = CrashHarness.startServer(config, port, dir.resolve("server-1.log"));
        SoakRunner runner;
        try {
            SoakDevice device = SoakDevice.of(IscsiInitiator.login(url, InitiatorOptions.defaults()));
            runner = new SoakRunner(device, SoakSettings.defaults().withDuration(null).withLoad(4, 8, 10)
                    .withSeed(seed).withPeriods(Duration.ofSeconds(1), Duration.ofMillis(150)), null,
                    new PrintStream(soakLog, true));
            SoakRunner load = runner;
            Thread loadThread = new Thread(() -> {
                try {
                    load.run();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "reshape-crash-load");
            loadThread.start();
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (runner.stats().syncs() < 3 && System.nanoTime() < until) {
                Thread.sleep(50);
            }
            assertTrue(runner.stats().syncs() >= 3, "the load never got going: " + soakLog);
            // about 1 MB/s: moving 16 to 18 MiB of data takes many seconds, the kill lands inside it
            AdminServer.request(socket, "set md0/sync_speed_max 1000");
            AdminServer.request(socket, "set md0/sync_speed_min 500");
            AdminServer.request(socket, "set md0/" + attribute + " " + value + " force"); // the array keeps a PPL
            Thread.sleep(300 + random.nextInt(2500));
            first.destroyForcibly();
            assertTrue(first.waitFor(10, TimeUnit.SECONDS));
            loadThread.join(TimeUnit.SECONDS.toMillis(20));
            assertTrue(!loadThread.isAlive(), "the soak did not notice the target's death");
            device.close();
        } finally {
            first.destroyForcibly();
        }
        assertTrue((featureMap(members.get(0)) & FEATURE_RESHAPE_ACTIVE) != 0,
                "the kill came after the reshape ended; the superblock does not say reshape active");
        int[] durable = runner.durableGenerations();
        assertNotNull(durable, "no SYNCHRONIZE CACHE completed: " + soakLog);

        // 2. restart: the reshape resumes and ends; every block reads back
        Process second = CrashHarness.startServer(config, port, dir.resolve("server-2.log"));
        try {
            CrashHarness.awaitLog(dir.resolve("server-2.log"), "reshape done", 120);
            awaitIdle(socket);
            assertEquals(value, AdminServer.request(socket, "get md0/" + attribute).trim());
            try (SoakDevice device = SoakDevice.of(IscsiInitiator.login(url, InitiatorOptions.defaults()))) {
                assertEquals(0, runner.verifyAll(device, durable), "synced writes after the resumed reshape:\n" + soakLog);
                assertEquals(0, runner.verifyAll(device, null), "acknowledged writes after the resumed reshape:\n"
                        + soakLog);
            }
            second.destroy(); // SIGTERM: orderly stop
            assertTrue(second.waitFor(30, TimeUnit.SECONDS), "the server did not stop on SIGTERM");
        } finally {
            second.destroyForcibly();
        }

        // 3. the active members on their own (the spare too after a grow), parity consistent in every row
        List<Path> active = attribute.equals("raid_disks") ? members : members.subList(0, 3);
        assertEquals(0, featureMap(active.get(active.size() - 1)) & FEATURE_RESHAPE_ACTIVE,
                "the reshape is recorded as done");
        ParityScan scan = ParityScan.of(active);
        assertTrue(scan.writtenRows().size() > 10, "rows with data: " + scan.writtenRows());
        assertEquals(java.util.Set.of(), scan.mismatchedRows(), "rows whose parity does not match after the reshape");
        System.out.printf("reshape crash test (seed %d, %s %s): %d rows with data on %d members, parity consistent%n",
                seed, attribute, value, scan.writtenRows().size(), active.size());
    }

    /** Waits until no sync action (the reshape, the resync after it) runs; the admin socket comes up after the arrays. */
    private static void awaitIdle(Path socket) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        String action = "no answer on the admin socket";
        while (System.nanoTime() < until) {
            try {
                action = AdminServer.request(socket, "get md0/sync_action").trim();
            } catch (IOException notYet) {   // the killed server's socket file, or none yet
                Thread.sleep(100);
                continue;
            }
            if (action.equals("idle")) {
                return;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("md0 still says " + action + " after 120 s");
    }

    /** The md v1.2 superblock's feature_map of a member file. */
    private static int featureMap(Path member) throws IOException {
        ByteBuffer sb = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
        try (FileChannel ch = FileChannel.open(member)) {
            ch.read(sb, 4096);
        }
        assertEquals(0xa92b4efc, sb.getInt(0), "md superblock magic of " + member);
        return sb.getInt(8);
    }
}
