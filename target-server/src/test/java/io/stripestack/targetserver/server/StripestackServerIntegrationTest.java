package io.stripestack.targetserver.server;

import static io.stripestack.targetserver.testing.ExternalTools.run;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.crypto.PlainModeKeys;
import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.config.StripestackConfig;
import io.stripestack.targetserver.control.AdminServer;
import io.stripestack.targetserver.testing.ExternalTools;
import io.stripestack.targetserver.testing.ExternalTools.Result;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole product as a user runs it: a configuration file with a plain RAID-5 LUN, an encrypted
 * RAID-5 LUN at a misaligned payload offset and a file LUN; real clients (qemu-io, qemu-img, libiscsi's
 * tools) write and verify through iSCSI; the server is stopped and started again and the data is still
 * there; mdadm reads the members; the admin socket changes settings at run time.
 */
class StripestackServerIntegrationTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:it";

    @TempDir
    Path dir;

    private StripestackConfig config() throws Exception {
        Path key = dir.resolve("data/lun1.key");
        Files.createDirectories(key.getParent());
        byte[] keyBytes = new byte[64];
        new Random(11).nextBytes(keyBytes);
        PlainModeKeys.createKeyFile(key, keyBytes);
        String yaml = """
                data_dir: %s
                server:
                  portals: ["127.0.0.1:0"]
                  io_threads: 8
                  metrics: "127.0.0.1:0"
                arrays:
                  md0:
                    members: [md0/m0.img, md0/m1.img, md0/m2.img, md0/m3.img]
                    create_member_size: 32MiB
                    chunk: 64KiB
                  md1:
                    members: [md1/m0.img, md1/m1.img, md1/m2.img]
                    create_member_size: 32MiB
                    chunk: 16KiB
                    layout: right-asymmetric
                targets:
                  - iqn: %s
                    luns:
                      - {lun: 0, array: md0}
                      - lun: 1
                        array: md1
                        crypto: {cipher: aes-xts-plain64, key_file: lun1.key, offset: 162}
                        readahead: {read_ahead_kb: 256, placement: below-crypto}
                      - {lun: 2, file: plain.img, create_size: 16MiB, readahead: 0}
                """.formatted(dir.resolve("data"), IQN);
        Path file = dir.resolve("it.yaml");
        Files.writeString(file, yaml);
        return ConfigLoader.load(file);
    }

    private static String url(StripestackServer server, int lun) {
        InetSocketAddress a = server.boundAddresses().get(0);
        return "iscsi://127.0.0.1:" + a.getPort() + "/" + IQN + "/" + lun;
    }

    private static void qemuIo(String url, String... commands) throws Exception {
        String[] cmd = new String[3 + 2 * commands.length + 1];
        cmd[0] = "qemu-io";
        cmd[1] = "-f";
        cmd[2] = "raw";
        int i = 3;
        for (String c : commands) {
            cmd[i++] = "-c";
            cmd[i++] = c;
        }
        cmd[i] = url;
        Result r = run(cmd).requireSuccess("qemu-io");
        assertFalse(r.output().contains("Pattern verification failed"), r.output());
        assertFalse(r.output().toLowerCase().contains("error"), r.output());
    }

    @Test
    void servesWritesSurvivesRestartAndIsControllable() throws Exception {
        ExternalTools.requireTool("qemu-io");
        ExternalTools.requireTool("iscsi-ls");
        StripestackConfig config = config();
        Path image = dir.resolve("random.img");
        byte[] random = new byte[3 << 20];
        new Random(5).nextBytes(random);
        Files.write(image, random);

        try (StripestackServer server = StripestackServer.start(config)) {
            Result ls = run("iscsi-ls", "-s", "iscsi://127.0.0.1:" + server.boundAddresses().get(0).getPort() + "/")
                    .requireSuccess("iscsi-ls");
            assertTrue(ls.output().contains("Target:" + IQN), ls.output());
            assertTrue(ls.output().contains("Lun:1"), ls.output());
            for (int lun = 0; lun < 3; lun++) {
                // Unaligned offsets and lengths across chunk and stripe boundaries.
                qemuIo(url(server, lun), "write -P 0x5a 0 1M", "write -P 0x" + Integer.toHexString(0x21 + lun)
                        + " 200k 700k", "read -P 0x5a 0 200k", "read -P 0x" + Integer.toHexString(0x21 + lun)
                        + " 200k 700k", "read -P 0x5a 900k 124k");
            }
            run("qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", image.toString(), url(server, 1))
                    .requireSuccess("qemu-img convert");
            Result capacity = run("iscsi-readcapacity16", url(server, 1)).requireSuccess("iscsi-readcapacity16");
            // 162 sectors = 81 KiB into a 2 x 16 KiB stripe: the LUN's first stripe starts 15 KiB in. SBC counts
            // the lowest aligned LBA in 4 KiB physical blocks (exponent 3): 15 KiB mod 4 KiB = 3 KiB = LBA 6.
            assertTrue(capacity.output().contains("LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT:3"), capacity.output());
            assertTrue(capacity.output().contains("LOWEST ALIGNED LOGICAL BLOCK ADDRESS:6"), capacity.output());

            Path socket = config.server().adminSocket();
            AdminServer.request(socket, "set md0/stripe_cache_size 128");
            assertEquals("128\n", AdminServer.request(socket, "get md0/stripe_cache_size"));
            IOException invalid = assertThrows(IOException.class,
                    () -> AdminServer.request(socket, "set md0/stripe_cache_size -4"));
            assertTrue(invalid.getMessage().contains("valid"), invalid.getMessage());
            String status = AdminServer.request(socket, "status");
            assertTrue(status.contains("md0 : active raid5"), status);
            assertTrue(status.contains("[4/4] [UUUU]"), status);
            // a new array closes the write hole by default; ppl and resync switch on the running array, as in md
            assertTrue(status.contains("consistency_policy ppl"), status);
            AdminServer.request(socket, "set md0/consistency_policy resync");
            assertEquals("resync\n", AdminServer.request(socket, "get md0/consistency_policy"));
            IOException bitmap = assertThrows(IOException.class,
                    () -> AdminServer.request(socket, "set md0/consistency_policy bitmap"));
            assertTrue(bitmap.getMessage().contains("needs a restart"), bitmap.getMessage());
            AdminServer.request(socket, "set md0/consistency_policy ppl");
            assertTrue(AdminServer.request(socket, "status").contains("consistency_policy ppl"));
            String metrics = new String(java.net.URI.create("http://127.0.0.1:" + server.metricsPort() + "/metrics")
                    .toURL().openStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            assertTrue(metrics.matches("(?s).*\nstripestack_lun_written_bytes_total\\{target=\""
                    + IQN.replace(".", "\\.") + "\",lun=\"0\",layer=\"raid5\"} [1-9][0-9]*\n.*"), metrics);
        }

        for (int m = 0; m < 4; m++) {
            Result examine = run("mdadm", "--examine", dir.resolve("data/md0/m" + m + ".img").toString())
                    .requireSuccess("mdadm --examine");
            assertTrue(examine.output().contains("State : clean"), examine.output());
            assertTrue(examine.output().contains("Active device " + m), examine.output());
            assertTrue(examine.output().contains("PPL : "), examine.output());
        }

        try (StripestackServer server = StripestackServer.start(config)) {
            for (int lun = 0; lun < 3; lun++) {
                String pattern = "0x" + Integer.toHexString(0x21 + lun);
                if (lun == 1) {
                    continue;
                }
                qemuIo(url(server, lun), "read -P 0x5a 0 200k", "read -P " + pattern + " 200k 700k");
            }
            Path back = dir.resolve("back.img");
            run("qemu-img", "dd", "-f", "raw", "-O", "raw", "if=" + url(server, 1), "of=" + back, "bs=1M", "count=3")
                    .requireSuccess("qemu-img dd");
            assertArrayEquals(random, Files.readAllBytes(back), "LUN 1 after restart");
        }
    }

    @Test
    void aSecondServerOnTheSameMembersIsRefused() throws Exception {
        StripestackConfig config = config();
        try (StripestackServer first = StripestackServer.start(config)) {
            IOException e = assertThrows(IOException.class, () -> StripestackServer.start(config));
            assertTrue(e.getMessage().contains("already in use"), e.getMessage());
            assertEquals(1, first.arrays().size() - 1);
        }
    }
}
