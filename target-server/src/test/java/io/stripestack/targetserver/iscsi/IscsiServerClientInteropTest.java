package io.stripestack.targetserver.iscsi;

import static io.stripestack.targetserver.testing.ExternalTools.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.util.ResourceLeakDetector;
import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.targetserver.scsi.LogicalUnit;
import io.stripestack.targetserver.scsi.LogicalUnitIdentity;
import io.stripestack.targetserver.scsi.ScsiTarget;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import io.stripestack.targetserver.testing.ExternalTools.Result;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The server on a free 127.0.0.1 port driven by real libiscsi clients and qemu-io as processes.
 * Outside CI a missing client skips; with CI=true it fails.
 */
class IscsiServerClientInteropTest {
    static final String OPEN_IQN = "iqn.2026-11.io.stripestack:open";
    static final String CHAP_IQN = "iqn.2026-11.io.stripestack:chap";
    static final String ACL_IQN = "iqn.2026-11.io.stripestack:acl";
    static final String ALLOWED_INITIATOR = "iqn.2026-11.io.stripestack:allowed-host";
    static final String CHAP_USER = "stripeuser";
    static final String CHAP_SECRET = "stripesecret12";

    static ExecutorService executor;
    static IscsiServer server;
    static int port;

    @BeforeAll
    static void startServer() throws IOException {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        executor = Executors.newFixedThreadPool(4);
        IscsiServerSettings settings = IscsiServerSettings.builder()
                .bind(new InetSocketAddress("127.0.0.1", 0))
                .maxRecvDataSegmentLength(65536)
                .build();
        server = new IscsiServer(settings, List.of(
                IscsiTargetDefinition.builder(OPEN_IQN, memoryTarget(OPEN_IQN)).alias("open").build(),
                IscsiTargetDefinition.builder(CHAP_IQN, memoryTarget(CHAP_IQN))
                        .chap(CHAP_USER, CHAP_SECRET.toCharArray()).build(),
                IscsiTargetDefinition.builder(ACL_IQN, memoryTarget(ACL_IQN))
                        .allowedInitiators(List.of(ALLOWED_INITIATOR)).build()),
                executor);
        server.start();
        port = server.boundPort();
    }

    private static ScsiTarget memoryTarget(String name) {
        MemoryBlockDevice device = new MemoryBlockDevice(name, 16 << 20, 512);
        return new ScsiTarget(Map.of(0L, new LogicalUnit(device,
                LogicalUnitIdentity.of(UUID.nameUUIDFromBytes(name.getBytes(StandardCharsets.UTF_8))), false)));
    }

    @AfterAll
    static void stopServer() throws InterruptedException {
        if (server != null) {
            server.close();
        }
        executor.shutdown();
        assertTrue(executor.awaitTermination(10, TimeUnit.SECONDS));
    }

    private static String url(String iqn) {
        return "iscsi://127.0.0.1:" + port + "/" + iqn + "/0";
    }

    @Test
    void iscsiLsDiscoversTargetsAndLuns() throws Exception {
        // credentials and an allowed initiator name so iscsi-ls can log in to every target to list LUNs
        Result r = run("iscsi-ls", "-s", "-i", ALLOWED_INITIATOR,
                "iscsi://" + CHAP_USER + "%" + CHAP_SECRET + "@127.0.0.1:" + port);
        assertEquals(0, r.exitCode(), r.output());
        for (String iqn : List.of(OPEN_IQN, CHAP_IQN, ACL_IQN)) {
            assertTrue(r.output().contains("Target:" + iqn + " Portal:127.0.0.1:" + port + ",1"), r.output());
        }
        assertEquals(3, r.output().split("Lun:0 ", -1).length - 1, r.output());
    }

    @Test
    void iscsiInqAndReadCapacity16SeeTheLun() throws Exception {
        Result inq = run("iscsi-inq", url(OPEN_IQN));
        assertEquals(0, inq.exitCode(), inq.output());
        assertTrue(inq.output().contains("STRIPSTK"), inq.output());
        Result cap = run("iscsi-readcapacity16", url(OPEN_IQN));
        assertEquals(0, cap.exitCode(), cap.output());
        assertTrue(cap.output().contains("Logical Block Length:512") || cap.output().contains("512"), cap.output());
        assertTrue(cap.output().contains("Total size:" + (16L << 20)), cap.output());
    }

