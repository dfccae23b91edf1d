package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.targetserver.iscsi.IscsiTestInitiator.Response;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The connection state machine end to end over EmbeddedChannel, with the real SCSI layer on a memory LUN. */
class IscsiConnectionTest {

    @Test
    void openIscsiLoginKeysAreAnsweredAndSessionReachesFullFeature() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            Response r = i.login(1, true, 3, "InitiatorName=" + IscsiTestInitiator.INITIATOR_IQN, "InitiatorAlias=vm",
                    "TargetName=" + IscsiTestInitiator.TARGET_IQN, "SessionType=Normal", "HeaderDigest=None",
                    "DataDigest=None", "DefaultTime2Wait=2", "DefaultTime2Retain=0", "IFMarker=No", "OFMarker=No",
                    "ErrorRecoveryLevel=0", "InitialR2T=No", "ImmediateData=Yes", "MaxBurstLength=16776192",
                    "FirstBurstLength=262144", "MaxOutstandingR2T=1", "MaxConnections=1", "DataPDUInOrder=Yes",
                    "DataSequenceInOrder=Yes", "MaxRecvDataSegmentLength=262144");
            assertEquals(0, r.shortAt(36));
            assertEquals(0x80 | 1 << 2 | 3, r.flags());
            assertTrue(r.shortAt(14) != 0, "TSIH assigned");
            Map<String, String> keys = r.keys();
            assertEquals("1", keys.get("TargetPortalGroupTag"));
            assertEquals("None", keys.get("HeaderDigest"));
            assertEquals("0", keys.get("DefaultTime2Retain"));
            assertEquals("2", keys.get("DefaultTime2Wait"));
            assertEquals("No", keys.get("IFMarker"));
            assertEquals("No", keys.get("InitialR2T"));
            assertEquals("Yes", keys.get("ImmediateData"));
            assertEquals("1048576", keys.get("MaxBurstLength"));
            assertEquals("262144", keys.get("FirstBurstLength"));
            assertEquals("1", keys.get("MaxOutstandingR2T"));
            assertEquals("262144", keys.get("MaxRecvDataSegmentLength"));
            assertEquals(1, i.server.sessions.size());

