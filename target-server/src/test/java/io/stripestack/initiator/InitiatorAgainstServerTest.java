package io.stripestack.initiator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.targetserver.config.ConfigLoader;
import io.stripestack.targetserver.server.StripestackServer;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The initiator against the real server in this process: RAM LUNs, small burst and PDU limits so that writes
 * need R2Ts and several Data-Out PDUs, a CHAP target, and a 1 s NOP-In interval.
 */
class InitiatorAgainstServerTest {
    private static final String OPEN = "iqn.2026-11.io.stripestack:open";
    private static final String GUARDED = "iqn.2026-11.io.stripestack:guarded";
    private static final int FIRST_BURST = 64 << 10;
    private static final int TARGET_MRDSL = 16 << 10;

    @TempDir
    static Path dir;
    static StripestackServer server;
    static int port;

    @BeforeAll
    static void startServer() throws Exception {
        String yaml = """
                data_dir: %s
                server:
                  portals: ["127.0.0.1:0"]
                  first_burst_length: %d
                  max_burst_length: 128KiB
                  max_recv_data_segment_length: %d
                  nop_in_interval_seconds: 1
                targets:
                  - iqn: %s
                    luns:
                      - {lun: 0, ram_size: 16MiB}
                      - {lun: 3, ram_size: 4MiB}
                  - iqn: %s
                    chap: {user: soak-user, secret: soak-secret-0001}
                    luns:
                      - {lun: 0, ram_size: 4MiB}
                """.formatted(dir, FIRST_BURST, TARGET_MRDSL, OPEN, GUARDED);
        server = StripestackServer.start(ConfigLoader.parse("initiator-test.yaml", yaml, dir));
        port = server.boundAddresses().get(0).getPort();
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    private static IscsiUrl url(String iqn, int lun) {
        return new IscsiUrl("127.0.0.1", port, iqn, lun, null, null);
    }

    private static byte[] random(int length, long seed) {
        byte[] b = new byte[length];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void negotiatesHonoursTheTargetAndReadsCapacity() throws Exception {
        try (IscsiInitiator session = IscsiInitiator.login(url(OPEN, 3), InitiatorOptions.defaults())) {
            assertEquals(4 << 20, session.capacity().bytes(), "LUN 3 is the 4 MiB RAM disk");
            assertEquals(512, session.capacity().blockSize());
            IscsiInitiator.Negotiated n = session.negotiated();
            assertEquals(FIRST_BURST, n.firstBurstLength(), "FirstBurstLength is the minimum of both offers");
            assertEquals(128 << 10, n.maxBurstLength(), "MaxBurstLength is the minimum of both offers");
            assertEquals(TARGET_MRDSL, n.targetMaxRecvDataSegmentLength(), "the target's declared MaxRecvDataSegmentLength");
            assertTrue(n.immediateData());
            assertFalse(n.initialR2T());
        }
        InitiatorOptions strict = InitiatorOptions.defaults().withBursts(false, true, 256 << 10, 1 << 20);
        try (IscsiInitiator session = IscsiInitiator.login(url(OPEN, 3), strict)) {
            assertFalse(session.negotiated().immediateData(), "ImmediateData is an AND");
            assertTrue(session.negotiated().initialR2T(), "InitialR2T is an OR");
        }
    }

    @Test
    void writesLargerThanTheFirstBurstGoThroughR2tAndReadBack() throws Exception {
        for (InitiatorOptions options : List.of(InitiatorOptions.defaults(),
                InitiatorOptions.defaults().withBursts(false, true, 256 << 10, 1 << 20))) {
            try (IscsiInitiator session = IscsiInitiator.login(url(OPEN, 0), options)) {
                byte[] data = random(1 << 20, options.hashCode());
                ByteBuffer src = ByteBuffer.wrap(data);
                session.write16(2048, src);
                assertEquals(0, src.position(), "write leaves the caller's buffer as it was");
                session.synchronizeCache16();
                ByteBuffer dst = ByteBuffer.allocateDirect(data.length);
                session.read16(2048, dst);
                assertFalse(dst.hasRemaining(), "the read filled the buffer");
                byte[] back = new byte[data.length];
                dst.flip().get(back);
                assertArrayEquals(data, back, "1 MiB (16 x FirstBurstLength) written with " + session.negotiated());
                session.logout();
                assertFalse(session.isConnected());
            }
        }
    }

    @Test
    void crc32cDigestsBothWaysCarryWritesAndReadsIntact() throws Exception {
        InitiatorOptions digests = InitiatorOptions.defaults().withDigests(Digest.CRC32C, Digest.CRC32C);
        for (InitiatorOptions options : List.of(digests, digests.withBursts(false, true, 256 << 10, 1 << 20))) {
            try (IscsiInitiator session = IscsiInitiator.login(url(OPEN, 0), options)) {
                assertTrue(session.negotiated().headerDigest() && session.negotiated().dataDigest(),
                        session.negotiated().toString());
                byte[] data = random(1 << 20, options.hashCode());
                session.write16(4096, ByteBuffer.wrap(data));
                session.write16Fua(8192, ByteBuffer.wrap(data, 0, 4096));
                session.synchronizeCache16();
                ByteBuffer dst = ByteBuffer.allocateDirect(data.length);
                session.read16(4096, dst);
                byte[] back = new byte[data.length];
                dst.flip().get(back);
                assertArrayEquals(data, back, "1 MiB through immediate, unsolicited and R2T Data-Out, "
                        + "and Data-In, all with digests: " + session.negotiated());
                ByteBuffer small = ByteBuffer.allocate(4096);
                session.read16(8192, small);
                assertArrayEquals(Arrays.copyOf(data, 4096), small.array(), "the FUA write");
                Thread.sleep(1500); // a NOP-In ping (1 s interval) and its answer cross with digests too
                assertTrue(session.isConnected(), "the connection survived the ping with digests");
                session.logout();
            }
        }
    }

    @Test
    void manyCommandsInFlightFromManyThreads() throws Exception {
        try (IscsiInitiator session = IscsiInitiator.login(url(OPEN, 0), InitiatorOptions.defaults())) {
            ExecutorService pool = Executors.newFixedThreadPool(12);
            try {
                List<Future<?>> results = new ArrayList<>();
                for (int t = 0; t < 12; t++) {
                    int thread = t;
                    results.add(pool.submit((Callable<Void>) () -> {
                        Random r = new Random(thread);
                        for (int i = 0; i < 40; i++) {
                            int blocks = 1 + r.nextInt(256);
                            long lba = thread * 2048L + r.nextInt(2048 - blocks);
                            byte[] data = random(blocks * 512, thread * 1000L + i);
                            session.write16(lba, ByteBuffer.wrap(data));
                            ByteBuffer back = ByteBuffer.allocate(data.length);
                            session.read16(lba, back);
                            assertArrayEquals(data, back.array(), "thread " + thread + " I/O " + i + " at LBA " + lba);
                        }
                        return null;
                    }));
                }
                for (Future<?> f : results) {
                    f.get();
                }
                assertTrue(session.peakCommandsInFlight() > 1, "commands overlapped: " + session.peakCommandsInFlight());
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    void senseDataBecomesAnExceptionWithKeyAndAsc() throws Exception {
        try (IscsiInitiator session = IscsiInitiator.login(url(OPEN, 3), InitiatorOptions.defaults())) {
            ScsiCommandException e = assertThrows(ScsiCommandException.class,
                    () -> session.read16(session.capacity().blocks(), ByteBuffer.allocate(512)));
            assertEquals(ScsiCommandException.CHECK_CONDITION, e.status());
            assertEquals(0x5, e.senseKey(), "ILLEGAL REQUEST");
            assertEquals(0x21, e.asc(), "LOGICAL BLOCK ADDRESS OUT OF RANGE");
            assertTrue(e.getMessage().contains("ILLEGAL REQUEST"), e.getMessage());
            session.testUnitReady(); // the session survives a failed command
        }
    }

    @Test
    void idleSessionsAnswerTheTargetsNopInPings() throws Exception {
        try (IscsiInitiator session = IscsiInitiator.login(url(OPEN, 3), InitiatorOptions.defaults())) {
            Thread.sleep(3500); // three pings at the 1 s interval; unanswered, the target would drop us
            assertTrue(session.isConnected());
            session.testUnitReady();
        }
    }

    @Test
    void chapLoginWithTheRightSecretAndAClearFailureWithAWrongOne() throws Exception {
        IscsiUrl good = IscsiUrl.parse("iscsi://soak-user%soak-secret-0001@127.0.0.1:" + port + "/" + GUARDED + "/0");
        try (IscsiInitiator session = IscsiInitiator.login(good, InitiatorOptions.defaults())) {
            assertEquals(4 << 20, session.capacity().bytes());
        }
        IscsiUrl bad = IscsiUrl.parse("iscsi://soak-user%wrong-secret-01@127.0.0.1:" + port + "/" + GUARDED + "/0");
        IscsiLoginException e = assertThrows(IscsiLoginException.class,
                () -> IscsiInitiator.login(bad, InitiatorOptions.defaults()));
        assertEquals(2, e.statusClass(), e.getMessage());
        assertEquals(1, e.statusDetail(), e.getMessage());
        assertTrue(e.getMessage().contains("authentication failed") && e.getMessage().contains("CHAP"), e.getMessage());
        assertFalse(e.getMessage().contains("wrong-secret"), "the secret never appears in messages");
        IscsiLoginException none = assertThrows(IscsiLoginException.class,
                () -> IscsiInitiator.login(url(GUARDED, 0), InitiatorOptions.defaults()));
        assertEquals(2, none.statusClass(), "no CHAP offered to a CHAP target: " + none.getMessage());
    }

    @Test
    void urlsParseLikeLibiscsi() {
        IscsiUrl u = IscsiUrl.parse("iscsi://user%secret@[::1]:3261/iqn.2026-11.x:y/7");
        assertEquals("::1", u.host());
        assertEquals(3261, u.port());
        assertEquals("iqn.2026-11.x:y", u.targetIqn());
        assertEquals(7, u.lun());
        assertEquals("user", u.chapUser());
        assertFalse(u.toString().contains("secret"), u.toString());
        assertEquals(3260, IscsiUrl.parse("iscsi://host/iqn.2026-11.x:y/0").port());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> IscsiUrl.parse("iscsi://u%topsecret@host/iqn.2026-11.x:y"));
        assertFalse(e.getMessage().contains("topsecret"), e.getMessage());
    }
}
