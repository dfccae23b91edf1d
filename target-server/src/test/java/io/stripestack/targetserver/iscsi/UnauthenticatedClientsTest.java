package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.targetserver.config.ServerDefaults;
import io.stripestack.targetserver.iscsi.RawIscsiClient.Pdu;
import io.stripestack.targetserver.scsi.LogicalUnit;
import io.stripestack.targetserver.scsi.LogicalUnitIdentity;
import io.stripestack.targetserver.scsi.ScsiTarget;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Clients that never authenticate try to keep a CHAP tenant from being served, over real TCP: they hold
 * connection slots, guess under the tenant's initiator name, and back their guesses with logins of their own.
 * Attackers connect from other loopback addresses (127.0.0.2 and up) than the tenant (127.0.0.1), as other
 * hosts would. Each test fails on a server that lets the attack through.
 */
class UnauthenticatedClientsTest {
    static final String VICTIM_IQN = "iqn.2026-11.io.stripestack:victim";
    static final String OWN_IQN = "iqn.2026-11.io.stripestack:attackers-own";
    static final String OPEN_IQN = "iqn.2026-11.io.stripestack:open";
    static final String TENANT = "iqn.2026-11.io.tenant:good";
    static final String CHAP_USER = "tenant";
    static final byte[] CHAP_SECRET = "tenant-secret-1".getBytes(StandardCharsets.UTF_8);
    static final String OWN_USER = "attacker";
    static final byte[] OWN_SECRET = "attacker-secret".getBytes(StandardCharsets.UTF_8);
    static final byte[] WRONG = "a wrong guess".getBytes(StandardCharsets.UTF_8);
    static final String TENANT_ADDRESS = "127.0.0.1";

    private ExecutorService ioExecutor;
    private IscsiServer server;
    private int port;
    private final List<AutoCloseable> held = new ArrayList<>();

    private void start(IscsiServerSettings.Builder settings) throws IOException {
        ioExecutor = Executors.newFixedThreadPool(4);
        server = new IscsiServer(settings.bind(new InetSocketAddress(TENANT_ADDRESS, 0)).build(), List.of(
                IscsiTargetDefinition.builder(VICTIM_IQN, target(VICTIM_IQN)).chap(CHAP_USER, CHAP_SECRET).build(),
                IscsiTargetDefinition.builder(OWN_IQN, target(OWN_IQN)).chap(OWN_USER, OWN_SECRET).build(),
                IscsiTargetDefinition.builder(OPEN_IQN, target(OPEN_IQN)).build()),
                ioExecutor);
        server.start();
        port = server.boundPort();
    }

    private static ScsiTarget target(String iqn) {
        return new ScsiTarget(Map.of(0L, new LogicalUnit(new MemoryBlockDevice(iqn, 16 << 20, 512),
                LogicalUnitIdentity.of(UUID.nameUUIDFromBytes(iqn.getBytes(StandardCharsets.UTF_8))), false)));
    }

