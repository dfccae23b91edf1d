package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.targetserver.iscsi.RawIscsiClient.Pdu;
import io.stripestack.targetserver.scsi.LogicalUnit;
import io.stripestack.targetserver.scsi.LogicalUnitIdentity;
import io.stripestack.targetserver.scsi.ScsiTarget;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The server as an attacker on the network meets it, over real TCP with a byte-level client: a
 * tenant behind CHAP writes its data, another tenant on a target without authentication tries to
 * read it back through pooled buffers, hold the server's memory, guess the CHAP secret or break
 * login negotiation. Each test fails on a server that lets the attack through.
 */
class HostileInitiatorTest {
    static final String VICTIM_IQN = "iqn.2026-11.io.stripestack:victim";
    static final String OPEN_IQN = "iqn.2026-11.io.stripestack:open";
    static final String MUTUAL_IQN = "iqn.2026-11.io.stripestack:mutual";
    static final String CHAP_USER = "tenant";
    static final byte[] CHAP_SECRET = "tenant-secret-1".getBytes(StandardCharsets.UTF_8);
    static final int WRITE_BYTES = 256 << 10;
    static final byte VICTIM_BYTE = (byte) 0xa5;
    static final long DATA_IN_PER_SESSION = 4L << 20;

    static ExecutorService executor;
    static IscsiServer server;
    static int port;
    static MemoryBlockDevice victimDisk;
    static MemoryBlockDevice openDisk;

    @BeforeAll
    static void start() throws IOException {
        executor = Executors.newFixedThreadPool(4);
        victimDisk = new MemoryBlockDevice("victim", 16 << 20, 512);
        openDisk = new MemoryBlockDevice("open", 16 << 20, 512);
        IscsiServerSettings settings = IscsiServerSettings.builder()
                .bind(new InetSocketAddress("127.0.0.1", 0))
                .queueDepth(16)
                .dataInPerSession(DATA_IN_PER_SESSION)
                .dataInBudget(2 * DATA_IN_PER_SESSION)
                .authFailureDelay(Duration.ofMillis(200))
                .nopInInterval(Duration.ZERO)
                .build();
        server = new IscsiServer(settings, List.of(
                IscsiTargetDefinition.builder(VICTIM_IQN, target(VICTIM_IQN, victimDisk)).chap(CHAP_USER, CHAP_SECRET).build(),
                IscsiTargetDefinition.builder(OPEN_IQN, target(OPEN_IQN, openDisk)).build(),
                IscsiTargetDefinition.builder(MUTUAL_IQN, target(MUTUAL_IQN, new MemoryBlockDevice("m", 1 << 20, 512)))
                        .chap(CHAP_USER, CHAP_SECRET).mutualChap("target", "target-secret-2".getBytes(StandardCharsets.UTF_8))
                        .build()),
                executor);
        server.start();
        port = server.boundPort();
    }

    private static ScsiTarget target(String iqn, MemoryBlockDevice disk) {
        return new ScsiTarget(Map.of(0L, new LogicalUnit(disk,
                LogicalUnitIdentity.of(UUID.nameUUIDFromBytes(iqn.getBytes(StandardCharsets.UTF_8))), false)));
    }

    @AfterAll
    static void stop() {
        server.close();
        executor.shutdownNow();
    }

    // ---------------------------------------------------------------- data leak across tenants

    /** One way of sending the Data-Out of a 256 KiB write that answers its R2T (offset 0, 256 KiB). */
    interface DataOutAttack {
        void send(RawIscsiClient attacker, int tag, int ttt, byte[] pdu4k) throws IOException;
    }

