package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.stripestack.targetserver.testing.AdminAttributes.get;
import static io.stripestack.targetserver.testing.AdminAttributes.waitFor;

import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.control.AdminServer;
import io.stripestack.targetserver.testing.ExternalTools;
import io.stripestack.targetserver.testing.ExternalTools.Result;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The array lifecycle as an operator drives it through the admin socket (what `stripestack ctl` sends):
 * fail a member, watch the configured hot spare rebuild with a progress line in status, check the
 * parity, remove the failed member, add a new spare, and let mdadm judge the members afterwards.
 */
class ArrayControlTest {
    @TempDir
    Path dir;

    @Test
    void failRebuildCheckRemoveAdd() throws Exception {
        StripestackConfig config = ConfigLoader.parse("lifecycle.yaml", """
                data_dir: %s
                server: {portals: ["127.0.0.1:0"], write_buffer_budget: 3MiB}
                arrays:
                  md0:
                    members: [m0.img, m1.img, m2.img, m3.img]
                    spares: [s0.img]
                    create_member_size: 16MiB
                    chunk: 64KiB
                targets:
                  - iqn: iqn.2026-11.io.stripestack:lifecycle
                    luns: [{lun: 0, array: md0}]
                """.formatted(dir), dir);
        byte[] data = new byte[4 << 20];
        new Random(9).nextBytes(data);
        try (StripestackServer server = StripestackServer.start(config)) {
            Path socket = config.server().adminSocket();
            var top = server.luns().get(0).top();
            top.write(0, ByteBuffer.wrap(data));
            String first = AdminServer.request(socket, "status");
            assertTrue(first.contains("(S)"), "the configured spare is listed");
            assertTrue(first.contains("of 3.0 MiB in use"), "the configured write buffer budget is the server's: " + first);
            AdminServer.request(socket, "set md0/sync_speed_max 1000000");

            AdminServer.request(socket, "set md0/fail 1");
            waitFor(socket, "md0/degraded", "0");
            waitFor(socket, "md0/sync_action", "idle");
            String status = AdminServer.request(socket, "status");
            assertTrue(status.contains("[4/4] [UUUU]"), status);

            AdminServer.request(socket, "set md0/sync_action check");
            waitFor(socket, "md0/sync_action", "idle");
            assertEquals("0", get(socket, "md0/mismatch_cnt"));

            IOException active = assertThrows(IOException.class, () -> AdminServer.request(socket, "set md0/remove 0"));
            assertTrue(active.getMessage().contains("fail it first"), active.getMessage());
            IOException bogus = assertThrows(IOException.class, () -> AdminServer.request(socket, "set md0/sync_action scrub"));
            assertTrue(bogus.getMessage().contains("use idle, frozen, check, repair, resync or recover"), bogus.getMessage());

            AdminServer.request(socket, "set md0/add s1.img");
            assertTrue(AdminServer.request(socket, "status").contains("s1.img(S)"), AdminServer.request(socket, "status"));

            ByteBuffer back = ByteBuffer.allocate(data.length);
            top.read(0, back);
            assertTrue(java.util.Arrays.equals(data, back.array()), "data intact after the rebuild");
        }
        ExternalTools.requireTool("mdadm");
        Result examine = ExternalTools.run("mdadm", "--examine", dir.resolve("s0.img").toString())
                .requireSuccess("mdadm --examine on the rebuilt spare");
        assertTrue(examine.output().contains("Active device 1"), examine.output());
        assertTrue(examine.output().contains("State : clean"), examine.output());
        assertTrue(Files.exists(dir.resolve("s1.img")));
    }

    /** The reshape thread rewrites the file just after the array is idle: waits a little for it. */
    private static void awaitFileContains(Path file, String text) throws Exception {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!Files.readString(file).contains(text)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the configuration file never said " + text + ":\n" + Files.readString(file));
            }
            Thread.sleep(20);
        }
    }

    @Test
    void raidDisksGrowsTheArrayOntoAddedSparesAndTheFileFollows() throws Exception {
        Path file = dir.resolve("grow.yaml");
        Files.writeString(file, """
                data_dir: %s
                server: {portals: ["127.0.0.1:0"]}
                arrays:
                  # the array that grows
                  md0:
                    members: [m0.img, m1.img, m2.img]   # three to start with
                    create_member_size: 8MiB
                    chunk: 64KiB
                targets:
                  - iqn: iqn.2026-11.io.stripestack:grow
                    luns: [{lun: 0, array: md0}]
                """.formatted(dir));
        StripestackConfig config = ConfigLoader.load(file);
        byte[] data = new byte[4 << 20];
        new Random(11).nextBytes(data);
        try (StripestackServer server = StripestackServer.start(config)) {
            Path socket = config.server().adminSocket();
            var top = server.luns().get(0).top();
            top.write(0, ByteBuffer.wrap(data));
            IOException noSpare = assertThrows(IOException.class, () -> AdminServer.request(socket, "set md0/raid_disks 4 force"));
            assertTrue(noSpare.getMessage().contains("spare"), noSpare.getMessage());
            AdminServer.request(socket, "set md0/add m3.img");
            AdminServer.request(socket, "set md0/raid_disks 4 force");   // the array keeps a PPL
            assertEquals("4", get(socket, "md0/raid_disks"));
            waitFor(socket, "md0/sync_action", "idle");
            String status = AdminServer.request(socket, "status");
            assertTrue(status.contains("[4/4] [UUUU]"), status);
            assertEquals("ppl", get(socket, "md0/consistency_policy"), "ppl again after the reshape");
            ByteBuffer back = ByteBuffer.allocate(data.length);
            top.read(0, back);
            assertTrue(java.util.Arrays.equals(data, back.array()), "data intact after the grow");

            // the file lists the new member without a saveconfig; a spare added later stays a spare there
            awaitFileContains(file, "members: [\"m0.img\", \"m1.img\", \"m2.img\", \"m3.img\"]");
            AdminServer.request(socket, "set md0/add s0.img");
            AdminServer.request(socket, "set md0/chunk_size 131072 force");
            waitFor(socket, "md0/sync_action", "idle");
            awaitFileContains(file, "chunk: 128KiB");
            String text = Files.readString(file);
            assertTrue(text.contains("spares: [\"s0.img\"]") && text.contains("# the array that grows")
                    && text.contains("create_member_size: 8MiB"), text);
        }
        StripestackConfig saved = ConfigLoader.load(file);
        assertEquals(4, saved.arrays().get("md0").members().size());
        try (StripestackServer again = StripestackServer.start(saved)) {
            String status = AdminServer.request(saved.server().adminSocket(), "status");
            assertTrue(status.contains("[4/4] [UUUU]") && status.contains("128k chunk") && status.contains("s0.img(S)"),
                    status);
            ByteBuffer back = ByteBuffer.allocate(data.length);
            again.luns().get(0).top().read(0, back);
            assertTrue(java.util.Arrays.equals(data, back.array()), "data intact after the restart");
        }
        ExternalTools.requireTool("mdadm");
        Result examine = ExternalTools.run("mdadm", "--examine", dir.resolve("m3.img").toString())
                .requireSuccess("mdadm --examine on the new member");
        assertTrue(examine.output().contains("Raid Devices : 4"), examine.output());
        assertTrue(examine.output().contains("Active device 3"), examine.output());
    }
}
