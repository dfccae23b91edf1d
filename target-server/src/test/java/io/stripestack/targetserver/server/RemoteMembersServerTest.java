package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiUrl;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.control.AdminServer;
import io.stripestack.targetserver.testing.ExternalTools;
import io.stripestack.targetserver.testing.Tgtd;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A RAID-5 across four LUNs on four real tgt targets (one tgtd each) and one local file, exported by our own
 * front end: libiscsi's and qemu's clients use it, mdadm reads the superblocks on the remote LUNs, the array
 * assembles again from them after a restart; a target killed under a verifying write load makes the array
 * degraded and loses no acknowledged write, and a second one stops the array with an error.
 */
class RemoteMembersServerTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:remote";
    private static final long LUN_BYTES = 32L << 20;

    @TempDir
    Path dir;

    private final List<Tgtd> targets = new ArrayList<>();

    @AfterEach
    void killTargets() {
        targets.forEach(Tgtd::close);
    }

    private StripestackConfig config() throws Exception {
        return config("");
    }

    /** @param arrayKeys more keys of md0, each line indented by four spaces */
    private StripestackConfig config(String arrayKeys) throws Exception {
        for (int i = 0; i < 4; i++) {
            targets.add(Tgtd.start(dir.resolve("tgt" + i), 1, LUN_BYTES));
        }
        String yaml = """
                data_dir: %s
                server:
                  portals: ["127.0.0.1:0"]
                  io_threads: 8
                  metrics: "127.0.0.1:0"
                arrays:
                  md0:
                    members: [%s, %s, local.img, %s, %s]
                    create_member_size: 32MiB
                    chunk: 64KiB
                    remote_connections: 2
                    remote_queue_depth: 16
                    remote_retry_timeout_seconds: 3
                    remote_command_timeout_seconds: 5
                    %s
                targets:
                  - iqn: %s
                    luns:
                      - {lun: 0, array: md0, readahead: 0}
                """.formatted(dir.resolve("data"), targets.get(0).url(1), targets.get(1).url(1), targets.get(2).url(1),
                targets.get(3).url(1), arrayKeys.strip(), IQN);
        Path file = dir.resolve("remote.yaml");
        Files.writeString(file, yaml);
        return ConfigLoader.load(file);
    }

    private static String url(StripestackServer server) {
        return "iscsi://127.0.0.1:" + server.boundAddresses().get(0).getPort() + "/" + IQN + "/0";
    }

    @Test
    void realClientsUseAnArrayOfRemoteMembersAndItAssemblesAgainFromTheirSuperblocks() throws Exception {
        StripestackConfig config = config();
        long arrayBytes;
        try (StripestackServer server = StripestackServer.start(config)) {
            String capacity = ExternalTools.run("iscsi-readcapacity16", url(server))
                    .requireSuccess("iscsi-readcapacity16").output();
            arrayBytes = Long.parseLong(capacity.replaceAll("(?s).*Total size:(\\d+).*", "$1"));
            assertTrue(arrayBytes >= 4 * (LUN_BYTES - (2 << 20)), capacity);
            String written = ExternalTools.run("qemu-io", "-f", "raw", "-c", "write -P 0x5a 0 3M",
                    "-c", "write -P 0xc3 5M 200k", "-c", "read -P 0x5a 0 3M", url(server))
                    .requireSuccess("qemu-io write").output();
            assertFalse(written.contains("fail"), written);

            Path socket = config.server().adminSocket();
            String status = AdminServer.request(socket, "status");
            assertTrue(status.contains("[5/5] [UUUUU]"), status);
            assertTrue(status.contains("md0 remote " + targets.get(0).url(1) + ": connected, sessions 2/2, queue_depth 16"),
                    status);
            assertTrue(AdminServer.request(socket, "get md0/remote/3").startsWith(targets.get(3).url(1) + ": connected"));
            String metrics = new String(java.net.URI.create("http://127.0.0.1:" + server.metricsPort() + "/metrics")
                    .toURL().openStream().readAllBytes());
            assertTrue(metrics.contains("stripestack_remote_member_connected{array=\"md0\",member=\""
                    + targets.get(2).url(1) + "\",state=\"connected\"} 1"), metrics);
            assertTrue(metrics.matches("(?s).*stripestack_remote_member_commands_total\\{[^}]*\\} [1-9].*"), metrics);
        }
        String examine = ExternalTools.run("mdadm", "--examine", targets.get(1).backingFile(1).toString())
                .requireSuccess("mdadm --examine").output();
        assertTrue(examine.contains("Raid Level : raid5") && examine.contains("Raid Devices : 5"), examine);

        try (StripestackServer server = StripestackServer.start(config)) {
            String status = AdminServer.request(config.server().adminSocket(), "status");
            assertTrue(status.contains("[5/5] [UUUUU]"), "assembled from the remote superblocks: " + status);
            String read = ExternalTools.run("qemu-io", "-f", "raw", "-r", "-c", "read -P 0x5a 0 3M",
                    "-c", "read -P 0xc3 5M 200k", url(server)).requireSuccess("qemu-io read").output();
            assertFalse(read.contains("fail"), read);
        }
    }

    @Test
    void aKilledTargetMakesTheArrayDegradedWithoutLosingAWriteAndASecondOneStopsIt() throws Exception {
        StripestackConfig config = config();
        int blockBytes = 64 << 10;
        int blocks = 256;
        // generation of the last acknowledged write of each block (0: never written)
        AtomicLongArray acknowledged = new AtomicLongArray(blocks);
        try (StripestackServer server = StripestackServer.start(config);
             IscsiInitiator client = IscsiInitiator.login(IscsiUrl.parse(url(server)), InitiatorOptions.defaults())) {
            AtomicBoolean stop = new AtomicBoolean();
            ExecutorService writers = Executors.newFixedThreadPool(4);
            List<Future<Long>> done = new ArrayList<>();
            for (int w = 0; w < 4; w++) {
                int writer = w;
                done.add(writers.submit(() -> {
                    ByteBuffer buf = ByteBuffer.allocateDirect(blockBytes);
                    long writes = 0;
                    // each writer owns the blocks b with b % 4 == writer, so acknowledgements are ordered per block
                    for (long generation = 1; !stop.get(); generation++) {
                        for (int b = writer; b < blocks && !stop.get(); b += 4) {
                            fill(buf, b, generation);
                            client.write16((long) b * blockBytes / 512, buf);
                            acknowledged.set(b, generation);
                            writes++;
                        }
                    }
                    return writes;
                }));
            }
            Thread.sleep(1500);
            targets.get(1).kill();
            Thread.sleep(6000); // the retry window (3 s) passes under load
            stop.set(true);
            long writes = 0;
            for (Future<Long> f : done) {
                writes += f.get(60, TimeUnit.SECONDS);
            }
            writers.shutdown();
            Path socket = config.server().adminSocket();
            assertEquals("degraded\n", AdminServer.request(socket, "get md0/array_state"));
            String status = AdminServer.request(socket, "status");
            assertTrue(status.contains("md0 remote " + targets.get(1).url(1) + ": failed"), status);
            assertTrue(writes > blocks, "the load kept writing: " + writes);

            ByteBuffer back = ByteBuffer.allocateDirect(blockBytes);
            ByteBuffer expected = ByteBuffer.allocateDirect(blockBytes);
            for (int b = 0; b < blocks; b++) {
                long generation = acknowledged.get(b);
                if (generation == 0) {
                    continue;
                }
                back.clear();
                client.read16((long) b * blockBytes / 512, back);
                fill(expected, b, generation);
                assertEquals(expected, back.flip(), "block " + b + " generation " + generation);
            }

            targets.get(3).kill();
            ByteBuffer one = ByteBuffer.allocateDirect(blockBytes);
            fill(one, 0, 1 << 20);
            IOException refused = assertThrows(IOException.class, () -> {
                for (int b = 0; b < blocks; b++) { // the first write to reach the second lost member fails
                    client.write16((long) b * blockBytes / 512, one.rewind());
                }
            });
            assertTrue(refused.getMessage().contains("CHECK CONDITION"), refused.getMessage());
            assertEquals("failed\n", AdminServer.request(socket, "get md0/array_state"));
        }
    }

    @Test
    void aTargetThatComesBackIsReAddedAndOnlyTheRegionsWrittenMeanwhileAreRebuilt() throws Exception {
        StripestackConfig config = config("""
                    consistency_policy: bitmap
                    bitmap_chunk: 1MiB
                """);
        StripestackServer.start(config).close(); // created (its initial parity pass dirties every region), closed clean
        int blockBytes = 64 << 10;
        try (StripestackServer server = StripestackServer.start(config);
             IscsiInitiator client = IscsiInitiator.login(IscsiUrl.parse(url(server)), InitiatorOptions.defaults())) {
            Path socket = config.server().adminSocket();
            ByteBuffer buf = ByteBuffer.allocateDirect(blockBytes);
            int before = 32;                      // 2 MiB written while all are there
            for (int b = 0; b < before; b++) {
                fill(buf, b, 1);
                client.write16((long) b * blockBytes / 512, buf);
            }
            targets.get(1).kill();
            int away = 16;                        // 1 MiB written while member 1 is away, from 40 MiB on
            int firstAway = 640;
            for (int b = firstAway; b < firstAway + away; b++) {
                fill(buf, b, 2);
                client.write16((long) b * blockBytes / 512, buf);
            }
            assertEquals("degraded", io.stripestack.targetserver.testing.AdminAttributes.get(socket, "md0/array_state"));
            long commandsWhileAway = commands(AdminServer.request(socket, "get md0/remote/1"));

            targets.get(1).restart();
            io.stripestack.targetserver.testing.AdminAttributes.waitFor(socket, "md0/array_state", "clean");
            String line = AdminServer.request(socket, "get md0/remote/1");
            assertTrue(line.contains(": connected"), line);
            long rebuildCommands = commands(line) - commandsWhileAway;
            // the dirty 1 MiB regions: up to 2 from before (the bitmap daemon may not have cleared them yet) and
            // 1 or 2 while away, a 64 KiB command per row, plus superblock and bitmap writes; a whole rebuild
            // would write all of the member's ~480 rows
            assertTrue(rebuildCommands > 0 && rebuildCommands < 100, "rebuild commands " + rebuildCommands);

            targets.get(3).kill();                // now every row needs the re-added member
            io.stripestack.targetserver.testing.AdminAttributes.waitFor(socket, "md0/array_state", "degraded");
            ByteBuffer back = ByteBuffer.allocateDirect(blockBytes);
            for (int b = 0; b < firstAway + away; b++) {
                if (b >= before && b < firstAway) {
                    continue;
                }
                back.clear();
                client.read16((long) b * blockBytes / 512, back);
                fill(buf, b, b < before ? 1 : 2);
                assertEquals(buf, back.flip(), "block " + b);
            }
        }
    }

    private static long commands(String statusLine) {
        return Long.parseLong(statusLine.replaceAll("(?s).*commands (\\d+),.*", "$1"));
    }

    /** A block's contents for one generation: every 8 bytes say block and generation, so a stale block shows. */
    private static void fill(ByteBuffer buf, int block, long generation) {
        buf.clear();
        while (buf.hasRemaining()) {
            buf.putLong((long) block << 40 | generation);
        }
        buf.flip();
    }
}
