package io.stripestack.targetserver.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static io.stripestack.targetserver.testing.AdminAttributes.waitFor;
import static io.stripestack.targetserver.testing.StartTests.capturingLog;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.raid5.Raid5AssembleException;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.testing.ExternalTools;
import io.stripestack.targetserver.testing.StartTests;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sparse members on a file system that fills (a tmpfs with a size limit): each start warns with the numbers, ENOSPC
 * fails two members and the array, the stop says the array was not marked clean, and once space is freed a plain
 * start is refused while {@code serve --force} brings the array back with every acknowledged write. Mounting needs
 * root (CI runs as root): without it the test is skipped, except under CI=true where it fails. The tmpfs is always
 * unmounted.
 */
class FullFileSystemTest {
    private static final int BLOCK = 64 * 1024;

    @TempDir
    Path dir;

    private static boolean run(String... command) throws Exception {
        ExternalTools.Result result = ExternalTools.run(command);
        if (result.exitCode() != 0) {
            System.err.println(String.join(" ", command) + ": " + result.output());
        }
        return result.exitCode() == 0;
    }

    private StripestackConfig config(Path fs) throws Exception {
        return StartTests.oneArray("full", fs, "portals: [\"127.0.0.1:0\"], admin_socket: " + dir.resolve("admin.sock"),
                true, "");
    }

    private static ByteBuffer pattern(int seed) {
        ByteBuffer b = ByteBuffer.allocate(BLOCK);
        new Random(seed).nextBytes(b.array());
        return b;
    }

    @Test
    void twoMembersFailedByAFullFileSystemAreForcedBackWithEveryAcknowledgedWrite() throws Exception {
        Path fs = Files.createDirectories(dir.resolve("fs"));
        if (!run("mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", fs.toString())) {
            if (ExternalTools.inCi()) {
                fail("cannot mount a tmpfs (CI runs as root)");
            }
            Assumptions.abort("mounting a tmpfs needs root");
        }
        try {
            StripestackConfig config = config(fs);
            Map<Long, Integer> acknowledged = new LinkedHashMap<>();
            String firstRun = capturingLog(() -> {
                try (StripestackServer server = StripestackServer.start(config)) {
                    BlockDevice lun = server.luns().get(0).top();
                    Random random = new Random(29);
                    long blocks = lun.size() / BLOCK;
                    for (int i = 0; i < 10_000; i++) {
                        long block = random.nextInt((int) blocks);
                        int seed = random.nextInt();
                        try {
                            lun.write(block * BLOCK, pattern(seed));
                            lun.flush();
                        } catch (IOException full) {
                            break;
                        }
                        acknowledged.put(block, seed);
                    }
                    assertEquals("FAILED", server.arrays().get("md0").status().health().name());
                }
            });
            assertTrue(firstRun.contains("the sparse member files to create there take up to 32 MiB once written, but "
                    + "its file system has 6 MiB free"), firstRun);
            assertTrue(firstRun.contains("FAILED arrays NOT marked clean (their superblocks still say active): md0"),
                    firstRun);
            assertTrue(acknowledged.size() > 10, "some writes were acknowledged before the file system filled");

            String full = capturingLog(() -> assertThrows(IOException.class, () -> StripestackServer.start(config).close()));
            assertTrue(full.matches("(?s).*" + java.util.regex.Pattern.quote(fs.toString()) + ": the member files there are sparse: \\d+ MiB of them is not "
                    + "allocated yet, but their file system has 0 MiB free.*"), full);

            assertTrue(run("mount", "-o", "remount,size=64m", fs.toString()), "space freed");
            IOException refused = assertThrows(IOException.class, () -> StripestackServer.start(config).close());
            assertTrue(refused instanceof Raid5AssembleException && refused.getMessage().contains("serve --force"),
                    refused.toString());
            try (StripestackServer server = StripestackServer.start(config, true)) {
                String problems = String.join("\n", server.arrays().get("md0").assemblyProblems());
                assertTrue(problems.contains("FORCED back into member"), problems);
                BlockDevice lun = server.luns().get(0).top();
                for (Map.Entry<Long, Integer> e : acknowledged.entrySet()) {
                    ByteBuffer back = ByteBuffer.allocate(BLOCK);
                    lun.read(e.getKey() * BLOCK, back);
                    assertArrayEquals(pattern(e.getValue()).array(), back.array(), "block " + e.getKey());
                }
                waitFor(config.server().adminSocket(), "md0/array_state", "clean");
            }
        } finally {
            if (!run("umount", fs.toString()) && !run("umount", "-l", fs.toString())) {
                fail("could not unmount " + fs);
            }
        }
    }
}