    @Test
    void qemuIoWritesAndVerifiesOneMebibyte() throws Exception {
        Result r = run("qemu-io", "-f", "raw", "-c", "write -P 0xab 0 1M", "-c", "read -P 0xab 0 1M",
                "-c", "write -P 0x5c 4096 300k", "-c", "read -P 0x5c 4096 300k", url(OPEN_IQN));
        assertEquals(0, r.exitCode(), r.output());
        assertFalse(r.output().contains("Pattern verification failed"), r.output());
        assertTrue(r.output().contains("wrote 1048576/1048576 bytes"), r.output());
        assertTrue(r.output().contains("read 1048576/1048576 bytes"), r.output());
        assertTrue(r.output().contains("read 307200/307200 bytes"), r.output());
    }

    @Test
    void concurrentSessionsWithSixteenCommandsInFlightEachKeepTheirData() throws Exception {
        int sessions = 3;
        List<java.util.concurrent.Future<Result>> runs = new java.util.ArrayList<>();
        ExecutorService clients = Executors.newFixedThreadPool(sessions);
        try {
            for (int k = 0; k < sessions; k++) {
                String offset = Integer.toString(k * (4 << 20));
                String pattern = Integer.toString(0x30 + k);
                runs.add(clients.submit(() -> run("qemu-img", "bench", "-w", "-c", "64", "-d", "16", "-s", "64k",
                        "-o", offset, "--pattern=" + pattern, "-f", "raw", url(OPEN_IQN))));
            }
            for (java.util.concurrent.Future<Result> f : runs) {
                Result r = f.get(90, TimeUnit.SECONDS);
                assertEquals(0, r.exitCode(), r.output());
            }
        } finally {
            clients.shutdownNow();
        }
        for (int k = 0; k < sessions; k++) {
            Result check = run("qemu-io", "-f", "raw", "-c",
                    "read -P 0x" + Integer.toHexString(0x30 + k) + " " + k * (4 << 20) + " 4M", url(OPEN_IQN));
            assertEquals(0, check.exitCode(), check.output());
            assertFalse(check.output().contains("Pattern verification failed"), check.output());
            assertTrue(check.output().contains("read 4194304/4194304 bytes"), check.output());
        }
    }

    @Test
    void chapRightSecretLogsInAndWrongSecretIsRefused() throws Exception {
        Result right = run("iscsi-inq", "iscsi://" + CHAP_USER + "%" + CHAP_SECRET + "@127.0.0.1:" + port + "/" + CHAP_IQN + "/0");
        assertEquals(0, right.exitCode(), right.output());
        assertTrue(right.output().contains("STRIPSTK"), right.output());
        Result wrong = run("iscsi-inq", "iscsi://" + CHAP_USER + "%wrongsecret99@127.0.0.1:" + port + "/" + CHAP_IQN + "/0");
        assertNotEquals(0, wrong.exitCode(), wrong.output());
        Result none = run("iscsi-inq", url(CHAP_IQN));
        assertNotEquals(0, none.exitCode(), none.output());
    }

    @Test
    void initiatorOutsideTheAccessListIsRefused() throws Exception {
        Result refused = run("iscsi-inq", "-i", "iqn.2026-11.io.stripestack:stranger", url(ACL_IQN));
        assertNotEquals(0, refused.exitCode(), refused.output());
        Result allowed = run("iscsi-inq", "-i", ALLOWED_INITIATOR, url(ACL_IQN));
        assertEquals(0, allowed.exitCode(), allowed.output());
    }

    @Test
    void bareConnectsGarbageAndIdleConnectionsDoNotStallOthers() throws Exception {
        try (Socket idle = new Socket("127.0.0.1", port); Socket garbage = new Socket("127.0.0.1", port)) {
            new Socket("127.0.0.1", port).close();
            OutputStream out = garbage.getOutputStream();
            byte[] junk = new byte[4096];
            new java.util.Random(7).nextBytes(junk);
            out.write(junk);
            out.flush();
            Result r = run("iscsi-inq", url(OPEN_IQN));
            assertEquals(0, r.exitCode(), r.output());
            assertTrue(idle.isConnected());
        }
    }
}
