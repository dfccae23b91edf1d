package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.targetserver.iscsi.IscsiTestInitiator.Response;
import io.stripestack.targetserver.scsi.ScsiCommand;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The write buffer budget over an EmbeddedChannel session with a memory LUN: many large writes
 * queued at once wait for budget without R2Ts, unsolicited data of waiting commands is bounded by
 * the allowance (TASK SET FULL beyond it), a write larger than the budget still runs, and task
 * management and connection loss return what waiting commands hold.
 */
class WriteBufferBudgetTest {
    private static final int BUDGET = 1 << 20;
    private static final int ALLOWANCE = BUDGET / 4;
    private static final int BLOCK = 512;
    private static final int TMF_ABORT_TASK = 1;
    private static final int TMF_LOGICAL_UNIT_RESET = 5;

    /** What the scripted initiator sends and sees; plays the initiator's part of R2T handling. */
    private static final class Session {
        final IscsiTestInitiator i;
        final Map<Integer, byte[]> payloads = new HashMap<>();
        final Map<Integer, Integer> statuses = new LinkedHashMap<>();
        /** Commands that got an R2T and no response yet, and their length. */
        final Map<Integer, Integer> soliciting = new HashMap<>();
        final Set<Integer> everSolicited = new HashSet<>();
        long mostSolicitedBytes;

        Session(IscsiTestInitiator i) {
            this.i = i;
        }

        int write(long lba, byte[] payload, int immediateLength, boolean finalBit) {
            byte[] immediate = immediateLength == 0 ? null : Arrays.copyOf(payload, immediateLength);
            int tag = i.scsiCommand(IscsiTestInitiator.write10(lba, payload.length / BLOCK), payload.length, false, true,
                    immediate, finalBit);
            payloads.put(tag, payload);
            return tag;
        }

        /** Answers every R2T with its data and records every response until the target goes quiet. */
        void pump() {
            while (i.hasNext()) {
                handle(i.next());
            }
        }

        void handle(Response r) {
            if (r.opcode() == Bhs.OP_R2T) {
                int tag = r.itt();
                byte[] payload = payloads.get(tag);
                assertNotNull(payload, "R2T for a known write");
                soliciting.put(tag, payload.length);
                everSolicited.add(tag);
                mostSolicitedBytes = Math.max(mostSolicitedBytes, soliciting.values().stream().mapToLong(v -> v).sum());
                int offset = r.intAt(40);
                int length = r.intAt(44);
                i.dataOut(tag, r.ttt(), offset, Arrays.copyOfRange(payload, offset, offset + length), 0, true);
            } else {
                assertEquals(Bhs.OP_SCSI_RESPONSE, r.opcode(), "only R2Ts and responses expected");
                soliciting.remove(r.itt());
                statuses.put(r.itt(), r.byte3());
            }
        }

        void assertStored(long lba, byte[] payload) throws java.io.IOException {
            ByteBuffer stored = ByteBuffer.allocate(payload.length);
            i.device.read(lba * BLOCK, stored);
            assertArrayEquals(payload, stored.array(), "LBA " + lba + " holds what was written");
        }
    }

