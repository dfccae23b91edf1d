package io.stripestack.remote;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.initiator.Digest;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiLoginException;
import io.stripestack.initiator.IscsiUrl;
import io.stripestack.targetserver.testing.CommandTap;
import io.stripestack.targetserver.testing.CorruptingProxy;
import io.stripestack.targetserver.testing.Tgtd;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A remote member against a real tgt target (tgtd, defaults: MaxRecvDataSegmentLength 8 KiB, MaxBurstLength
 * 256 KiB, FirstBurstLength 64 KiB): size from READ CAPACITY(16), requests larger than a burst cut right (the
 * bytes land at the right offsets of tgtd's backing file), several commands in flight from several threads,
 * FUA writes and flushes; a target that dies and comes back within the retry window loses no I/O, and one that
 * stays away fails the I/O with an IOException after the window; CRC32C header and data digests negotiated with
 * tgtd carry the same data, allocating nothing per request either way. Through a tap that reads the PDUs on the
 * wire: a strict target (small PDUs, short bursts, InitialR2T=Yes, ImmediateData=No) and a lenient one (immediate
 * and unsolicited data up to FirstBurstLength) get exactly what they declared, on as many sessions as configured.
 */
class RemoteBlockDeviceTgtdTest {
    private static final long LUN_BYTES = 16L << 20;

    @TempDir
    Path dir;

    private static RemoteEndpoint endpoint(Tgtd tgtd) {
        return new RemoteEndpoint(IscsiUrl.parse(tgtd.url(1)), null);
    }

    @Test
    void readsAndWritesLandWhereTheyBelongWithSeveralCommandsInFlight() throws Exception {
        try (Tgtd tgtd = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES);
             RemoteBlockDevice device = RemoteBlockDevice.open(endpoint(tgtd),
                     RemoteMemberOptions.defaults().withConnections(2, 8))) {
            assertEquals(LUN_BYTES, device.size());
            assertEquals(512, device.logicalBlockSize());
            assertEquals(256 << 10, device.geometry().maxTransfer(), "one command is one MaxBurstLength");

            int pieces = 8;
            int pieceBytes = 1 << 20; // four bursts each
            byte[][] data = new byte[pieces][pieceBytes];
            ExecutorService pool = Executors.newFixedThreadPool(pieces);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int i = 0; i < pieces; i++) {
                    int piece = i;
                    new Random(piece).nextBytes(data[piece]);
                    done.add(pool.submit(() -> {
                        ByteBuffer src = ByteBuffer.allocateDirect(pieceBytes).put(data[piece]).flip();
                        for (int round = 0; round < 4; round++) {
                            device.write((long) piece * pieceBytes + 4096, src.rewind());
                            assertEquals(src.limit(), src.position(), "a write leaves the position at the limit");
                        }
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get(60, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            device.flush();
            RemoteMemberStatus status = device.status();
            assertTrue(status.peakInFlight() > 1, "several commands were outstanding on one session: " + status);
            assertEquals(RemoteMemberStatus.State.CONNECTED, status.state());

            byte[] file = Files.readAllBytes(tgtd.backingFile(1));
            for (int i = 0; i < pieces; i++) {
                ByteBuffer back = ByteBuffer.allocate(pieceBytes);
                device.read((long) i * pieceBytes + 4096, back);
                assertEquals(back.limit(), back.position(), "a read leaves the position at the limit");
                assertArrayEquals(data[i], back.array(), "piece " + i + " read back");
                byte[] onDisk = java.util.Arrays.copyOfRange(file, i * pieceBytes + 4096, (i + 1) * pieceBytes + 4096);
                assertArrayEquals(data[i], onDisk, "piece " + i + " in tgtd's backing file");
            }

            byte[] log = new byte[4096];
            new Random(99).nextBytes(log);
            device.writeDurable(LUN_BYTES - 4096, ByteBuffer.wrap(log));
            ByteBuffer back = ByteBuffer.allocate(4096);
            device.read(LUN_BYTES - 4096, back);
            assertArrayEquals(log, back.array());
        }
    }

    @Test
    void aStrictTargetGetsEveryWriteByR2tInItsSmallPdusAndShortBurstsOnEverySession() throws Exception {
        try (Tgtd tgtd = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES);
             CommandTap tap = CommandTap.inFrontOf(IscsiUrl.parse(tgtd.url(1)).port())) {
            tgtd.setParameter("MaxRecvDataSegmentLength", "4096");
            tgtd.setParameter("MaxBurstLength", "65536");
            tgtd.setParameter("ImmediateData", "No");
            tgtd.setParameter("InitialR2T", "Yes");
            writeFromSeveralThreadsThroughTap(tgtd, tap, 3);
            assertEquals(3, tap.connectionsWithCommands(), "three sessions, each carrying commands");
            assertTrue(tap.largestDataSegment() > 0 && tap.largestDataSegment() <= 4096,
                    "Data-Out within the target's MaxRecvDataSegmentLength: " + tap.largestDataSegment());
            assertEquals(65536, tap.largestTransfer(), "commands cut at the MaxBurstLength");
            assertEquals(0, tap.immediateDataCommands(), "no immediate data when the target said ImmediateData=No");
            assertEquals(0, tap.unsolicitedDataOuts(), "no Data-Out before an R2T when the target said InitialR2T=Yes");
        }
    }

    @Test
    void aLenientTargetGetsImmediateAndUnsolicitedDataUpToItsFirstBurst() throws Exception {
        try (Tgtd tgtd = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES);
             CommandTap tap = CommandTap.inFrontOf(IscsiUrl.parse(tgtd.url(1)).port())) {
            tgtd.setParameter("MaxRecvDataSegmentLength", "8192");
            tgtd.setParameter("MaxBurstLength", "131072");
            tgtd.setParameter("FirstBurstLength", "16384");
            tgtd.setParameter("ImmediateData", "Yes");
            tgtd.setParameter("InitialR2T", "No");
            writeFromSeveralThreadsThroughTap(tgtd, tap, 2);
            assertEquals(2, tap.connectionsWithCommands());
            assertTrue(tap.immediateDataCommands() > 0 && tap.unsolicitedDataOuts() > 0,
                    "immediate data and unsolicited Data-Out were used: " + tap.immediateDataCommands() + ", "
                            + tap.unsolicitedDataOuts());
            assertEquals(16384, tap.largestUnsolicited(), "unsolicited data up to FirstBurstLength, not beyond");
            assertTrue(tap.largestDataSegment() <= 8192, "PDUs of " + tap.largestDataSegment() + " bytes");
            assertEquals(131072, tap.largestTransfer(), "commands cut at the MaxBurstLength");
        }
    }

    /** 4 MiB written by four threads through the tap, read back, and found in tgtd's backing file. */
    private static void writeFromSeveralThreadsThroughTap(Tgtd tgtd, CommandTap tap, int connections)
            throws Exception {
        RemoteEndpoint throughTap = new RemoteEndpoint(IscsiUrl.parse(tap.relay(tgtd.url(1))), null);
        int pieces = 4;
        int pieceBytes = 1 << 20;
        byte[][] data = new byte[pieces][pieceBytes];
        try (RemoteBlockDevice device = RemoteBlockDevice.open(throughTap,
                RemoteMemberOptions.defaults().withConnections(connections, 8))) {
            ExecutorService pool = Executors.newFixedThreadPool(pieces);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int i = 0; i < pieces; i++) {
                    int piece = i;
                    new Random(100 + piece).nextBytes(data[piece]);
                    done.add(pool.submit(() -> {
                        device.write((long) piece * pieceBytes, ByteBuffer.wrap(data[piece]));
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get(60, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            device.flush();
            byte[] file = Files.readAllBytes(tgtd.backingFile(1));
            for (int i = 0; i < pieces; i++) {
                ByteBuffer back = ByteBuffer.allocate(pieceBytes);
                device.read((long) i * pieceBytes, back);
                assertArrayEquals(data[i], back.array(), "piece " + i + " read back");
                assertArrayEquals(data[i], java.util.Arrays.copyOfRange(file, i * pieceBytes, (i + 1) * pieceBytes),
                        "piece " + i + " in tgtd's backing file");
            }
        }
    }

    @Test
    void chapWithTheSecretFromAFileAlsoAtEveryReconnect() throws Exception {
        Path secret = io.stripestack.secrets.FilePermissions.createPrivate(dir.resolve("member.chap"));
        Files.writeString(secret, "member-secret-0123\n");
        try (Tgtd tgtd = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES)) {
            tgtd.requireChap("gateway", "member-secret-0123");
            IOException refused = assertThrows(IOException.class,
                    () -> RemoteBlockDevice.open(endpoint(tgtd), RemoteMemberOptions.defaults()));
            assertTrue(refused.getMessage().toLowerCase(java.util.Locale.ROOT).contains("auth"), refused.getMessage());
            IscsiUrl url = IscsiUrl.parse(tgtd.url(1).replace("iscsi://", "iscsi://gateway@"));
            try (RemoteBlockDevice device = RemoteBlockDevice.open(new RemoteEndpoint(url, secret),
                    RemoteMemberOptions.defaults().withConnections(1, 4))) {
                device.write(0, ByteBuffer.allocate(4096));
                tgtd.restart();
                device.read(0, ByteBuffer.allocate(4096)); // logged in again with the secret read afresh
                assertEquals(1, device.status().reconnects());
                assertTrue(!device.name().contains("member-secret"), device.name());
            }
        }
    }

    @Test
    void aTargetBoundToOneGatewaysNameTurnsAwayASecondGateway() throws Exception {
        RemoteMemberOptions gatewayA = new RemoteMemberOptions(1, 4, Duration.ofSeconds(2), Duration.ofSeconds(5),
                Duration.ofSeconds(5), "iqn.2026-11.io.example:gateway-a", Digest.NONE, Digest.NONE);
        RemoteMemberOptions gatewayB = new RemoteMemberOptions(1, 4, Duration.ofSeconds(2), Duration.ofSeconds(5),
                Duration.ofSeconds(5), "iqn.2026-11.io.example:gateway-b", Digest.NONE, Digest.NONE);
        try (Tgtd tgtd = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES)) {
            tgtd.allowOnlyInitiator(gatewayA.initiatorIqn());
            try (RemoteBlockDevice a = RemoteBlockDevice.open(endpoint(tgtd), gatewayA)) {
                a.write(0, ByteBuffer.allocate(4096));
                IscsiLoginException refused = assertThrows(IscsiLoginException.class,
                        () -> RemoteBlockDevice.open(endpoint(tgtd), gatewayB));
                // tgtd hides a target from an initiator it does not accept: "not found" (0x0203), not 0x0202
                assertEquals(2, refused.statusClass(), refused.getMessage());
                assertTrue(refused.statusDetail() == 2 || refused.statusDetail() == 3, refused.getMessage());
                a.read(0, ByteBuffer.allocate(4096));
            }
        }
    }

    @Test
    void crc32cDigestsAreNegotiatedWithTgtdAndTheDataArrivesIntact() throws Exception {
        RemoteMemberOptions digests = RemoteMemberOptions.defaults().withConnections(2, 4)
                .withDigests(Digest.CRC32C, Digest.CRC32C);
        try (Tgtd tgtd = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES)) {
            IscsiLoginException refused = assertThrows(IscsiLoginException.class,
                    () -> RemoteBlockDevice.open(endpoint(tgtd), digests));
            assertTrue(refused.getMessage().contains("HeaderDigest=CRC32C was asked for"), refused.getMessage());
            tgtd.allowDigests();
            writeAndReadThroughDigests(tgtd, digests);
        }
    }

    private static void writeAndReadThroughDigests(Tgtd tgtd, RemoteMemberOptions digests) throws Exception {
        try (RemoteBlockDevice device = RemoteBlockDevice.open(endpoint(tgtd), digests);
             IscsiInitiator probe = IscsiInitiator.login(IscsiUrl.parse(tgtd.url(1)), digests.initiatorOptions())) {
            assertTrue(probe.negotiated().headerDigest() && probe.negotiated().dataDigest(),
                    "tgtd granted both digests: " + probe.negotiated());
            byte[] data = new byte[3 << 20]; // bursts of 256 KiB in Data-Out and Data-In PDUs of 8 KiB
            new Random(15).nextBytes(data);
            device.write(8192, ByteBuffer.wrap(data));
            device.writeDurable(LUN_BYTES - 4096, ByteBuffer.wrap(data, 0, 4096));
            device.flush();
            ByteBuffer back = ByteBuffer.allocateDirect(data.length);
            device.read(8192, back);
            byte[] read = new byte[data.length];
            back.flip().get(read);
            assertArrayEquals(data, read, "read back through digests");
            byte[] file = Files.readAllBytes(tgtd.backingFile(1));
            assertArrayEquals(data, java.util.Arrays.copyOfRange(file, 8192, 8192 + data.length), "in tgtd's file");
            assertArrayEquals(java.util.Arrays.copyOf(data, 4096),
                    java.util.Arrays.copyOfRange(file, (int) LUN_BYTES - 4096, (int) LUN_BYTES), "the FUA write");
            assertEquals(0, device.status().reconnects(), "no digest error dropped a connection");
        }
    }

    @Test
    void aDamagedAnswerIsCaughtByTheDigestAndTheReadIsIssuedAgainOnANewConnection() throws Exception {
        byte[] data = new byte[1 << 20];
        new Random(7).nextBytes(data);
        try (Tgtd tgtd = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES);
             CorruptingProxy proxy = CorruptingProxy.inFrontOf(IscsiUrl.parse(tgtd.url(1)).port())) {
            tgtd.allowDigests();
            IscsiUrl target = IscsiUrl.parse(tgtd.url(1));
            RemoteEndpoint throughProxy = new RemoteEndpoint(new IscsiUrl("127.0.0.1", proxy.port(),
                    target.targetIqn(), target.lun(), null, null), null);
            RemoteMemberOptions options = RemoteMemberOptions.defaults().withConnections(1, 4);

            try (RemoteBlockDevice plain = RemoteBlockDevice.open(throughProxy, options)) {
                plain.write(0, ByteBuffer.wrap(data));
                proxy.damageNextAnswer();
                ByteBuffer back = ByteBuffer.allocate(data.length);
                plain.read(0, back);
                assertTrue(proxy.damaged());
                assertFalse(java.util.Arrays.equals(data, back.array()),
                        "without digests the flipped bit reaches the caller (else this test proves nothing)");
            }

            try (RemoteBlockDevice checked = RemoteBlockDevice.open(throughProxy,
                    options.withDigests(Digest.CRC32C, Digest.CRC32C))) {
                proxy.damageNextAnswer();
                ByteBuffer back = ByteBuffer.allocate(data.length);
                checked.read(0, back);
                assertTrue(proxy.damaged());
                assertArrayEquals(data, back.array(), "the digest caught the flipped bit and the read was issued again");
                RemoteMemberStatus status = checked.status();
                assertEquals(1, status.reconnects(), "the digest error dropped the connection: " + status);
                assertEquals(RemoteMemberStatus.State.CONNECTED, status.state());
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Digest.class)
    void aReadOrWriteAllocatesNothingOnTheCallersThreadOrTheReader(Digest digest) throws Exception {
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        try (Tgtd tgtd = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES)) {
            tgtd.allowDigests();
            assertNothingAllocatedPerRequest(threads, tgtd, digest);
        }
    }

    private static void assertNothingAllocatedPerRequest(com.sun.management.ThreadMXBean threads, Tgtd tgtd, Digest digest)
            throws Exception {
        try (RemoteBlockDevice device = RemoteBlockDevice.open(endpoint(tgtd),
                     RemoteMemberOptions.defaults().withConnections(2, 4).withDigests(digest, digest))) {
            ByteBuffer buf = ByteBuffer.allocateDirect(512 << 10); // two commands each
            for (int i = 0; i < 50; i++) { // warm up
                device.write(0, buf.clear());
                device.read(0, buf.clear());
            }
            int rounds = 200;
            long[] readers = readerThreadIds();
            long readersBefore = allocated(threads, readers);
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < rounds; i++) {
                device.write((long) (i % 16) * buf.capacity(), buf.clear());
                device.read((long) (i % 16) * buf.capacity(), buf.clear());
            }
            long perIo = (threads.getCurrentThreadAllocatedBytes() - before) / (2L * rounds);
            long readersPerIo = (allocated(threads, readers) - readersBefore) / (2L * rounds);
            assertTrue(perIo < 16, perIo + " bytes allocated per request with digests " + digest);
            // each request is two commands of 32 Data-In PDUs (tgtd's 8 KiB segments) or R2Ts and statuses
            assertTrue(readersPerIo < 16, readersPerIo + " bytes allocated by iscsi-reader per request with digests "
                    + digest);
        }
    }

    private static long[] readerThreadIds() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("iscsi-reader"))
                .mapToLong(Thread::getId).toArray();
    }

    private static long allocated(com.sun.management.ThreadMXBean threads, long[] ids) {
        long sum = 0;
        for (long a : threads.getThreadAllocatedBytes(ids)) {
            sum += Math.max(a, 0);
        }
        return sum;
    }

    @Test
    void aTargetThatComesBackWithinTheRetryWindowLosesNoIo() throws Exception {
        try (Tgtd tgtd = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES);
             RemoteBlockDevice device = RemoteBlockDevice.open(endpoint(tgtd),
                     RemoteMemberOptions.defaults().withConnections(1, 4).withRetryTimeout(Duration.ofSeconds(30)))) {
            byte[] before = new byte[64 << 10];
            new Random(1).nextBytes(before);
            device.write(0, ByteBuffer.wrap(before));
            tgtd.kill();
            Thread restarter = new Thread(() -> {
                try {
                    Thread.sleep(1500);
                    tgtd.restart();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            restarter.start();
            byte[] during = new byte[64 << 10];
            new Random(2).nextBytes(during);
            long started = System.nanoTime();
            device.write(1 << 20, ByteBuffer.wrap(during)); // waits for the target
            restarter.join();
            assertTrue(System.nanoTime() - started > TimeUnit.MILLISECONDS.toNanos(1000), "the write waited");
            ByteBuffer back = ByteBuffer.allocate(during.length);
            device.read(1 << 20, back);
            assertArrayEquals(during, back.array());
            back = ByteBuffer.allocate(before.length);
            device.read(0, back);
            assertArrayEquals(before, back.array());
            RemoteMemberStatus status = device.status();
            assertTrue(status.reconnects() >= 1, status.toString());
            assertEquals(RemoteMemberStatus.State.CONNECTED, status.state());
        }
    }

    @Test
    void aHungTargetTimesOutAndItsIoFailsAfterTheRetryWindow() throws Exception {
        try (Tgtd tgtd = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES);
             RemoteBlockDevice device = RemoteBlockDevice.open(endpoint(tgtd), RemoteMemberOptions.defaults()
                     .withConnections(1, 4).withRetryTimeout(Duration.ofSeconds(3))
                     .withCommandTimeout(Duration.ofSeconds(2)))) {
            device.read(0, ByteBuffer.allocate(4096));
            tgtd.pause();
            long started = System.nanoTime();
            IOException e = assertThrows(IOException.class, () -> device.write(0, ByteBuffer.allocate(4096)));
            long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            // the command's 2 s, the 3 s window, and at most one more 2 s login that the window cut short
            assertTrue(waited >= 4500 && waited < 12000, "waited " + waited + " ms");
            assertTrue(e.getMessage().contains("retry timeout"), e.getMessage());
            assertEquals(RemoteMemberStatus.State.FAILED, device.status().state());
            tgtd.resume();
            assertTrue(device.reconnect(), "connects again once the target answers");
            device.read(0, ByteBuffer.allocate(4096));
        }
    }

    @Test
    void aTargetThatStaysAwayFailsTheIoAfterTheRetryWindow() throws Exception {
        try (Tgtd tgtd = Tgtd.start(dir.resolve("tgt"), 1, LUN_BYTES);
             RemoteBlockDevice device = RemoteBlockDevice.open(endpoint(tgtd),
                     RemoteMemberOptions.defaults().withConnections(2, 4).withRetryTimeout(Duration.ofSeconds(2)))) {
            tgtd.kill();
            long started = System.nanoTime();
            IOException e = assertThrows(IOException.class, () -> device.read(0, ByteBuffer.allocate(4096)));
            long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertTrue(waited >= 1900 && waited < 20000, "waited " + waited + " ms");
            assertTrue(e.getMessage().contains("retry timeout"), e.getMessage());
            started = System.nanoTime();
            assertThrows(IOException.class, () -> device.write(0, ByteBuffer.allocate(4096)));
            assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) < 1000,
                    "a given-up member fails at once on every session");
            assertEquals(RemoteMemberStatus.State.FAILED, device.status().state());
            tgtd.restart();
            assertTrue(device.reconnect(), "connects again once asked");
            device.read(0, ByteBuffer.allocate(4096));
        }
    }
}