    private static IscsiServerSettings.Builder settings() {
        return IscsiServerSettings.builder().nopInInterval(Duration.ZERO);
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : held) {
            c.close();
        }
        held.clear();
        if (server != null) {
            server.close();
        }
        if (ioExecutor != null) {
            ioExecutor.shutdownNow();
        }
    }

    /** The n-th attacking host: 127.0.0.2 and up. */
    private static String attacker(int n) {
        return "127.0.0." + (2 + n);
    }

    /**
     * The tenant logs in with CHAP from its own address, reaches the full feature phase and runs a command;
     * returns the failed login's status, or -1 when the target closed the connection before answering.
     */
    private int tenantLogsIn() throws IOException {
        try (RawIscsiClient tenant = new RawIscsiClient(TENANT_ADDRESS, port, 0)) {
            tenant.socket.setSoTimeout(60_000);
            Pdu chap = tenant.loginChap(VICTIM_IQN, TENANT, CHAP_USER, CHAP_SECRET);
            if (chap.loginStatus() != 0) {
                return chap.loginStatus();
            }
            Pdu full = tenant.login(1, true, 3, RawIscsiClient.text("InitialR2T=Yes", "ImmediateData=No"));
            if (full.loginStatus() != 0) {
                return full.loginStatus();
            }
            tenant.takeUnitAttention();
            return 0;
        } catch (java.io.EOFException | java.net.SocketException e) {
            return -1;
        }
    }

    /** A CHAP login's status, or -1 when the target closed the connection before answering it. */
    private int chapLogin(String from, String target, String initiator, String user, byte[] secret) throws IOException {
        try (RawIscsiClient client = new RawIscsiClient(from, port, 0)) {
            client.socket.setSoTimeout(120_000);
            return client.loginChap(target, initiator, user, secret).loginStatus();
        } catch (java.io.EOFException | java.net.SocketException e) {
            return -1;
        }
    }

    private void awaitConnections(int atLeast) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (server.connectionCount() < atLeast && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        // the server's event loops take the last ones in: let them, so the tenant comes after the attack
        Thread.sleep(300);
    }

    // ---------------------------------------------------------------- connection slots

    @Test
    @Timeout(120)
    void idleConnectionsFromOneAddressDoNotTakeTheTenantsSlot() throws Exception {
        start(settings());
        for (int i = 0; i < ServerDefaults.MAX_CONNECTIONS; i++) {
            Socket idle = new Socket();
            idle.bind(new InetSocketAddress(attacker(0), 0));
            idle.connect(new InetSocketAddress(TENANT_ADDRESS, port), 5000);
            held.add(idle);
        }
        awaitConnections(ServerDefaults.MAX_CONNECTIONS_PER_ADDRESS);
        for (int i = 0; i < 5; i++) {
            assertEquals(0, tenantLogsIn(), "tenant login " + i + " while one address holds idle connections");
        }
    }

    @Test
    @Timeout(120)
    void idleConnectionsFromManyAddressesMakeRoomForTheTenant() throws Exception {
        start(settings().maxConnections(64).maxConnectionsPerAddress(16));
        for (int i = 0; i < 64; i++) {
            Socket idle = new Socket();
            idle.bind(new InetSocketAddress(attacker(i % 4), 0));
            idle.connect(new InetSocketAddress(TENANT_ADDRESS, port), 5000);
            held.add(idle);
        }
        awaitConnections(64);
        for (int i = 0; i < 5; i++) {
            assertEquals(0, tenantLogsIn(), "tenant login " + i + " while every slot is held by idle connections");
        }
    }

    @Test
    @Timeout(120)
    void discoverySessionsThatStayAliveMakeRoomForTheTenant() throws Exception {
        start(settings().maxConnections(64).maxConnectionsPerAddress(16));
        for (int i = 0; i < 64; i++) {
            RawIscsiClient discovery = new RawIscsiClient(attacker(i % 4), port, 0);
            held.add(discovery);
            Pdu answer = discovery.login(1, true, 3, RawIscsiClient.text("InitiatorName=iqn.2026-11.io.attacker:d" + i,
                    "SessionType=Discovery"));
            assertEquals(0, answer.loginStatus(), "discovery login " + i);
        }
        for (int i = 0; i < 5; i++) {
            assertEquals(0, tenantLogsIn(), "tenant login " + i + " while discovery sessions hold every slot");
        }
    }

    @Test
    @Timeout(60)
    void oneInitiatorNameHoldsAtMostItsSessions() throws Exception {
        start(settings().maxSessionsPerInitiator(2));
        for (int i = 0; i < 2; i++) {
            RawIscsiClient session = new RawIscsiClient(attacker(i), port, 0);
            held.add(session);
            session.isid = RawIscsiClient.ISID + i;
            assertEquals(0, session.loginNormal(OPEN_IQN, "iqn.2026-11.io.attacker:one-name").loginStatus());
        }
        try (RawIscsiClient third = new RawIscsiClient(attacker(2), port, 0)) {
            third.isid = RawIscsiClient.ISID + 2;
            assertEquals(0x0302, third.loginNormal(OPEN_IQN, "iqn.2026-11.io.attacker:one-name").loginStatus(),
                    "out of resources");
        }
        // reinstating a session it holds (same ISID) is not one more
        try (RawIscsiClient again = new RawIscsiClient(attacker(2), port, 0)) {
            again.isid = RawIscsiClient.ISID + 1;
            assertEquals(0, again.loginNormal(OPEN_IQN, "iqn.2026-11.io.attacker:one-name").loginStatus(),
                    "session reinstatement");
        }
        assertEquals(0, tenantLogsIn());
    }

    @Test
    @Timeout(60)
    void aConnectionSilentWhileLoggingInIsClosedLongBeforeTheLoginTimeout() throws Exception {
        start(settings().loginIdleTimeout(Duration.ofSeconds(1)).loginTimeout(Duration.ofSeconds(50)));
        try (RawIscsiClient silent = new RawIscsiClient(attacker(0), port, 0)) {
            silent.socket.setSoTimeout(30_000);
            assertTrue(silent.closedByTarget(), "closed within 30 s, with a login timeout of 50 s");
        }
    }

    // ---------------------------------------------------------------- CHAP penalties

    @Test
    @Timeout(180)
    void guessesUnderTheTenantsNameFromAnotherAddressNeverKeepTheRightSecretOut() throws Exception {
        start(settings().authFailureDelay(Duration.ofSeconds(60)).loginTimeout(Duration.ofSeconds(10)));
        assertEquals(0x0201, chapLogin(attacker(0), VICTIM_IQN, TENANT, CHAP_USER, WRONG));
        // the attacker keeps guessing under the tenant's name meanwhile, from several addresses
        AtomicBoolean attacking = new AtomicBoolean(true);
        ExecutorService guessers = Executors.newFixedThreadPool(2);
        List<Future<?>> guesses = new ArrayList<>();
        for (int a = 0; a < 2; a++) {
            String from = attacker(a);
            guesses.add(guessers.submit(() -> {
                while (attacking.get()) {
                    chapLogin(from, VICTIM_IQN, TENANT, CHAP_USER, WRONG);
                }
                return null;
            }));
        }
        try {
            for (int i = 0; i < 3; i++) {
                assertEquals(0, tenantLogsIn(), "tenant login " + i + " with the right secret");
            }
        } finally {
            attacking.set(false);
            stop();
            guessers.shutdown();
            assertTrue(guessers.awaitTermination(60, TimeUnit.SECONDS));
        }
    }

    @Test
    @Timeout(180)
    void aSuccessBetweenGuessesDoesNotResetTheAddressPenalty() throws Exception {
        start(settings().authFailureDelay(Duration.ofSeconds(1)).loginTimeout(Duration.ofSeconds(6)));
        String from = attacker(0);
        boolean slowedPastTheLoginTimer = false;
        for (int round = 0; round < 6 && !slowedPastTheLoginTimer; round++) {
            // a fresh name per guess, and its own valid login between guesses, as the attacker did
            int guess = chapLogin(from, VICTIM_IQN, "iqn.2026-11.io.attacker:g" + round, CHAP_USER, WRONG);
            if (guess == -1) {
                slowedPastTheLoginTimer = true;
                break;
            }
            assertEquals(0x0201, guess);
            int own = chapLogin(from, OWN_IQN, "iqn.2026-11.io.attacker:own", OWN_USER, OWN_SECRET);
            if (own == -1) {
                slowedPastTheLoginTimer = true;
            } else {
                assertEquals(0, own, "the attacker's own login");
            }
        }
        assertTrue(slowedPastTheLoginTimer, "the address's penalty kept doubling across its successes until its"
                + " logins waited past the login timer");
    }

    // ---------------------------------------------------------------- stalled unsolicited writes

    /** Logs in to the open target from {@code from}; sends writes of {@code bytes} that announce unsolicited data. */
    private RawIscsiClient stallingWriter(String from, int writes, int bytes) throws IOException {
        RawIscsiClient attacker = new RawIscsiClient(from, port, 0);
        held.add(attacker);
        assertEquals(0, attacker.loginNormal(OPEN_IQN, "iqn.2026-11.io.attacker:stall-" + from, "InitialR2T=No",
                "ImmediateData=Yes", "FirstBurstLength=262144", "MaxBurstLength=1048576").loginStatus());
        for (int i = 0; i < writes; i++) {
            int blocks = bytes / 512;
            byte[] cdb = RawIscsiClient.write10((long) i * blocks, blocks);
            attacker.scsiCommand(cdb, bytes, false, true, false, null, false); // F=0 and no data: none ever comes
        }
        return attacker;
    }

    private void awaitWriteBuffersInUse(long atLeast) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (server.writeBufferStats().bytesInUse() < atLeast && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertTrue(server.writeBufferStats().bytesInUse() >= atLeast, server.writeBufferStats().toString());
    }

    /** A client without authentication writes 64 KiB through R2T and reads the status; returns it. */
    private int goodClientWrites(String target) throws IOException {
        try (RawIscsiClient good = new RawIscsiClient(TENANT_ADDRESS, port, 0)) {
            good.socket.setSoTimeout(30_000);
            assertEquals(0, good.loginNormal(target, "iqn.2026-11.io.tenant:writer", "InitialR2T=Yes",
                    "ImmediateData=No").loginStatus());
            int bytes = 64 << 10;
            int tag = good.scsiCommand(RawIscsiClient.write10(0, bytes / 512), bytes, false, true, false, null, true);
            Pdu r2t = good.next();
            assertEquals(0x31, r2t.opcode(), "R2T for the good client's write");
            good.dataOut(tag, r2t.ttt(), 0, 0, true, new byte[bytes]);
            return good.readResult(tag, 0).getValue().byte3();
        }
    }

    @Test
    @Timeout(120)
    void stalledUnsolicitedWritesHoldNoMoreThanTheirSessionsShares() throws Exception {
        start(settings().writeBufferBudget(16 << 20).writeBufferPerSession(4 << 20));
        for (int a = 0; a < 3; a++) {
            stallingWriter(attacker(a), 16, 4 << 20);
        }
        awaitWriteBuffersInUse(12 << 20);
        assertEquals(0, goodClientWrites(OPEN_IQN), "GOOD");
        // each attacker: one 4 MiB write in its share, unsolicited data up to a quarter of it; then the good write
        assertTrue(server.writeBufferStats().peakBytesInUse() <= 3 * (5 << 20) + (64 << 10),
                "three shares and the good write at most: " + server.writeBufferStats());
    }

    @Test
    @Timeout(120)
    void aWriteWhoseUnsolicitedDataNeverComesClosesItsConnection() throws Exception {
        start(settings().writeBufferBudget(16 << 20).nopInInterval(Duration.ofSeconds(1)));
        RawIscsiClient attacker = stallingWriter(attacker(0), 2, 4 << 20);
        boolean closed = false;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        attacker.socket.setSoTimeout(1000);
        while (!closed && System.nanoTime() < deadline) {
            try {
                Pdu pdu = attacker.nextOrNull();
                if (pdu == null) {
                    closed = true;
                } else if (pdu.opcode() == 0x20) {
                    attacker.answerNopIn(pdu); // alive: only the stalled write may end it
                }
            } catch (java.net.SocketTimeoutException e) {
                // nothing yet
            }
        }
        assertTrue(closed, "the connection of a write whose data never comes is closed");
        long budgetDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (server.writeBufferStats().bytesInUse() != 0 && System.nanoTime() < budgetDeadline) {
            Thread.sleep(20);
        }
        assertEquals(0, server.writeBufferStats().bytesInUse(), "its buffers returned");
        assertEquals(0, goodClientWrites(OPEN_IQN), "GOOD");
    }

    // ---------------------------------------------------------------- EXTENDED COPY

    /** Counts the reads of at least 1 MiB under way at once (only copies read that much here) and their peak. */
    static final class CopyWatch extends io.stripestack.blockdev.ForwardingBlockDevice {
        final java.util.concurrent.atomic.AtomicInteger reading = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicInteger peak = new java.util.concurrent.atomic.AtomicInteger();

        CopyWatch(io.stripestack.blockdev.BlockDevice below) {
            super(below);
        }

        @Override
        public void read(long offset, java.nio.ByteBuffer dst) throws IOException {
            boolean large = dst.remaining() >= 1 << 20;
            if (large) {
                peak.accumulateAndGet(reading.incrementAndGet(), Math::max);
            }
            try {
                super.read(offset, dst);
            } finally {
                if (large) {
                    reading.decrementAndGet();
                }
            }
        }
    }

    /** EXTENDED COPY(LID1) of {@code segments} segments of 65,535 blocks within the unit {@code naa} names. */
    private static byte[] floodCopy(byte[] naa, int segments) {
        java.nio.ByteBuffer list = java.nio.ByteBuffer.allocate(16 + 32 + 28 * segments);
        list.put(1, (byte) (3 << 3));                 // LIST ID USAGE 11b: no list identifier
        list.putShort(2, (short) 32);                 // one target descriptor
        list.putInt(8, 28 * segments);
        list.put(16, (byte) 0xE4).put(20, (byte) 0x01).put(21, (byte) 0x03).put(23, (byte) naa.length);
        list.put(24, naa);
        list.put(16 + 30, (byte) 0x02);               // DISK BLOCK LENGTH 512
        for (int i = 0; i < segments; i++) {
            int at = 48 + 28 * i;
            list.put(at, (byte) 0x02).putShort(at + 2, (short) 24).putShort(at + 10, (short) 0xFFFF)
                    .putLong(at + 12, 0).putLong(at + 20, 65536);
        }
        return list.array();
    }

    private static byte[] cdb(int... bytes) {
        byte[] c = new byte[16];
        for (int i = 0; i < bytes.length; i++) {
            c[i] = (byte) bytes[i];
        }
        return c;
    }

    static final String COPY_IQN = "iqn.2026-11.io.stripestack:copies";
    static final LogicalUnitIdentity COPY_IDENTITY =
            LogicalUnitIdentity.of(UUID.nameUUIDFromBytes(COPY_IQN.getBytes(StandardCharsets.UTF_8)));

    /** A target without authentication over one 64 MiB unit whose copy reads are watched, 4 I/O workers. */
    private CopyWatch startCopyTarget() throws IOException {
        CopyWatch disk = new CopyWatch(new MemoryBlockDevice("copies", 64 << 20, 512));
        ioExecutor = Executors.newFixedThreadPool(4);
        server = new IscsiServer(settings().bind(new InetSocketAddress(TENANT_ADDRESS, 0)).build(), List.of(
                IscsiTargetDefinition.builder(COPY_IQN,
                        new ScsiTarget(Map.of(0L, new LogicalUnit(disk, COPY_IDENTITY, false)))).build()), ioExecutor);
        server.start();
        port = server.boundPort();
        return disk;
    }

    /** Sends {@code copies} EXTENDED COPY commands of {@code segments} segments each; returns their ITTs in order. */
    private static List<Integer> sendCopies(RawIscsiClient client, int copies, int segments) throws IOException {
        byte[] list = floodCopy(COPY_IDENTITY.naa(), segments);
        byte[] xcopy = cdb(0x83, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, list.length >>> 8, list.length);
        List<Integer> tags = new ArrayList<>();
        for (int i = 0; i < copies; i++) {
            tags.add(client.scsiCommand(xcopy, list.length, false, true, false, list, true));
        }
        return tags;
    }

    @Test
    @Timeout(300)
    void aSessionsCopyWaitsForOneCopyOfAnotherSessionsQueueNotForAllOfIt() throws Exception {
        startCopyTarget();
        RawIscsiClient flooder = new RawIscsiClient(attacker(0), port, 0);
        held.add(flooder);
        flooder.socket.setSoTimeout(0);
        flooder.loginNormal(COPY_IQN, "iqn.2026-11.io.attacker:copier");
        java.util.concurrent.atomic.AtomicInteger flooderAnswered = new java.util.concurrent.atomic.AtomicInteger();
        ExecutorService reader = Executors.newSingleThreadExecutor();
        try {
            reader.submit(() -> {
                while (flooder.nextOrNull() != null) {
                    flooderAnswered.incrementAndGet();
                }
                return null;
            });
            int flood = 64;
            sendCopies(flooder, flood, 16);
            // the first copy answered: the server has taken every one of them in
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (flooderAnswered.get() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            try (RawIscsiClient tenant = new RawIscsiClient(TENANT_ADDRESS, port, 0)) {
                tenant.socket.setSoTimeout(240_000);
                tenant.loginNormal(COPY_IQN, "iqn.2026-11.io.tenant:copier");
                int tag = sendCopies(tenant, 1, 4).get(0);
                assertEquals(0, tenant.readResult(tag, 0).getValue().byte3(), "the tenant's copy GOOD");
            }
            int before = flooderAnswered.get();
            assertTrue(before < flood / 2,
                    before + " of the other session's " + flood + " copies ran before the tenant's");
        } finally {
            flooder.close();
            reader.shutdownNow();
        }
    }

    @Test
    @Timeout(300)
    void extendedCopyFloodsRunWithinTheAdvertisedLimitsAndOtherSessionsAreServed() throws Exception {
        CopyWatch disk = startCopyTarget();

        // what the copy manager advertises: the Third-party Copy VPD page and RECEIVE COPY OPERATING PARAMETERS
        int advertised;
        try (RawIscsiClient probe = new RawIscsiClient(TENANT_ADDRESS, port, 0)) {
            probe.loginNormal(COPY_IQN, "iqn.2026-11.io.tenant:probe");
            int vpd = probe.scsiCommand(cdb(0x12, 0x01, 0x8F, 0x04, 0x00, 0), 1024, true, false, false, null, true);
            java.nio.ByteBuffer page = java.nio.ByteBuffer.wrap(probe.readResult(vpd, 1024).getKey());
            int at = 4;
            advertised = -1;
            while (at + 4 <= 4 + page.getShort(2)) {
                int type = page.getShort(at) & 0xffff;
                if (type == 0x8001) {           // General Copy Operations: TOTAL CONCURRENT COPIES
                    advertised = page.getInt(at + 4);
                }
                at += 4 + (page.getShort(at + 2) & 0xffff);
            }
            byte[] receiveCopyOperatingParameters = cdb(0x84, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64);
            int parameters = probe.scsiCommand(receiveCopyOperatingParameters, 64 << 8, true, false, false, null, true);
            java.nio.ByteBuffer operating = java.nio.ByteBuffer.wrap(probe.readResult(parameters, 64 << 8).getKey());
            assertEquals(advertised, operating.getShort(34) & 0xffff, "RECEIVE COPY OPERATING PARAMETERS agrees");
        }
        assertTrue(advertised > 0 && advertised < 4, "a bound below the I/O workers, advertised: " + advertised);

        // one session without authentication asks for 64 copies of 16 x 65,535 blocks
        int flood = 64;
        java.util.concurrent.atomic.AtomicInteger copiesAnswered = new java.util.concurrent.atomic.AtomicInteger();
        RawIscsiClient attacker = new RawIscsiClient(attacker(0), port, 0);
        held.add(attacker);
        attacker.socket.setSoTimeout(0);
        attacker.loginNormal(COPY_IQN, "iqn.2026-11.io.attacker:copier");
        ExecutorService reader = Executors.newSingleThreadExecutor();
        try {
            Future<Integer> answeredBeforeLogout = reader.submit(() -> {
                for (Pdu answer; (answer = attacker.nextOrNull()) != null; ) {
                    if (answer.opcode() == 0x26) {
                        return copiesAnswered.get();
                    }
                    copiesAnswered.incrementAndGet();
                }
                return -1;
            });
            sendCopies(attacker, flood, 16);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (disk.reading.get() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            // another session's 4 KiB read is answered while the copies are still waiting their turn
            try (RawIscsiClient tenant = new RawIscsiClient(TENANT_ADDRESS, port, 0)) {
                tenant.socket.setSoTimeout(240_000);
                tenant.loginNormal(COPY_IQN, "iqn.2026-11.io.tenant:reader");
                int tag = tenant.scsiCommand(RawIscsiClient.read10(0, 8), 4096, true, false, false, null, true);
                assertEquals(0, tenant.readResult(tag, 4096).getValue().byte3(), "GOOD");
            }
            int answered = copiesAnswered.get();
            assertTrue(answered < flood / 2, answered + " of " + flood + " copies ran before another session's read");
            // logging out drops the copies still waiting: the logout is answered without running them all
            attacker.sendLogout();
            int beforeLogout = answeredBeforeLogout.get(240, TimeUnit.SECONDS);
            assertTrue(beforeLogout >= 0 && beforeLogout < flood, beforeLogout + " of " + flood
                    + " copies ran before the logout was answered");
        } finally {
            attacker.close();
            reader.shutdownNow();
        }
        assertTrue(disk.peak.get() <= advertised,
                disk.peak.get() + " copies ran at once, " + advertised + " advertised");
    }
}