    @Test
    @Timeout(60)
    void dataOutThatDoesNotCoverTheWriteNeverReachesTheLunAndNeverShowsAnotherTenantsBytes() throws Exception {
        Map<String, DataOutAttack> attacks = Map.of(
                "every PDU at offset 0", (a, tag, ttt, d) -> {
                    for (int i = 0; i < 64; i++) {
                        a.dataOut(tag, ttt, 0, i, i == 63, d);
                    }
                },
                "one PDU, F bit at 4 KiB", (a, tag, ttt, d) -> a.dataOut(tag, ttt, 0, 0, true, d),
                "a gap filled by a repeat", (a, tag, ttt, d) -> {
                    for (int i = 0; i < 64; i++) {
                        a.dataOut(tag, ttt, (i == 10 ? 9 : i) * 4096, i, i == 63, d);
                    }
                },
                "overlapping halves", (a, tag, ttt, d) -> {
                    for (int i = 0; i < 64; i++) {
                        a.dataOut(tag, ttt, Math.max(0, i * 4096 - 2048), i, i == 63, d);
                    }
                },
                "out of order", (a, tag, ttt, d) -> {
                    for (int i = 0; i < 64; i++) {
                        int block = i ^ 1;
                        a.dataOut(tag, ttt, block * 4096, i, i == 63, d);
                    }
                });
        byte[] attackerData = new byte[4096];
        Arrays.fill(attackerData, (byte) 0x41);
        for (Map.Entry<String, DataOutAttack> attack : attacks.entrySet()) {
            for (int round = 0; round < 3; round++) {
                victimWrites();
                try (RawIscsiClient attacker = new RawIscsiClient(port)) {
                    assertEquals(0, attacker.loginNormal(OPEN_IQN, "iqn.2026-11.io.attacker:a", "InitialR2T=Yes",
                            "ImmediateData=No", "MaxBurstLength=262144").loginStatus());
                    int tag = attacker.scsiCommand(RawIscsiClient.write10(0, WRITE_BYTES / 512), WRITE_BYTES, false, true,
                            false, null, true);
                    Pdu r2t = attacker.next();
                    assertEquals(0x31, r2t.opcode(), "R2T");
                    assertEquals(WRITE_BYTES, r2t.desiredLength());
                    attack.getValue().send(attacker, tag, r2t.ttt(), attackerData);
                    Pdu status = attacker.readResult(tag, 0).getValue();
                    assertNoVictimBytes(attack.getKey());
                    assertEquals(0x02, status.byte3(), attack.getKey() + ": CHECK CONDITION, not GOOD");
                    assertEquals(0x0b, status.data()[2 + 2] & 0x0f, attack.getKey() + ": ABORTED COMMAND");
                    assertEquals(0x4b, status.data()[2 + 12] & 0xff, attack.getKey() + ": DATA PHASE ERROR");
                }
            }
        }
        // the control: the same client, sending the data as negotiated, writes it
        try (RawIscsiClient honest = new RawIscsiClient(port)) {
            honest.loginNormal(OPEN_IQN, "iqn.2026-11.io.attacker:a", "InitialR2T=Yes", "ImmediateData=No",
                    "MaxBurstLength=262144");
            int tag = honest.scsiCommand(RawIscsiClient.write10(0, WRITE_BYTES / 512), WRITE_BYTES, false, true, false, null, true);
            Pdu r2t = honest.next();
            for (int i = 0; i < 64; i++) {
                honest.dataOut(tag, r2t.ttt(), i * 4096, i, i == 63, attackerData);
            }
            assertEquals(0, honest.readResult(tag, 0).getValue().byte3(), "GOOD");
        }
        ByteBuffer written = ByteBuffer.allocate(WRITE_BYTES);
        openDisk.read(0, written);
        byte[] expected = new byte[WRITE_BYTES];
        Arrays.fill(expected, (byte) 0x41);
        assertArrayEquals(expected, written.array());
        openDisk.write(0, ByteBuffer.allocate(WRITE_BYTES));
    }

    /** The CHAP tenant writes 256 KiB of its bytes as immediate data: the buffer goes back to the pool. */
    private static void victimWrites() throws IOException {
        try (RawIscsiClient victim = new RawIscsiClient(port)) {
            Pdu login = victim.loginChap(VICTIM_IQN, "iqn.2026-11.io.tenant:v", CHAP_USER, CHAP_SECRET);
            assertEquals(0, login.loginStatus(), "victim CHAP login");
            Pdu full = victim.login(1, true, 3, RawIscsiClient.text("InitialR2T=No", "ImmediateData=Yes",
                    "FirstBurstLength=262144", "MaxBurstLength=262144"));
            assertEquals(0, full.loginStatus());
            victim.takeUnitAttention();
            byte[] secret = new byte[WRITE_BYTES];
            Arrays.fill(secret, VICTIM_BYTE);
            int tag = victim.scsiCommand(RawIscsiClient.write10(0, WRITE_BYTES / 512), WRITE_BYTES, false, true, false,
                    secret, true);
            assertEquals(0, victim.readResult(tag, 0).getValue().byte3(), "victim write GOOD");
        }
    }