            int tag = i.scsiCommand(IscsiTestInitiator.inquiry(36), 36, true, false, null, true);
            Map.Entry<byte[], Response> result = i.readResult(tag);
            assertEquals(36, result.getKey().length);
            assertEquals(0x01 | 0x80, result.getValue().flags() & 0x81, "status collapsed into the final Data-In");
            assertEquals(0, result.getValue().byte3(), "GOOD");
        }
    }

    @Test
    void unknownTargetAndForeignInitiatorAndMissingNameAreRefusedWithTheirStatus() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            Response r = i.login(0, true, 1, "InitiatorName=" + IscsiTestInitiator.INITIATOR_IQN,
                    "TargetName=iqn.2026-11.io.stripestack:nope", "AuthMethod=None");
            assertEquals(0x0203, r.shortAt(36));
            assertFalse(i.channel.isActive(), "connection closed after a failed login");
        }
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build(),
                b -> b.allowedInitiators(java.util.List.of("iqn.2026-11.other:host")))) {
            Response r = i.login(0, true, 1, "InitiatorName=" + IscsiTestInitiator.INITIATOR_IQN,
                    "TargetName=" + IscsiTestInitiator.TARGET_IQN, "AuthMethod=None");
            assertEquals(0x0202, r.shortAt(36));
        }
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            Response r = i.login(0, true, 1, "TargetName=" + IscsiTestInitiator.TARGET_IQN, "AuthMethod=None");
            assertEquals(0x0207, r.shortAt(36));
        }
    }

    @Test
    void discoverySendTargetsAdvertisesConfiguredPortals() {
        IscsiServerSettings settings = IscsiTestInitiator.settings().portal("192.0.2.7:3260").portal("[2001:db8::1]:3260")
                .targetPortalGroupTag(5).build();
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings)) {
            Response r = i.login(1, true, 3, "InitiatorName=" + IscsiTestInitiator.INITIATOR_IQN, "SessionType=Discovery",
                    "MaxRecvDataSegmentLength=32768", "ImmediateData=Yes");
            assertEquals(0, r.shortAt(36));
            assertEquals("Irrelevant", r.keys().get("ImmediateData"));
            byte[] data = IscsiTestInitiator.keys("SendTargets=All");
            ByteBuf h = IscsiTestInitiator.bhs(Bhs.OP_TEXT_REQUEST, 0x80, data.length);
            h.setInt(16, 77);
            h.setInt(20, -1);
            h.setInt(24, i.cmdSn++);
            i.send(h, data);
            Response text = i.next();
            assertEquals(Bhs.OP_TEXT_RESPONSE, text.opcode());
            assertEquals(77, text.itt());
            assertEquals("TargetName=" + IscsiTestInitiator.TARGET_IQN + "\0TargetAddress=192.0.2.7:3260,5\0"
                    + "TargetAddress=[2001:db8::1]:3260,5\0", text.text());
            int scsi = i.scsiCommand(IscsiTestInitiator.inquiry(36), 36, true, false, null, true);
            Response reject = i.next();
            assertEquals(Bhs.OP_REJECT, reject.opcode(), "no SCSI in a discovery session");
            assertEquals(scsi, java.nio.ByteBuffer.wrap(reject.data).getInt(16), "Reject carries the rejected header");
        }
    }

    @Test
    void writeCollectsImmediateUnsolicitedAndSolicitedDataThenReadsBackSplitByMaxRecvDataSegmentLength() throws Exception {
        IscsiServerSettings settings = IscsiTestInitiator.settings().maxBurstLength(16384).firstBurstLength(8192)
                .maxOutstandingR2T(2).build();
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings)) {
            i.loginNormal("InitialR2T=No", "ImmediateData=Yes", "MaxRecvDataSegmentLength=4096",
                    "MaxBurstLength=262144", "FirstBurstLength=65536", "MaxOutstandingR2T=4");
            byte[] payload = new byte[64 * 1024];
            for (int k = 0; k < payload.length; k++) {
                payload[k] = (byte) (k * 31 + 7);
            }
            int tag = i.scsiCommand(IscsiTestInitiator.write10(8, 128), payload.length, false, true,
                    Arrays.copyOfRange(payload, 0, 4096), false);
            assertFalse(i.hasNext(), "no R2T before the unsolicited burst ends");
            i.dataOut(tag, -1, 4096, Arrays.copyOfRange(payload, 4096, 8192), 0, true);
            // 56 KiB remain: bursts of 16 KiB, two outstanding at a time
            int done = 8192;
            int r2ts = 0;
            while (done < payload.length) {
                Response r2t = i.next();
                assertEquals(Bhs.OP_R2T, r2t.opcode());
                assertEquals(r2ts++, r2t.intAt(36), "R2TSN");
                int offset = r2t.intAt(40);
                int length = r2t.intAt(44);
                assertTrue(length <= 16384);
                assertEquals(done, offset);
                for (int sent = 0; sent < length; sent += 4096) {
                    i.dataOut(tag, r2t.ttt(), offset + sent, Arrays.copyOfRange(payload, offset + sent, offset + sent + 4096),
                            sent / 4096, sent + 4096 == length);
                }
                done += length;
            }
            Map.Entry<byte[], Response> write = i.readResult(tag);
            assertEquals(Bhs.OP_SCSI_RESPONSE, write.getValue().opcode());
            assertEquals(0, write.getValue().byte3());
            assertEquals(0, write.getValue().flags() & 0x06, "no residual");
            assertEquals(4, r2ts);

            ByteBuffer stored = ByteBuffer.allocate(payload.length);
            i.device.read(8 * 512, stored);
            assertArrayEquals(payload, stored.array(), "device holds what was written");

            int read = i.scsiCommand(IscsiTestInitiator.read10(8, 128), payload.length, true, false, null, true);
            int pdus = 0;
            byte[] back = new byte[payload.length];
            int finals = 0;
            for (;;) {
                Response r = i.next();
                assertEquals(Bhs.OP_DATA_IN, r.opcode());
                assertTrue(r.data.length <= 4096, "Data-In segment within the initiator's MaxRecvDataSegmentLength");
                assertEquals(pdus++, r.intAt(36), "DataSN");
                System.arraycopy(r.data, 0, back, r.intAt(40), r.data.length);
                if ((r.flags() & 0x80) != 0) {
                    finals++;
                }
                if ((r.flags() & 0x01) != 0) {
                    assertEquals(read, r.itt());
                    break;
                }
            }
            assertEquals(16, pdus);
            assertEquals(4, finals, "F bit at each MaxBurstLength boundary");
            assertArrayEquals(payload, back);
        }
    }

    @Test
    void residualUnderflowAndOverflowAreReported() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            i.loginNormal("MaxRecvDataSegmentLength=262144");
            int under = i.scsiCommand(IscsiTestInitiator.read10(0, 1), 4096, true, false, null, true);
            Response u = i.readResult(under).getValue();
            assertEquals(0x02, u.flags() & 0x06, "underflow");
            assertEquals(4096 - 512, u.intAt(44));
            int over = i.scsiCommand(IscsiTestInitiator.read10(0, 4), 1024, true, false, null, true);
            Map.Entry<byte[], Response> o = i.readResult(over);
            assertEquals(1024, o.getKey().length, "only the expected length is sent");
            assertEquals(0x04, o.getValue().flags() & 0x06, "overflow");
            assertEquals(1024, o.getValue().intAt(44));
        }
    }

    @Test
    void checkConditionCarriesSenseInScsiResponse() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            i.loginNormal();
            byte[] cdb = new byte[16];
            cdb[0] = (byte) 0xff; // no such opcode
            int tag = i.scsiCommand(cdb, 0, false, false, null, true);
            Response r = i.next();
            assertEquals(Bhs.OP_SCSI_RESPONSE, r.opcode());
            assertEquals(tag, r.itt());
            assertEquals(0x02, r.byte3(), "CHECK CONDITION");
            int senseLength = ByteBuffer.wrap(r.data).getShort(0);
            assertEquals(r.data.length - 2, senseLength);
            assertEquals(0x05, r.data[2 + 2] & 0x0f, "ILLEGAL REQUEST");
        }
    }

    @Test
    void cmdSnWindowAdvancesAndOutOfWindowCommandsAreDropped() {
        IscsiServerSettings settings = IscsiTestInitiator.settings().queueDepth(64).build();
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings)) {
            Response login = i.loginNormal();
            assertEquals(login.expCmdSn() + 63, login.maxCmdSn(), "window = queue depth");
            int tag = i.scsiCommand(IscsiTestInitiator.inquiry(36), 36, true, false, null, true);
            Response r = i.readResult(tag).getValue();
            assertEquals(i.cmdSn, r.expCmdSn());
            assertEquals(i.cmdSn + 63, r.maxCmdSn());
            i.cmdSn += 1000;
            i.scsiCommand(IscsiTestInitiator.inquiry(36), 36, true, false, null, true);
            assertFalse(i.hasNext(), "a command beyond MaxCmdSN is ignored");
            i.cmdSn -= 1001;
            int ok = i.scsiCommand(IscsiTestInitiator.inquiry(36), 36, true, false, null, true);
            assertEquals(ok, i.readResult(ok).getValue().itt());
        }
    }

    @Test
    void nopOutIsEchoedAndTaskManagementAnswers() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            i.loginNormal();
            byte[] ping = "ping-data".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            ByteBuf h = IscsiTestInitiator.bhs(Bhs.OP_NOP_OUT | Bhs.IMMEDIATE_BIT, 0x80, ping.length);
            h.setInt(16, 0x55);
            h.setInt(20, -1);
            h.setInt(24, i.cmdSn);
            i.send(h, ping);
            Response nop = i.next();
            assertEquals(Bhs.OP_NOP_IN, nop.opcode());
            assertEquals(0x55, nop.itt());
            assertEquals(-1, nop.ttt());
            assertArrayEquals(ping, nop.data);

            // write waiting for Data-Out, then ABORT TASK: answered at once, later Data-Out ignored
            int write = i.scsiCommand(IscsiTestInitiator.write10(0, 8), 4096, false, true, null, true);
            Response r2t = i.next();
            assertEquals(Bhs.OP_R2T, r2t.opcode());
            Response abort = taskManagement(i, 1, write);
            assertEquals(Bhs.OP_TASK_MGMT_RESPONSE, abort.opcode());
            assertEquals(0, abort.byte2(), "function complete");
            i.dataOut(write, r2t.ttt(), 0, new byte[4096], 0, true);
            assertFalse(i.hasNext(), "Data-Out of an aborted task is dropped");

            assertEquals(1, taskManagement(i, 1, 0x7777).byte2(), "finished task does not exist");
            assertEquals(0, taskManagement(i, 1, 0x7778, i.cmdSn).byte2(), "not yet received: complete");
            assertEquals(0, taskManagement(i, 5, 0).byte2(), "LUN reset");
            assertEquals(0, taskManagement(i, 6, 0).byte2(), "target warm reset");
            assertEquals(4, taskManagement(i, 8, 0).byte2(), "task reassign at ERL 0");
            assertEquals(0, taskManagement(i, 7, 0).byte2(), "target cold reset completes");
            i.channel.runPendingTasks();
            assertFalse(i.channel.isActive(), "and then the target closes the session's connection (RFC 7143 11.5.1)");
        }
    }

    private static Response taskManagement(IscsiTestInitiator i, int function, int referencedTag) {
        return taskManagement(i, function, referencedTag, i.cmdSn - 1);
    }

    private static Response taskManagement(IscsiTestInitiator i, int function, int referencedTag, int refCmdSn) {
        return i.taskManagement(function, referencedTag, refCmdSn);
    }

    @Test
    void malformedPdusAreRejectedAndTheSessionContinues() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            i.loginNormal();
            ByteBuf bogus = IscsiTestInitiator.bhs(0x1c, 0x80, 0);
            i.send(bogus, null);
            Response reject = i.next();
            assertEquals(Bhs.OP_REJECT, reject.opcode());
            assertEquals(Bhs.REJECT_COMMAND_NOT_SUPPORTED, reject.byte2());
            assertEquals(48, reject.data.length);

            // immediate data larger than the expected transfer length
            i.scsiCommand(IscsiTestInitiator.write10(0, 1), 512, false, true, new byte[1024], true);
            Response bad = i.next();
            assertEquals(Bhs.OP_REJECT, bad.opcode());
            assertEquals(Bhs.REJECT_PROTOCOL_ERROR, bad.byte2());

            int tag = i.scsiCommand(IscsiTestInitiator.inquiry(36), 36, true, false, null, true);
            assertEquals(0, i.readResult(tag).getValue().byte3(), "session still works");
        }
    }

    @Test
    void logoutAnswersAndCloses() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            i.loginNormal();
            ByteBuf h = IscsiTestInitiator.bhs(Bhs.OP_LOGOUT_REQUEST | Bhs.IMMEDIATE_BIT, 0x80, 0);
            h.setInt(16, 0x99);
            h.setInt(24, i.cmdSn);
            i.send(h, null);
            Response r = i.next();
            assertEquals(Bhs.OP_LOGOUT_RESPONSE, r.opcode());
            assertEquals(0x99, r.itt());
            assertEquals(0, r.byte2());
            i.channel.runPendingTasks();
            assertFalse(i.channel.isActive());
            assertEquals(0, i.server.sessions.size(), "session unregistered");
        }
    }

    @Test
    void digestsAreUsedAfterLoginWhenNegotiated() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            Response op = i.loginNormal("HeaderDigest=CRC32C,None", "DataDigest=CRC32C,None");
            assertEquals("CRC32C", op.keys().get("HeaderDigest"));
            assertEquals("CRC32C", op.keys().get("DataDigest"));
            assertTrue(i.headerDigest && i.dataDigest);
            int write = i.scsiCommand(IscsiTestInitiator.write10(0, 1), 512, false, true, new byte[512], true);
            assertEquals(0, i.readResult(write).getValue().byte3());
            int tag = i.scsiCommand(IscsiTestInitiator.inquiry(36), 36, true, false, null, true);
            assertEquals(36, i.readResult(tag).getKey().length);
        }
    }

    @Test
    void abortOfAnExecutingTaskWaitsForItAndSuppressesItsResponse() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            i.loginNormal();
            i.deferExecution();
            int read = i.scsiCommand(IscsiTestInitiator.read10(0, 8), 4096, true, false, null, true);
            ByteBuf h = IscsiTestInitiator.bhs(Bhs.OP_TASK_MGMT_REQUEST | Bhs.IMMEDIATE_BIT, 0x80 | 1, 0);
            h.setInt(16, 0x4242);
            h.setInt(20, read);
            h.setInt(24, i.cmdSn);
            h.setInt(32, i.cmdSn - 1);
            i.send(h, null);
            assertFalse(i.hasNext(), "abort answered only after the executing command ends");
            i.runDeferred();
            Response r = i.next();
            assertEquals(Bhs.OP_TASK_MGMT_RESPONSE, r.opcode(), "no Data-In for the aborted read");
            assertEquals(0x4242, r.itt());
            assertEquals(0, r.byte2());
        }
    }

    @Test
    void connectionLostMidCommandReleasesEveryBuffer() {
        IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build());
        i.loginNormal("InitialR2T=Yes");
        i.deferExecution();
        // one read executing on the "device", one write waiting for its Data-Out
        i.scsiCommand(IscsiTestInitiator.read10(0, 64), 32768, true, false, null, true);
        int write = i.scsiCommand(IscsiTestInitiator.write10(64, 64), 32768, false, true, new byte[8192], true);
        Response r2t = i.next();
        assertEquals(Bhs.OP_R2T, r2t.opcode());
        assertEquals(write, r2t.itt());
        assertEquals(8192, r2t.intAt(40), "R2T starts after the immediate data");
        i.channel.close();
        i.close(); // runs the read after the close and asserts every buffer was released
    }

    @Test
    void sessionReinstatementReplacesTheOldSession() {
        try (IscsiTestInitiator first = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            first.loginNormal();
            PduDecoder decoder = new PduDecoder();
            PduEncoder encoder = new PduEncoder();
            io.netty.channel.embedded.EmbeddedChannel second = new io.netty.channel.embedded.EmbeddedChannel(
                    decoder, encoder, new IscsiConnection(first.server, decoder, encoder));
            byte[] data = IscsiTestInitiator.keys("InitiatorName=" + IscsiTestInitiator.INITIATOR_IQN,
                    "TargetName=" + IscsiTestInitiator.TARGET_IQN, "AuthMethod=None");
            ByteBuf login = IscsiTestInitiator.bhs(0x43, 0x80 | 3, data.length);
            login.setLong(8, IscsiTestInitiator.ISID << 16);
            login.writeBytes(data).writeZero(Bhs.pad(data.length));
            second.writeInbound(login);
            second.runPendingTasks();
            first.channel.runPendingTasks();
            assertFalse(first.channel.isActive(), "old session closed by the reinstating login");
            assertEquals(1, first.server.sessions.size(), "the new session holds the nexus");
            ByteBuf response = second.readOutbound();
            assertEquals(Bhs.OP_LOGIN_RESPONSE, response.getByte(0) & 0x3f);
            assertEquals(0, response.getUnsignedShort(36));
            response.release();
            second.finishAndReleaseAll();
            assertEquals(0, first.server.sessions.size());
        }
    }

    @Test
    void idleInitiatorIsPingedAndDroppedWhenSilent() {
        IscsiServerSettings settings = IscsiServerSettings.builder().nopInInterval(java.time.Duration.ofSeconds(5)).build();
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings)) {
            i.channel.freezeTime();
            i.loginNormal();
            i.channel.advanceTimeBy(6, java.util.concurrent.TimeUnit.SECONDS);
            i.channel.runScheduledPendingTasks();
            Response ping = i.next();
            assertEquals(Bhs.OP_NOP_IN, ping.opcode());
            assertEquals(-1, ping.itt());
            assertTrue(ping.ttt() != -1, "target-initiated ping asks for an answer");
            ByteBuf answer = IscsiTestInitiator.bhs(Bhs.OP_NOP_OUT | Bhs.IMMEDIATE_BIT, 0x80, 0);
            answer.setInt(16, -1);
            answer.setInt(20, ping.ttt());
            answer.setInt(24, i.cmdSn);
            i.send(answer, null);
            assertFalse(i.hasNext(), "an answer to a ping gets no reply");
            i.channel.advanceTimeBy(5, java.util.concurrent.TimeUnit.SECONDS);
            i.channel.runScheduledPendingTasks();
            assertEquals(Bhs.OP_NOP_IN, i.next().opcode());
            assertTrue(i.channel.isActive());
            i.channel.advanceTimeBy(5, java.util.concurrent.TimeUnit.SECONDS);
            i.channel.runScheduledPendingTasks();
            assertFalse(i.channel.isActive(), "silent initiator dropped");
        }
    }

    @Test
    void loginThatNeverFinishesTimesOut() {
        IscsiServerSettings settings = IscsiTestInitiator.settings().loginTimeout(java.time.Duration.ofSeconds(3)).build();
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings)) {
            i.channel.freezeTime();
            i.login(0, false, 0, "InitiatorName=" + IscsiTestInitiator.INITIATOR_IQN,
                    "TargetName=" + IscsiTestInitiator.TARGET_IQN, "AuthMethod=None");
            i.channel.advanceTimeBy(4, java.util.concurrent.TimeUnit.SECONDS);
            i.channel.runScheduledPendingTasks();
            assertFalse(i.channel.isActive());
        }
    }

    @Test
    void wrongDataSnFailsTheCommandWithoutWritingAndKeepsTheSession() throws Exception {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            i.loginNormal("InitialR2T=Yes", "ImmediateData=No", "MaxRecvDataSegmentLength=512");
            int write = i.scsiCommand(IscsiTestInitiator.write10(100, 2), 1024, false, true, null, true);
            Response r2t = i.next();
            assertEquals(Bhs.OP_R2T, r2t.opcode());
            byte[] ones = new byte[512];
            Arrays.fill(ones, (byte) 1);
            i.dataOut(write, r2t.ttt(), 0, ones, 0, false);
            i.dataOut(write, r2t.ttt(), 512, ones, 0, true); // DataSN should be 1
            Response r = i.readResult(write).getValue();
            assertEquals(0x02, r.byte3(), "CHECK CONDITION");
            assertEquals(0x0b, r.data[2 + 2] & 0x0f, "ABORTED COMMAND");
            assertEquals(0x4b, r.data[2 + 12] & 0xff, "DATA PHASE ERROR");
            ByteBuffer stored = ByteBuffer.allocate(1024);
            i.device.read(100 * 512, stored);
            assertArrayEquals(new byte[1024], stored.array(), "nothing written");
            int tag = i.scsiCommand(IscsiTestInitiator.inquiry(36), 36, true, false, null, true);
            assertEquals(0, i.readResult(tag).getValue().byte3(), "session still works");
        }
    }

    @Test
    void openIscsiChapSequenceLogsIn() throws Exception {
        byte[] secret = "fixture-secret-12".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build(),
                b -> b.chap("fixtureuser", secret))) {
            Response auth = i.login(0, true, 1, "InitiatorName=" + IscsiTestInitiator.INITIATOR_IQN, "InitiatorAlias=vm",
                    "TargetName=" + IscsiTestInitiator.TARGET_IQN, "SessionType=Normal", "AuthMethod=CHAP,None");
            assertEquals("CHAP", auth.keys().get("AuthMethod"));
            assertEquals(0, auth.flags() & 0x80, "no transit before CHAP");
            Response challenge = i.login(0, false, 0, "CHAP_A=5");
            int id = Integer.parseInt(challenge.keys().get("CHAP_I"));
            byte[] c = java.util.HexFormat.of().parseHex(challenge.keys().get("CHAP_C").substring(2));
            java.security.MessageDigest md5 = java.security.MessageDigest.getInstance("MD5");
            md5.update((byte) id);
            md5.update(secret);
            md5.update(c);
            Response proved = i.login(0, true, 1, "CHAP_N=fixtureuser",
                    "CHAP_R=0x" + java.util.HexFormat.of().formatHex(md5.digest()));
            assertEquals(0, proved.shortAt(36));
            assertEquals(0x80 | 1, proved.flags(), "transit security -> operational");
            Response op = i.login(1, true, 3, "HeaderDigest=None", "DataDigest=None", "DefaultTime2Wait=2",
                    "DefaultTime2Retain=0", "IFMarker=No", "OFMarker=No", "ErrorRecoveryLevel=0", "InitialR2T=No",
                    "ImmediateData=Yes", "MaxBurstLength=16776192", "FirstBurstLength=262144", "MaxOutstandingR2T=1",
                    "MaxConnections=1", "DataPDUInOrder=Yes", "DataSequenceInOrder=Yes", "MaxRecvDataSegmentLength=262144");
            assertEquals(0, op.shortAt(36));
            assertEquals(0x80 | 1 << 2 | 3, op.flags());
            int tag = i.scsiCommand(IscsiTestInitiator.inquiry(36), 36, true, false, null, true);
            assertEquals(36, i.readResult(tag).getKey().length);
        }
    }

    @Test
    void loginTextSplitWithTheContinueBitIsJoined() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            byte[] all = IscsiTestInitiator.keys("InitiatorName=" + IscsiTestInitiator.INITIATOR_IQN,
                    "TargetName=" + IscsiTestInitiator.TARGET_IQN, "MaxRecvDataSegmentLength=65536");
            int cut = 20; // in the middle of a key
            i.send(i.loginHeader(0x40 | 1 << 2, cut), Arrays.copyOfRange(all, 0, cut));
            Response partial = i.next();
            assertEquals(0, partial.shortAt(36));
            assertEquals(0, partial.data.length, "empty answer while the request continues");
            assertEquals(1 << 2, partial.flags(), "CSG echoed, no transit");
            i.send(i.loginHeader(0x80 | 1 << 2 | 3, all.length - cut), Arrays.copyOfRange(all, cut, all.length));
            Response done = i.next();
            assertEquals(0, done.shortAt(36));
            assertEquals(0x80 | 1 << 2 | 3, done.flags());
            assertEquals("262144", done.keys().get("MaxRecvDataSegmentLength"));
        }
    }

    @Test
    void oversizedDataSegmentInFullFeaturePhaseIsRejectedAndTheSessionContinues() {
        IscsiServerSettings settings = IscsiTestInitiator.settings().maxRecvDataSegmentLength(8192).build();
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings)) {
            i.loginNormal("InitialR2T=Yes");
            int write = i.scsiCommand(IscsiTestInitiator.write10(0, 32), 16384, false, true, null, true);
            Response r2t = i.next();
            assertEquals(Bhs.OP_R2T, r2t.opcode());
            i.dataOut(write, r2t.ttt(), 0, new byte[16384], 0, true);
            Response reject = i.next();
            assertEquals(Bhs.OP_REJECT, reject.opcode());
            assertEquals(Bhs.REJECT_PROTOCOL_ERROR, reject.byte2());
            int tag = i.scsiCommand(IscsiTestInitiator.inquiry(36), 36, true, false, null, true);
            assertEquals(0, i.readResult(tag).getValue().byte3(), "framing resumed after the skipped segment");
        }
    }

    @Test
    void drainAsksForLogoutAnswersItAndCloses() {
        IscsiServerSettings settings = IscsiTestInitiator.settings().drainTimeout(java.time.Duration.ofSeconds(10)).build();
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings)) {
            i.channel.freezeTime();
            i.loginNormal();
            i.deferExecution();
            int read = i.scsiCommand(IscsiTestInitiator.read10(0, 1), 512, true, false, null, true);
            io.netty.util.concurrent.Future<Void> drained = i.connection.drain();
            Response async = i.next();
            assertEquals(Bhs.OP_ASYNC_MESSAGE, async.opcode());
            assertEquals(1, async.intAt(36) >>> 24, "AsyncEvent: target requests logout");
            assertEquals(5, async.shortAt(42), "seconds to log out");
            int refused = i.scsiCommand(IscsiTestInitiator.inquiry(36), 36, true, false, null, true);
            Response reject = i.next();
            assertEquals(Bhs.OP_REJECT, reject.opcode(), "no new commands while draining");
            assertEquals(Bhs.REJECT_WAITING_FOR_LOGOUT, reject.byte2());
            assertEquals(refused, ByteBuffer.wrap(reject.data).getInt(16));
            ByteBuf logout = IscsiTestInitiator.bhs(Bhs.OP_LOGOUT_REQUEST | Bhs.IMMEDIATE_BIT, 0x80, 0);
            logout.setInt(16, 0x77);
            logout.setInt(24, i.cmdSn);
            i.send(logout, null);
            assertFalse(i.hasNext(), "logout answered only after the executing read");
            i.runDeferred();
            assertEquals(read, i.readResult(read).getValue().itt(), "the executing read still completes");
            Response bye = i.next();
            assertEquals(Bhs.OP_LOGOUT_RESPONSE, bye.opcode());
            i.channel.runPendingTasks();
            assertFalse(i.channel.isActive());
            assertTrue(drained.isSuccess());
        }
    }

    @Test
    void drainClosesAfterTheGraceWhenTheInitiatorIgnoresTheLogoutRequest() {
        IscsiServerSettings settings = IscsiTestInitiator.settings().drainTimeout(java.time.Duration.ofSeconds(4)).build();
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings)) {
            i.channel.freezeTime();
            i.loginNormal();
            io.netty.util.concurrent.Future<Void> drained = i.connection.drain();
            assertEquals(Bhs.OP_ASYNC_MESSAGE, i.next().opcode());
            assertTrue(i.channel.isActive());
            i.channel.advanceTimeBy(2100, java.util.concurrent.TimeUnit.MILLISECONDS);
            i.channel.runScheduledPendingTasks();
            i.channel.runPendingTasks();
            assertFalse(i.channel.isActive());
            assertTrue(drained.isSuccess());
        }
    }

    @Test
    void aSecondDrainJoinsTheFirstAndBothCompleteWhenTheConnectionCloses() {
        IscsiServerSettings settings = IscsiTestInitiator.settings().drainTimeout(java.time.Duration.ofSeconds(4)).build();
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(settings)) {
            i.channel.freezeTime();
            i.loginNormal();
            io.netty.util.concurrent.Future<Void> first = i.connection.drain();
            io.netty.util.concurrent.Future<Void> second = i.connection.drain();
            assertEquals(Bhs.OP_ASYNC_MESSAGE, i.next().opcode());
            assertFalse(i.hasNext(), "one logout request, not two");
            i.channel.advanceTimeBy(2100, java.util.concurrent.TimeUnit.MILLISECONDS);
            i.channel.runScheduledPendingTasks();
            i.channel.runPendingTasks();
            assertFalse(i.channel.isActive());
            assertTrue(first.isSuccess(), "the first caller (an administrative change) is not left waiting");
            assertTrue(second.isSuccess());
        }
    }
    @Test
    void aLunAddedWhileLoggedInIsAnnouncedOnTheWireWithReportedLunsDataHasChanged() {
        try (IscsiTestInitiator i = IscsiTestInitiator.withMemoryLun(IscsiTestInitiator.settings().build())) {
            i.loginNormal();
            var target = (io.stripestack.targetserver.scsi.ScsiTarget) i.server.target(IscsiTestInitiator.TARGET_IQN).router();
            target.addUnit(1, new io.stripestack.targetserver.scsi.LogicalUnit(
                    new io.stripestack.blockdev.MemoryBlockDevice("lun1", 1 << 20, 512),
                    io.stripestack.targetserver.scsi.LogicalUnitIdentity.of(java.util.UUID.randomUUID()), false));
            int tag = i.scsiCommand(new byte[16], 0, false, false, null, true);
            Response r = i.next();
            assertEquals(tag, r.itt());
            assertEquals(0x02, r.byte3(), "CHECK CONDITION");
            assertEquals(0x06, r.data[2 + 2] & 0x0f, "UNIT ATTENTION");
            assertEquals(0x3f, r.data[2 + 12] & 0xff, "ASC: REPORTED LUNS DATA HAS CHANGED");
            assertEquals(0x0e, r.data[2 + 13] & 0xff, "ASCQ");
            int again = i.scsiCommand(new byte[16], 0, false, false, null, true);
            assertEquals(0, i.readResult(again).getValue().byte3(), "reported once");
        }
    }
}
