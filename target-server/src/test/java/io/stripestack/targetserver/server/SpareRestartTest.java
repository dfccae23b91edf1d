package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.stripestack.targetserver.testing.AdminAttributes.get;
import static io.stripestack.targetserver.testing.AdminAttributes.waitFor;

import io.stripestack.raid5.Raid5Status;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.control.AdminServer;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A spare rebuilt into the array is still a member after a restart with the same configuration file:
 * assembly finds members by the array UUID in their superblocks (md's way), not only by the file's lists.
 */
class SpareRestartTest {
    @TempDir
    Path dir;

    private StripestackConfig config(String spares) throws Exception {
        return ConfigLoader.parse("spares.yaml", """
                data_dir: %s
                server: {portals: ["127.0.0.1:0"]}
                arrays:
                  md0:
                    members: [m0.img, m1.img, m2.img, m3.img]
                    spares: [%s]
                    create_member_size: 16MiB
                    chunk: 64KiB
                targets:
                  - iqn: iqn.2026-11.io.stripestack:spares
                    luns: [{lun: 0, array: md0}]
                """.formatted(dir, spares), dir);
    }

    /** Restarts and checks the array is clean, {@code rebuilt} holds role 1, and the data reads back. */
    private void restartClean(StripestackConfig config, byte[] data, String rebuilt) throws Exception {
        try (StripestackServer server = StripestackServer.start(config)) {
            String status = AdminServer.request(config.server().adminSocket(), "status");
            assertTrue(status.contains("[4/4] [UUUU]"), "clean, not degraded, after the restart:\n" + status);
            Raid5Status array = server.arrays().get("md0").status();
            assertEquals(Raid5Status.Health.CLEAN, array.health());
            assertEquals(dir.resolve(rebuilt).toString(), array.members().get(1).device(), array.toString());
            ByteBuffer back = ByteBuffer.allocate(data.length);
            server.luns().get(0).top().read(0, back);
            assertTrue(Arrays.equals(data, back.array()), "data intact");
        }
    }

    /** Fails member 1, optionally adds {@code addAtRunTime} as a spare, and waits for the rebuild to finish. */
    private byte[] failAndRebuild(StripestackConfig config, String addAtRunTime) throws Exception {
        byte[] data = new byte[2 << 20];
        new Random(3).nextBytes(data);
        try (StripestackServer server = StripestackServer.start(config)) {
            Path socket = config.server().adminSocket();
            server.luns().get(0).top().write(0, ByteBuffer.wrap(data));
            AdminServer.request(socket, "set md0/sync_speed_max 1000000");
            AdminServer.request(socket, "set md0/fail 1");
            if (addAtRunTime != null) {
                AdminServer.request(socket, "set md0/add " + addAtRunTime);
            }
            waitFor(socket, "md0/degraded", "0");
            waitFor(socket, "md0/sync_action", "idle");
        }
        return data;
    }

    @Test
    void aConfiguredSpareRebuiltInStaysAfterRestart() throws Exception {
        StripestackConfig config = config("s0.img");
        restartClean(config, failAndRebuild(config, null), "s0.img");
    }

    @Test
    void aSpareAddedAtRunTimeAndRebuiltInStaysAfterRestart() throws Exception {
        StripestackConfig config = config("");
        restartClean(config, failAndRebuild(config, "s1.img"), "s1.img");
    }
}