    private static void assertNoVictimBytes(String attack) throws IOException {
        ByteBuffer medium = ByteBuffer.allocate(1 << 20);
        openDisk.read(0, medium);
        for (int i = 0; i < medium.capacity(); i++) {
            if (medium.get(i) == VICTIM_BYTE) {
                throw new AssertionError(attack + ": the victim's bytes reached the open target's LUN at byte " + i);
            }
        }
        for (int i = 0; i < medium.capacity(); i++) {
            if (medium.get(i) != 0) {
                throw new AssertionError(attack + ": the open target's LUN changed at byte " + i + " (0x"
                        + Integer.toHexString(medium.get(i) & 0xff) + ")");
            }
        }
    }

    // ---------------------------------------------------------------- resource bounds

    @Test
    @Timeout(60)
    void immediateReadsOfAReaderThatNeverReadsHoldNoMoreThanItsShareAndOthersAreServed() throws Exception {
        long before = server.dataInStats().peakBytesHeld();
        try (RawIscsiClient hog = new RawIscsiClient(port, 4096)) {
            assertEquals(0, hog.loginNormal(OPEN_IQN, "iqn.2026-11.io.attacker:hog").loginStatus());
            ExecutorService sender = Executors.newSingleThreadExecutor();
            Future<?> flood = sender.submit(() -> {
                for (int i = 0; i < 1500; i++) {
                    hog.scsiCommand(RawIscsiClient.read10(0, 2048), 1 << 20, true, false, true, null, true);
                }
                return null;
            });
            Thread.sleep(1000);
            DataInStats during = server.dataInStats();
            assertTrue(during.bytesHeld() <= DATA_IN_PER_SESSION, "held " + during.bytesHeld());
            assertTrue(during.readsWaited() > 0, "reads beyond the share waited");
            // another session is served meanwhile, and promptly
            try (RawIscsiClient other = new RawIscsiClient(port)) {
                other.loginNormal(OPEN_IQN, "iqn.2026-11.io.tenant:reader");
                long start = System.nanoTime();
                int tag = other.scsiCommand(RawIscsiClient.read10(0, 8), 4096, true, false, false, null, true);
                assertEquals(0, other.readResult(tag, 4096).getValue().byte3());
                assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(2), "another session's read waited");
            }
            flood.cancel(true);
            sender.shutdownNow();
        }
        DataInStats stats = server.dataInStats();
        assertTrue(Math.max(before, stats.peakBytesHeld()) <= 2 * DATA_IN_PER_SESSION, "peak " + stats.peakBytesHeld());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (server.dataInStats().bytesHeld() != 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(0, server.dataInStats().bytesHeld(), "the closed session's Data-In returned to the budget");
    }

    @Test
    @Timeout(30)
    void immediateCommandsBeyondTheQueueDepthAreAnsweredTaskSetFull() throws Exception {
        try (RawIscsiClient client = new RawIscsiClient(port)) {
            client.loginNormal(OPEN_IQN, "iqn.2026-11.io.attacker:imm", "InitialR2T=Yes", "ImmediateData=No");
            // writes that wait for their data stay tasks: 16 of them fill the immediate allowance
            for (int i = 0; i < 16; i++) {
                client.scsiCommand(RawIscsiClient.write10(i, 1), 512, false, true, true, null, true);
                assertEquals(0x31, client.next().opcode(), "R2T");
            }
            int refused = client.scsiCommand(RawIscsiClient.write10(100, 1), 512, false, true, true, null, true);
            Pdu answer = client.next();
            assertEquals(0x21, answer.opcode(), "SCSI Response");
            assertEquals(refused, answer.itt());
            assertEquals(0x28, answer.byte3(), "TASK SET FULL");
        }
    }

    // ---------------------------------------------------------------- CHAP guessing