    private static byte[] payload(int length, long seed) {
        byte[] b = new byte[length];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static IscsiServerSettings.Builder settings() {
        return IscsiTestInitiator.settings().writeBufferBudget(BUDGET).maxBurstLength(262144).firstBurstLength(65536);
    }

    @Test
    void manyLargeWritesWaitForBudgetWithoutR2tsAndAllLandIntact() throws Exception {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings().build())) {
            i.loginNormal("InitialR2T=Yes", "ImmediateData=No", "MaxBurstLength=262144", "FirstBurstLength=65536");
            Session s = new Session(i);
            int length = 512 << 10;
            int[] tags = new int[12];
            for (int k = 0; k < tags.length; k++) {
                tags[k] = s.write((long) k * length / BLOCK, payload(length, k), 0, true);
            }
            // the first two fill the budget; the other ten wait and see no R2T
            List<Response> first = List.of(i.next(), i.next());
            assertFalse(i.hasNext(), "no R2T for commands waiting for budget");
            for (int k = 0; k < 2; k++) {
                assertEquals(Bhs.OP_R2T, first.get(k).opcode());
                assertEquals(tags[k], first.get(k).itt());
            }
            WriteBufferStats waiting = i.server.writeBuffers.stats();
            assertEquals(10, waiting.commandsWaiting());
            assertEquals(BUDGET, waiting.bytesInUse());
            for (Response r : first) {
                s.handle(r);
            }
            s.pump();

            assertEquals(tags.length, s.statuses.size(), "every write answered");
            s.statuses.values().forEach(status -> assertEquals(ScsiCommand.GOOD, status));
            assertTrue(s.mostSolicitedBytes <= BUDGET, "R2Ts outstanding for at most the budget: " + s.mostSolicitedBytes);
            WriteBufferStats after = i.server.writeBuffers.stats();
            assertEquals(0, after.bytesInUse());
            assertEquals(0, after.commandsWaiting());
            assertEquals(10, after.commandsWaited());
            assertEquals(BUDGET, after.peakBytesInUse());
            assertTrue(i.allocator.peakLiveDirectBytes() <= BUDGET,
                    "direct buffers live at once: " + i.allocator.peakLiveDirectBytes());
            for (int k = 0; k < tags.length; k++) {
                s.assertStored((long) k * length / BLOCK, s.payloads.get(tags[k]));
            }
        }
    }

    @Test
    void unsolicitedDataOfWaitingWritesUsesTheAllowanceAndBeyondItTheWriteIsAnsweredTaskSetFull() throws Exception {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings().build())) {
            i.loginNormal("InitialR2T=No", "ImmediateData=Yes", "MaxBurstLength=262144", "FirstBurstLength=65536",
                    "MaxRecvDataSegmentLength=262144");
            Session s = new Session(i);
            int length = 512 << 10;
            int half = 32 << 10;
            int[] tags = new int[8];
            for (int k = 0; k < tags.length; k++) {
                tags[k] = s.write((long) k * length / BLOCK, payload(length, 100 + k), half, false);
            }
            assertFalse(i.hasNext(), "nothing before the unsolicited bursts end, not even TASK SET FULL");
            for (int k = 0; k < tags.length; k++) {
                byte[] p = s.payloads.get(tags[k]);
                i.dataOut(tags[k], -1, half, Arrays.copyOfRange(p, half, 2 * half), 0, true);
            }
            // two own the budget (R2Ts), four wait in the allowance (64 KiB each), two find no room
            s.pump();
            assertEquals(8, s.statuses.size(), "six written, two refused");
            for (int k = 0; k < tags.length; k++) {
                assertEquals(k < 6 ? ScsiCommand.GOOD : ScsiCommand.TASK_SET_FULL, s.statuses.get(tags[k]), "write " + k);
            }
            assertFalse(s.everSolicited.contains(tags[6]) || s.everSolicited.contains(tags[7]), "no R2T for refused writes");
            WriteBufferStats stats = i.server.writeBuffers.stats();
            assertEquals(2, stats.commandsRefused());
            assertEquals(4, stats.commandsWaited());
            assertTrue(stats.peakBytesInUse() <= BUDGET + ALLOWANCE, "peak " + stats.peakBytesInUse());
            assertTrue(i.allocator.peakLiveDirectBytes() <= BUDGET + ALLOWANCE,
                    "direct buffers live at once: " + i.allocator.peakLiveDirectBytes());

            // the initiator retries the refused writes, as a SCSI midlayer does on TASK SET FULL
            for (int k = 6; k < 8; k++) {
                byte[] p = s.payloads.get(tags[k]);
                tags[k] = s.write((long) k * length / BLOCK, p, half, false);
                i.dataOut(tags[k], -1, half, Arrays.copyOfRange(p, half, 2 * half), 0, true);
                s.pump();
                assertEquals(ScsiCommand.GOOD, s.statuses.get(tags[k]));
            }
            for (int k = 0; k < tags.length; k++) {
                s.assertStored((long) k * length / BLOCK, s.payloads.get(tags[k]));
            }
            assertEquals(0, i.server.writeBuffers.stats().bytesInUse());
        }
    }

    @Test
    void writeLargerThanTheWholeBudgetRunsAloneAndLaterWritesWaitBehindIt() throws Exception {
        // half a MiB of budget: the SCSI layer's MAXIMUM TRANSFER LENGTH (1 MiB) is larger
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings().writeBufferBudget(512 << 10).build())) {
            i.loginNormal("InitialR2T=Yes", "ImmediateData=No", "MaxBurstLength=262144", "FirstBurstLength=65536");
            Session s = new Session(i);
            int small = s.write(0, payload(256 << 10, 1), 0, true);
            int big = s.write(2048, payload(1 << 20, 2), 0, true);
            int behind = s.write(16384, payload(256 << 10, 3), 0, true);
            Response r2t = i.next();
            assertEquals(small, r2t.itt());
            assertFalse(i.hasNext(), "the big write waits, and the one behind it although it would fit");

            // the small write's only burst completes it: the big one now holds budget alone
            s.handle(r2t);
            s.handle(i.next());
            assertEquals(ScsiCommand.GOOD, s.statuses.get(small));
            Response bigR2t = i.next();
            assertEquals(big, bigR2t.itt());
            s.handle(bigR2t);
            while (!s.statuses.containsKey(big)) {
                Response r = i.next();
                assertEquals(big, r.itt(), "nothing for the write behind while the big one runs");
                s.handle(r);
            }
            s.pump();
            assertEquals(ScsiCommand.GOOD, s.statuses.get(big));
            assertEquals(ScsiCommand.GOOD, s.statuses.get(behind));
            assertEquals(1 << 20, i.server.writeBuffers.stats().peakBytesInUse(), "the big write alone");
            s.assertStored(0, s.payloads.get(small));
            s.assertStored(2048, s.payloads.get(big));
            s.assertStored(16384, s.payloads.get(behind));
        }
    }

    @Test
    void abortAndLunResetOfWaitingWritesReturnTheirBudgetAndLaterWritesProceed() throws Exception {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings().build())) {
            i.loginNormal("InitialR2T=No", "ImmediateData=Yes", "MaxBurstLength=262144", "FirstBurstLength=65536",
                    "MaxRecvDataSegmentLength=262144");
            Session s = new Session(i);
            int half = 32 << 10;
            int owner = s.write(0, payload(BUDGET, 10), 64 << 10, true);
            Response ownerR2t = i.next();
            assertEquals(Bhs.OP_R2T, ownerR2t.opcode());
            assertEquals(owner, ownerR2t.itt());
            int withUnsolicited = s.write(4096, payload(512 << 10, 11), half, false);
            int withoutData = s.write(8192, payload(512 << 10, 12), 0, true);
            assertFalse(i.hasNext());
            WriteBufferStats waiting = i.server.writeBuffers.stats();
            assertEquals(2, waiting.commandsWaiting());
            assertEquals(BUDGET + (64 << 10), waiting.bytesInUse(), "budget plus one first burst of allowance");

            Response abort = i.taskManagement(TMF_ABORT_TASK, withUnsolicited, i.cmdSn - 2);
            assertEquals(0, abort.byte2(), "ABORT TASK of a waiting write: function complete");
            assertEquals(BUDGET, i.server.writeBuffers.stats().bytesInUse(), "its allowance returned");
            i.dataOut(withUnsolicited, -1, half, new byte[half], 0, true);
            assertFalse(i.hasNext(), "unsolicited data of the aborted write is dropped");

            Response reset = i.taskManagement(TMF_LOGICAL_UNIT_RESET, -1, i.cmdSn);
            assertEquals(0, reset.byte2(), "LUN RESET with a write collecting data and one waiting: complete");
            WriteBufferStats afterReset = i.server.writeBuffers.stats();
            assertEquals(0, afterReset.bytesInUse());
            assertEquals(0, afterReset.commandsWaiting());
            assertFalse(i.hasNext(), "no R2T for the reset write, no response for aborted ones");
            assertFalse(s.everSolicited.contains(withoutData));

            // a LUN reset may raise a UNIT ATTENTION: let a TEST UNIT READY take it
            i.readResult(i.scsiCommand(new byte[16], 0, false, false, null, true));
            int later = s.write(0, payload(512 << 10, 13), 0, true);
            s.pump();
            assertEquals(ScsiCommand.GOOD, s.statuses.get(later));
            s.assertStored(0, s.payloads.get(later));
        }
    }

    @Test
    void writeLeavingAnR2tUnansweredForAWholeNopInIntervalEndsItsConnectionAndReturnsItsBudget() {
        IscsiServerSettings settings = settings().nopInInterval(java.time.Duration.ofSeconds(5)).build();
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings)) {
            i.channel.freezeTime();
            i.loginNormal("InitialR2T=Yes", "ImmediateData=No", "MaxBurstLength=262144", "FirstBurstLength=65536");
            byte[] payload = payload(512 << 10, 30);
            int tag = i.scsiCommand(IscsiTestInitiator.write10(0, payload.length / BLOCK), payload.length, false, true,
                    null, true);
            Response r2t = i.next();
            assertEquals(Bhs.OP_R2T, r2t.opcode());
            i.channel.advanceTimeBy(4, java.util.concurrent.TimeUnit.SECONDS);
            i.dataOut(tag, r2t.ttt(), 0, Arrays.copyOf(payload, 128 << 10), 0, false);
            i.channel.advanceTimeBy(2, java.util.concurrent.TimeUnit.SECONDS);
            i.channel.runScheduledPendingTasks();
            assertTrue(i.channel.isActive(), "at the 5 s check the write's last Data-Out is 1 s old");
            assertEquals(BUDGET / 2, i.server.writeBuffers.stats().bytesInUse());
            // the initiator stays alive (it sends NOP-Outs) but never sends the rest of the burst
            ByteBuf nop = IscsiTestInitiator.bhs(Bhs.OP_NOP_OUT | Bhs.IMMEDIATE_BIT, 0x80, 0);
            nop.setInt(16, -1);
            nop.setInt(20, -1);
            nop.setInt(24, i.cmdSn);
            i.channel.advanceTimeBy(2, java.util.concurrent.TimeUnit.SECONDS);
            i.send(nop, null);
            i.channel.advanceTimeBy(2, java.util.concurrent.TimeUnit.SECONDS);
            i.channel.runScheduledPendingTasks();
            assertFalse(i.channel.isActive(), "at the 10 s check the last Data-Out (4 s) is a whole interval old");
            assertEquals(0, i.server.writeBuffers.stats().bytesInUse());
        }
    }

    @Test
    void budgetOutsideItsRangeIsRefusedNamingTheSetting() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> IscsiServerSettings.builder().writeBufferBudget(4096).build());
        assertTrue(e.getMessage().contains("writeBufferBudget = 4096 is out of range: use a value from 65536 to 68719476736"),
                e.getMessage());
        assertEquals(256L << 20, IscsiServerSettings.builder().build().writeBufferBudget(), "default");
    }

    @Test
    void connectionLossWithWaitingWritesReturnsEveryByte() {
        IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings().build());
        i.loginNormal("InitialR2T=No", "ImmediateData=Yes", "MaxBurstLength=262144", "FirstBurstLength=65536",
                "MaxRecvDataSegmentLength=262144");
        Session s = new Session(i);
        for (int k = 0; k < 6; k++) {
            s.write((long) k * 1024, payload(512 << 10, 20 + k), 16 << 10, false);
        }
        WriteBufferStats waiting = i.server.writeBuffers.stats();
        assertEquals(4, waiting.commandsWaiting());
        assertEquals(BUDGET + 4 * (64 << 10), waiting.bytesInUse());
        i.close(); // closes the channel and proves every buffer was released
        WriteBufferStats after = i.server.writeBuffers.stats();
        assertEquals(0, after.bytesInUse());
        assertEquals(0, after.commandsWaiting());
    }
}
