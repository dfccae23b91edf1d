package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.util.ResourceLeakDetector;
import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.initiator.InitiatorOptions;
import io.stripestack.initiator.IscsiInitiator;
import io.stripestack.initiator.IscsiUrl;
import io.stripestack.initiator.ScsiCommandException;
import io.stripestack.targetserver.scsi.LogicalUnit;
import io.stripestack.targetserver.scsi.LogicalUnitIdentity;
import io.stripestack.targetserver.scsi.ScsiCommand;
import io.stripestack.targetserver.scsi.ScsiTarget;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The write buffer budget in the real server over TCP: two sessions (on the server's event loops)
 * with many threads each write concurrently, with writes larger than the whole budget among them,
 * under a budget a fraction of what they announce. Every write completes (retried on TASK SET FULL,
 * as a SCSI midlayer does), every byte reads back, and the budget's peak stays within
 * max(budget, largest write) plus the unsolicited allowance.
 */
class WriteBufferBudgetServerTest {
    private static final String IQN = "iqn.2026-11.io.stripestack:budget";
    private static final int BUDGET = 768 << 10;
    private static final int REGION = 1 << 20;
    private static final int SESSIONS = 2;
    private static final int THREADS_PER_SESSION = 7;
    private static final int ROUNDS = 3;

    @Test
    @Timeout(120)
    void concurrentWritesOfTwoSessionsAllCompleteIntactWithinTheBudget() throws Exception {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        ExecutorService ioExecutor = Executors.newFixedThreadPool(4);
        ExecutorService callers = Executors.newFixedThreadPool(SESSIONS * THREADS_PER_SESSION);
        MemoryBlockDevice device = new MemoryBlockDevice("budget", 16 << 20, 512);
        ScsiTarget router = new ScsiTarget(Map.of(0L, new LogicalUnit(device,
                LogicalUnitIdentity.of(UUID.nameUUIDFromBytes(IQN.getBytes(StandardCharsets.UTF_8))), false)));
        IscsiServerSettings settings = IscsiServerSettings.builder()
                .bind(new InetSocketAddress("127.0.0.1", 0))
                .nopInInterval(java.time.Duration.ZERO)
                .maxRecvDataSegmentLength(65536)
                .maxBurstLength(262144)
                .firstBurstLength(65536)
                .writeBufferBudget(BUDGET)
                .build();
        IscsiServer server = new IscsiServer(settings, List.of(IscsiTargetDefinition.builder(IQN, router).build()),
                ioExecutor);
        List<IscsiInitiator> sessions = new ArrayList<>();
        AtomicLong taskSetFull = new AtomicLong();
        try {
            server.start();
            IscsiUrl url = new IscsiUrl("127.0.0.1", server.boundPort(), IQN, 0, null, null);
            for (int s = 0; s < SESSIONS; s++) {
                sessions.add(IscsiInitiator.login(url,
                        InitiatorOptions.defaults().withInitiatorIqn("iqn.2026-11.io.stripestack:budget-" + s)));
            }
            List<Future<?>> work = new ArrayList<>();
            for (int s = 0; s < SESSIONS; s++) {
                IscsiInitiator session = sessions.get(s);
                for (int t = 0; t < THREADS_PER_SESSION; t++) {
                    int region = s * THREADS_PER_SESSION + t;
                    work.add(callers.submit(() -> {
                        writeAndVerifyRegion(session, region, taskSetFull);
                        return null;
                    }));
                }
            }
            for (Future<?> f : work) {
                f.get(100, TimeUnit.SECONDS);
            }
            assertTrue(sessions.get(0).peakCommandsInFlight() > 1, "commands overlapped on a session");
            WriteBufferStats stats = server.writeBufferStats();
            assertTrue(stats.commandsWaited() > 0, "some writes had to wait for budget: " + stats);
            assertTrue(stats.peakBytesInUse() <= REGION + stats.unsolicitedAllowanceBytes(),
                    "peak within max(budget, largest write) + allowance: " + stats);
            assertEquals(0, stats.bytesInUse(), "every buffer returned: " + stats);
            assertEquals(0, stats.commandsWaiting());
            assertEquals(taskSetFull.get(), stats.commandsRefused(), "each refusal reached the initiator as TASK SET FULL");
        } finally {
            for (IscsiInitiator session : sessions) {
                session.close();
            }
            server.close();
            callers.shutdownNow();
            ioExecutor.shutdown();
            assertTrue(ioExecutor.awaitTermination(10, TimeUnit.SECONDS));
        }
    }

    /** Each round writes the region either as one write larger than the budget or as four, then reads it back. */
    private static void writeAndVerifyRegion(IscsiInitiator session, int region, AtomicLong taskSetFull)
            throws IOException {
        long firstLba = (long) region * REGION / 512;
        byte[] expected = new byte[REGION];
        ByteBuffer back = ByteBuffer.allocateDirect(REGION);
        for (int round = 0; round < ROUNDS; round++) {
            new Random(region * 31L + round).nextBytes(expected);
            int pieces = (region + round) % 2 == 0 ? 1 : 4;
            int pieceLength = REGION / pieces;
            for (int p = 0; p < pieces; p++) {
                ByteBuffer src = ByteBuffer.wrap(expected, p * pieceLength, pieceLength).slice();
                writeRetryingTaskSetFull(session, firstLba + (long) p * pieceLength / 512, src, taskSetFull);
            }
            back.clear();
            session.read16(firstLba, back);
            byte[] actual = new byte[REGION];
            back.flip().get(actual);
            assertArrayEquals(expected, actual, "region " + region + " round " + round);
        }
    }

    private static void writeRetryingTaskSetFull(IscsiInitiator session, long lba, ByteBuffer src, AtomicLong taskSetFull)
            throws IOException {
        for (;;) {
            try {
                session.write16(lba, src);
                return;
            } catch (ScsiCommandException e) {
                if (e.status() != ScsiCommand.TASK_SET_FULL) {
                    throw e;
                }
                taskSetFull.incrementAndGet();
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
            }
        }
    }
}
