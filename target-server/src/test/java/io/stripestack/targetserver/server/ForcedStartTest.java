package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static io.stripestack.targetserver.testing.AdminAttributes.get;
import static io.stripestack.targetserver.testing.AdminAttributes.waitFor;
import static io.stripestack.targetserver.testing.StartTests.capturingLog;

import io.stripestack.raid5.Raid5AssembleException;
import io.stripestack.raid5.Raid5Status;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.control.AdminServer;
import io.stripestack.targetserver.testing.StartTests;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A failed array at the server: the ctl attribute {@code md0/force} brings a running one back, a stop says that a
 * failed array was not marked clean, and {@code serve --force} starts one that a plain start refuses.
 */
class ForcedStartTest {
    @TempDir
    Path dir;

    private StripestackConfig config() throws Exception {
        return StartTests.oneArray("forced", dir, "portals: [\"127.0.0.1:0\"]", false, "");
    }

    private static byte[] data(int seed) {
        byte[] b = new byte[1 << 20];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static void assertReads(StripestackServer server, byte[] expected) throws IOException {
        ByteBuffer back = ByteBuffer.allocate(expected.length);
        server.luns().get(0).top().read(0, back);
        assertArrayEquals(expected, back.array());
    }

    @Test
    void aFailedArrayIsForcedBackAtRunTimeAndItsStopSaysItWasNotMarkedClean() throws Exception {
        StripestackConfig config = config();
        byte[] first = data(1);
        String stopLog = capturingLog(() -> {
            StripestackServer server = StripestackServer.start(config);
            try {
                Path socket = config.server().adminSocket();
                server.luns().get(0).top().write(0, ByteBuffer.wrap(first));
                server.luns().get(0).top().flush();
                AdminServer.request(socket, "set md0/fail 1");
                AdminServer.request(socket, "set md0/fail 2");
                assertEquals("failed", get(socket, "md0/array_state"));
                IOException notOne = assertThrows(IOException.class, () -> AdminServer.request(socket, "set md0/force yes"));
                assertTrue(notOne.getMessage().contains("write 1"), notOne.getMessage());
                AdminServer.request(socket, "set md0/force 1");
                String done = get(socket, "md0/force");
                assertTrue(done.contains("member 2") && done.contains("FORCED back in sync"), done);
                assertTrue(done.contains("member 1") && done.contains("re-added"), done);
                waitFor(socket, "md0/array_state", "clean");
                assertReads(server, first);
                AdminServer.request(socket, "set md0/fail 0");
                AdminServer.request(socket, "set md0/fail 3");
                assertEquals("failed", get(socket, "md0/array_state"));
            } finally {
                server.close();
            }
        });
        assertTrue(stopLog.contains("FAILED arrays NOT marked clean (their superblocks still say active): md0"), stopLog);
        assertFalse(stopLog.contains("arrays marked clean: md0"), stopLog);

        IOException refused = assertThrows(IOException.class, () -> StripestackServer.start(config).close());
        assertTrue(refused instanceof Raid5AssembleException && refused.getMessage().contains("serve --force"),
                refused.toString());
        try (StripestackServer server = StripestackServer.start(config, true)) {
            Raid5Status status = server.arrays().get("md0").status();
            assertTrue(String.join("\n", server.arrays().get("md0").assemblyProblems()).contains("m3.img: FORCED back"),
                    server.arrays().get("md0").assemblyProblems().toString());
            assertTrue(status.health() != Raid5Status.Health.FAILED, status.mdstat());
            waitFor(config.server().adminSocket(), "md0/array_state", "clean");
            assertReads(server, first);
        }
        String cleanStop = capturingLog(() -> StripestackServer.start(config).close());
        assertTrue(cleanStop.contains("stopped: every stack flushed, arrays marked clean: md0"), cleanStop);
    }
}