    // A failure's penalty lasts until its address is quiet (a success does not clear it): each test that fails CHAP
    // logins does so from an address of its own, so that no other test's logins wait for it.

    @Test
    @Timeout(60)
    void chapGuessesAreSlowedPerInitiatorAndPerAddressWhateverTheConnections() throws Exception {
        byte[] wrong = "guess".getBytes(StandardCharsets.UTF_8);
        String initiator = "iqn.2026-11.io.attacker:guesser";
        long start = System.nanoTime();
        for (int i = 0; i < 4; i++) {
            try (RawIscsiClient guesser = new RawIscsiClient("127.0.0.21", port, 0)) {
                assertEquals(0x0201, guesser.loginChap(VICTIM_IQN, initiator, CHAP_USER, wrong).loginStatus());
            }
        }
        long sequential = System.nanoTime() - start;
        assertTrue(sequential >= TimeUnit.MILLISECONDS.toNanos(200 + 400 + 800),
                "4 guesses took only " + sequential / 1_000_000 + " ms");
        // the right secret still logs in from that address, once its penalty has passed
        try (RawIscsiClient owner = new RawIscsiClient("127.0.0.21", port, 0)) {
            assertEquals(0, owner.loginChap(VICTIM_IQN, initiator, CHAP_USER, CHAP_SECRET).loginStatus());
        }
        // parallel guesses under fresh names from one (other) address are serialized by the address
        ExecutorService parallel = Executors.newFixedThreadPool(4);
        try {
            long parallelStart = System.nanoTime();
            List<Future<Integer>> statuses = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                String name = "iqn.2026-11.io.attacker:parallel-" + i;
                statuses.add(parallel.submit(() -> {
                    try (RawIscsiClient guesser = new RawIscsiClient("127.0.0.22", port, 0)) {
                        guesser.socket.setSoTimeout(30_000);
                        return guesser.loginChap(VICTIM_IQN, name, CHAP_USER, wrong).loginStatus();
                    }
                }));
            }
            for (Future<Integer> status : statuses) {
                assertEquals(0x0201, status.get());
            }
            long elapsed = System.nanoTime() - parallelStart;
            assertTrue(elapsed >= TimeUnit.MILLISECONDS.toNanos(200 + 400 + 800),
                    "4 parallel guesses took only " + elapsed / 1_000_000 + " ms");
        } finally {
            parallel.shutdownNow();
        }
    }

    // ---------------------------------------------------------------- login hardening

    @Test
    void aKeyDeclaredTwiceInOneLoginIsANegotiationError() throws Exception {
        for (String key : List.of("TargetName=" + OPEN_IQN, "InitiatorName=iqn.2026-11.io.attacker:dup",
                "MaxRecvDataSegmentLength=8192", "MaxBurstLength=262144")) {
            try (RawIscsiClient client = new RawIscsiClient(port)) {
                Pdu answer = client.login(1, true, 3, RawIscsiClient.text("InitiatorName=iqn.2026-11.io.attacker:dup",
                        "TargetName=" + OPEN_IQN, "SessionType=Normal", "MaxRecvDataSegmentLength=8192",
                        "MaxBurstLength=262144", key));
                assertEquals(0x0200, answer.loginStatus(), key);
            }
        }
        try (RawIscsiClient client = new RawIscsiClient(port)) {
            Pdu first = client.login(1, false, 0, RawIscsiClient.text("InitiatorName=iqn.2026-11.io.attacker:dup",
                    "TargetName=" + OPEN_IQN, "MaxBurstLength=262144"));
            assertEquals(0, first.loginStatus());
            Pdu again = client.login(1, true, 3, RawIscsiClient.text("MaxBurstLength=65536"));
            assertEquals(0x0200, again.loginStatus(), "the same key in a later request of the login");
        }
    }

    @Test
    void namesLongerThan223BytesAreRefused() throws Exception {
        String longName = "iqn.2026-11.io.attacker:" + "x".repeat(8000);
        try (RawIscsiClient client = new RawIscsiClient(port)) {
            assertEquals(0x0200, client.loginNormal(OPEN_IQN, longName).loginStatus());
        }
        try (RawIscsiClient client = new RawIscsiClient(port)) {
            assertEquals(0x0200, client.loginNormal(OPEN_IQN + "x".repeat(300), "iqn.2026-11.io.attacker:n").loginStatus());
        }
    }

    @Test
    void aLoginWhoseAnswerWouldExceed8192BytesIsRefusedWithinTheLimit() throws Exception {
        String[] pairs = new String[2 + 500];
        pairs[0] = "InitiatorName=iqn.2026-11.io.attacker:keys";
        pairs[1] = "TargetName=" + OPEN_IQN;
        for (int i = 0; i < 500; i++) {
            pairs[2 + i] = String.format("Unknown%04d=1", i);
        }
        byte[] request = RawIscsiClient.text(pairs);
        assertTrue(request.length <= 8192);
        try (RawIscsiClient client = new RawIscsiClient(port)) {
            Pdu answer = client.login(1, true, 3, request);
            assertEquals(0x0200, answer.loginStatus());
            assertTrue(answer.data().length <= 8192, "answer of " + answer.data().length + " bytes");
        }
    }

    @Test
    void malformedChapResponsesAndShortMutualChallengesAreAuthenticationFailures() throws Exception {
        for (String response : List.of("CHAP_R=0xZZ", "CHAP_R=0x" + "ab".repeat(5000))) {
            try (RawIscsiClient client = new RawIscsiClient("127.0.0.23", port, 0)) {
                client.socket.setSoTimeout(30_000);
                client.login(0, false, 0, RawIscsiClient.text("InitiatorName=iqn.2026-11.io.attacker:malformed",
                        "TargetName=" + VICTIM_IQN, "SessionType=Normal", "AuthMethod=CHAP"));
                client.login(0, false, 0, RawIscsiClient.text("CHAP_A=5"));
                Pdu answer = client.login(0, true, 1, RawIscsiClient.text("CHAP_N=" + CHAP_USER, response));
                assertEquals(0x0201, answer.loginStatus(), response.substring(0, Math.min(12, response.length())));
            }
        }
        try (RawIscsiClient client = new RawIscsiClient("127.0.0.23", port, 0)) {
            client.socket.setSoTimeout(30_000);
            client.login(0, false, 0, RawIscsiClient.text("InitiatorName=iqn.2026-11.io.tenant:mutual",
                    "TargetName=" + MUTUAL_IQN, "SessionType=Normal", "AuthMethod=CHAP"));
            Pdu challenge = client.login(0, false, 0, RawIscsiClient.text("CHAP_A=5"));
            int id = Integer.parseInt(challenge.keys().get("CHAP_I"));
            byte[] c = java.util.HexFormat.of().parseHex(challenge.keys().get("CHAP_C").substring(2));
            String right = java.util.HexFormat.of().formatHex(RawIscsiClient.chapResponse(id, CHAP_SECRET, c));
            Pdu answer = client.login(0, true, 1, RawIscsiClient.text("CHAP_N=" + CHAP_USER, "CHAP_R=0x" + right,
                    "CHAP_I=7", "CHAP_C=0x01"));
            assertEquals(0x0201, answer.loginStatus(), "a 1-byte mutual challenge");
            assertFalse(answer.keys().containsKey("CHAP_R"), "no answer to the short challenge");
        }
    }

    // ---------------------------------------------------------------- connection noise

    @Test
    @Timeout(60)
    void resetConnectionsDoNotFloodTheLog() throws Exception {
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            for (int i = 0; i < 300; i++) {
                try (Socket s = new Socket("127.0.0.1", port)) {
                    s.getOutputStream().write(new byte[20]); // half a header: the server has something to read
                    s.setSoLinger(true, 0); // close with a reset
                }
            }
            Thread.sleep(500);
        } finally {
            System.setErr(original);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        long warnings = log.lines().filter(l -> l.contains("WARN")).count();
        assertTrue(warnings <= 3, warnings + " WARN lines for 300 resets:\n" + log.lines().limit(5).toList());
        // the server still serves
        try (RawIscsiClient client = new RawIscsiClient(port)) {
            assertEquals(0, client.loginNormal(OPEN_IQN, "iqn.2026-11.io.tenant:after-resets").loginStatus());
        }
    }
}
