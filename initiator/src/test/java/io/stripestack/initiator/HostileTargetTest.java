package io.stripestack.initiator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The initiator against a target that breaks the protocol on purpose: a minimal target on a socket that logs
 * in (granting CRC32C digests when they are asked for, and then checking the initiator's own), answers TEST UNIT
 * READY (with a NOP-In ping after it when digests are in force) and READ CAPACITY(16) correctly, and answers any
 * other command with one chosen misbehaviour: Data-In for a WRITE, which would write into the data being sent, a
 * Data-In whose header or data digest is wrong, Data-In that does not cover a READ's transfer exactly (short
 * without residual, overlapping, out of DataSN order), an R2T for a READ, or a NOP-In announcing a data segment
 * far beyond our MaxRecvDataSegmentLength. A READ that fails so must hand back zeros, never what its buffer held
 * before.
 */
class HostileTargetTest {
    private static final int LOGIN_RESPONSE = 0x23;
    private static final int SCSI_RESPONSE = 0x21;
    private static final int DATA_IN = 0x25;
    private static final int NOP_IN = 0x20;

    private enum Misbehaviour {
        DATA_IN_FOR_A_WRITE, BAD_HEADER_DIGEST, BAD_DATA_DIGEST,
        /** 512 of the 1024 bytes, GOOD status, no underflow, residual 0. */
        SHORT_READ,
        /** 512 of the 1024 bytes, GOOD status, underflow with residual 512: an honest short read. */
        SHORT_READ_OWNED,
        /** Bytes 0-511, then 256-767 (an overlap), then 768-1023: 1024 bytes sent, but not the transfer. */
        OVERLAPPING_DATA_IN,
        /** The second Data-In carries DataSN 5. */
        WRONG_DATA_SN,
        /** An R2T for a READ. */
        R2T_FOR_A_READ,
        /** A NOP-In announcing a 0xFFFFFF-byte data segment, none of which follows. */
        HUGE_NOP_IN
    }

    @Test
    void dataInForAWriteFailsTheConnectionAndLeavesTheCallersDataAlone() throws Exception {
        try (ServerSocket server = hostileTarget(Misbehaviour.DATA_IN_FOR_A_WRITE)) {
            byte[] data = new byte[512];
            Arrays.fill(data, (byte) 0x11);
            try (IscsiInitiator initiator = IscsiInitiator.login(url(server), InitiatorOptions.defaults())) {
                IOException e = assertThrows(IOException.class, () -> initiator.write16(0, ByteBuffer.wrap(data)));
                assertTrue(e.getMessage().contains("Data-In") || String.valueOf(e.getCause()).contains("Data-In"),
                        e.toString());
            }
            byte[] untouched = new byte[512];
            Arrays.fill(untouched, (byte) 0x11);
            assertArrayEquals(untouched, data, "the target's Data-In must not land in the data being written");
        }
    }

    @Test
    void aWrongDataDigestFailsTheReadAndDropsTheConnection() throws Exception {
        assertDigestErrorDetected(Misbehaviour.BAD_DATA_DIGEST, "data digest error");
    }

    @Test
    void aWrongHeaderDigestFailsTheReadAndDropsTheConnection() throws Exception {
        assertDigestErrorDetected(Misbehaviour.BAD_HEADER_DIGEST, "header digest error");
    }

    @ParameterizedTest
    @EnumSource(value = Misbehaviour.class, names = {"SHORT_READ", "OVERLAPPING_DATA_IN", "WRONG_DATA_SN",
            "R2T_FOR_A_READ", "HUGE_NOP_IN"})
    void dataInThatDoesNotCoverTheTransferExactlyIsAProtocolErrorAndLeavesOnlyZeros(Misbehaviour misbehaviour)
            throws Exception {
        try (ServerSocket server = hostileTarget(misbehaviour);
             IscsiInitiator initiator = IscsiInitiator.login(url(server), InitiatorOptions.defaults())) {
            ByteBuffer earlier = ByteBuffer.allocate(1024);
            Arrays.fill(earlier.array(), (byte) 0x77); // what the buffer held before: another tenant's bytes
            IOException e = assertThrows(IOException.class, () -> initiator.read16(0, earlier));
            assertTrue(e instanceof IscsiProtocolException || e.getCause() instanceof IscsiProtocolException,
                    e.toString());
            assertArrayEquals(new byte[1024], earlier.array(), "a failed read hands back zeros only");
            assertEquals(0, earlier.position(), "the buffer as it was given");
        }
    }

    @Test
    void aShortReadTheTargetOwnsUpToFailsTheCommandOnly() throws Exception {
        try (ServerSocket server = hostileTarget(Misbehaviour.SHORT_READ_OWNED);
             IscsiInitiator initiator = IscsiInitiator.login(url(server), InitiatorOptions.defaults())) {
            ByteBuffer earlier = ByteBuffer.allocate(1024);
            Arrays.fill(earlier.array(), (byte) 0x77);
            IOException e = assertThrows(IOException.class, () -> initiator.read16(0, earlier));
            assertFalse(e instanceof IscsiProtocolException, e.toString());
            assertTrue(e.getMessage().contains("returned 512 of 1024 bytes"), e.getMessage());
            assertArrayEquals(new byte[1024], earlier.array(), "a failed read hands back zeros only");
            assertTrue(initiator.isConnected(), "an honest short read keeps the connection");
        }
    }

    private static void assertDigestErrorDetected(Misbehaviour misbehaviour, String expected) throws Exception {
        try (ServerSocket server = hostileTarget(misbehaviour)) {
            InitiatorOptions options = InitiatorOptions.defaults().withDigests(Digest.CRC32C, Digest.CRC32C);
            try (IscsiInitiator initiator = IscsiInitiator.login(url(server), options)) {
                assertTrue(initiator.negotiated().headerDigest() && initiator.negotiated().dataDigest(),
                        initiator.negotiated().toString());
                // login, TEST UNIT READY and READ CAPACITY(16) passed with digests both ways, so ours are right
                assertEquals(2048, initiator.capacity().blocks());
                IOException e = assertThrows(IOException.class, () -> initiator.read16(0, ByteBuffer.allocate(512)));
                assertTrue(e.getMessage().contains(expected) || String.valueOf(e.getCause()).contains(expected),
                        e.toString());
                assertFalse(initiator.isConnected(), "a digest error must end the connection");
            }
        }
    }

    private static ServerSocket hostileTarget(Misbehaviour misbehaviour) throws IOException {
        ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Thread target = new Thread(() -> serve(server, misbehaviour), "hostile-target");
        target.setDaemon(true);
        target.start();
        return server;
    }

    private static IscsiUrl url(ServerSocket server) {
        return new IscsiUrl("127.0.0.1", server.getLocalPort(), "iqn.2026-12.test:hostile", 0, null, null);
    }

    /** Serves one connection until the initiator hangs up, misbehaving on every command but the two of login. */
    private static void serve(ServerSocket server, Misbehaviour misbehaviour) {
        try (Socket s = server.accept()) {
            DataInputStream in = new DataInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            boolean digests = false; // in force from the first PDU after the login's last response
            int statSn = 100;
            while (true) {
                ByteBuffer req = readPdu(in, digests);
                int op = req.get(0) & 0x3f;
                if (op == 0x03) {
                    int csg = (req.get(1) >> 2) & 0x03;
                    int nsg = req.get(1) & 0x03;
                    ByteBuffer r = header(LOGIN_RESPONSE, 0x80 | csg << 2 | nsg, req);
                    r.putShort(14, (short) 1);        // TSIH
                    r.putInt(24, statSn++);
                    boolean grantsDigests = misbehaviour == Misbehaviour.BAD_HEADER_DIGEST
                            || misbehaviour == Misbehaviour.BAD_DATA_DIGEST;
                    byte[] keys = csg == 1 && grantsDigests
                            ? "HeaderDigest=CRC32C\0DataDigest=CRC32C\0".getBytes(StandardCharsets.US_ASCII)
                            : new byte[0];
                    send(out, r, keys, false, null);
                    digests = nsg == 3 && grantsDigests;
                    continue;
                }
                if (op == 0x01) {
                    int opcode = req.get(32) & 0xff;
                    if (opcode == 0x00) {             // TEST UNIT READY
                        ByteBuffer r = header(SCSI_RESPONSE, 0x80, req);
                        r.putInt(24, statSn++);
                        send(out, r, new byte[0], digests, null);
                        if (digests) { // a ping with 5 bytes: padding inside both directions' data digests
                            ByteBuffer ping = header(NOP_IN, 0x80, req);
                            ping.putInt(16, -1).putInt(20, 0x1234).putInt(24, statSn);
                            send(out, ping, "ping!".getBytes(StandardCharsets.US_ASCII), true, null);
                        }
                    } else if (opcode == 0x9e) {      // READ CAPACITY(16): 2048 blocks of 512 bytes
                        ByteBuffer capacity = ByteBuffer.allocate(32).putLong(0, 2047).putInt(8, 512);
                        ByteBuffer r = header(DATA_IN, 0x80 | 0x01, req);
                        r.putInt(24, statSn++);
                        send(out, r, capacity.array(), digests, null);
                    } else if (misbehaviour.compareTo(Misbehaviour.SHORT_READ) >= 0) {
                        statSn = answerReadBadly(out, req, misbehaviour, statSn);
                    } else {
                        byte[] payload = new byte[512];
                        Arrays.fill(payload, (byte) 0xee);
                        ByteBuffer r = header(DATA_IN, 0x80 | 0x01, req); // final, with status
                        r.putInt(24, statSn++);
                        send(out, r, payload, digests, misbehaviour);
                    }
                }
            }
        } catch (IOException e) {
            // the initiator hung up: what it should do
        }
    }

    /** Answers a READ of 1024 bytes the way {@code m} says; returns the next StatSN. */
    private static int answerReadBadly(OutputStream out, ByteBuffer req, Misbehaviour m, int statSn)
            throws IOException {
        byte[] half = new byte[512];
        Arrays.fill(half, (byte) 0xee);
        switch (m) {
            case SHORT_READ, SHORT_READ_OWNED -> {
                ByteBuffer r = header(DATA_IN, 0x80 | 0x01 | (m == Misbehaviour.SHORT_READ_OWNED ? 0x02 : 0), req);
                r.putInt(24, statSn++).putInt(44, m == Misbehaviour.SHORT_READ_OWNED ? 512 : 0);
                send(out, r, half, false, null);
            }
            case OVERLAPPING_DATA_IN, WRONG_DATA_SN -> {
                ByteBuffer first = header(DATA_IN, 0, req);
                send(out, first, half, false, null);
                ByteBuffer second = header(DATA_IN, 0, req);
                second.putInt(36, m == Misbehaviour.WRONG_DATA_SN ? 5 : 1).putInt(40, m == Misbehaviour.WRONG_DATA_SN
                        ? 512 : 256);
                send(out, second, half, false, null);
                ByteBuffer last = header(DATA_IN, 0x80 | 0x01, req);
                last.putInt(24, statSn++).putInt(36, 2).putInt(40, 768);
                send(out, last, Arrays.copyOf(half, 256), false, null);
            }
            case HUGE_NOP_IN -> { // refused on its header: nothing is allocated or waited for
                ByteBuffer ping = header(NOP_IN, 0x80, req);
                ping.putInt(16, -1).putInt(20, 0x1234).putInt(24, statSn).putInt(4, 0xFFFFFF);
                out.write(ping.array());
                out.flush();
            }
            default -> { // R2T_FOR_A_READ
                ByteBuffer r2t = header(0x31, 0x80, req);
                r2t.putInt(20, 7).putInt(24, statSn).putInt(40, 0).putInt(44, 512);
                send(out, r2t, new byte[0], false, null);
            }
        }
        return statSn;
    }

    /** Header, data, padding and (when in force) digests, the one {@code spoiled} names made wrong. */
    private static void send(OutputStream out, ByteBuffer header, byte[] data, boolean digests, Misbehaviour spoiled)
            throws IOException {
        header.putInt(4, data.length);                       // no AHS
        out.write(header.array());
        if (digests) {
            int spoil = spoiled == Misbehaviour.BAD_HEADER_DIGEST ? 1 : 0;
            out.write(digest(header.array(), 48, spoil));
        }
        byte[] padded = Arrays.copyOf(data, (data.length + 3) / 4 * 4);
        out.write(padded);
        if (digests && data.length > 0) {
            int spoil = spoiled == Misbehaviour.BAD_DATA_DIGEST ? 1 : 0;
            out.write(digest(padded, padded.length, spoil));
        }
        out.flush();
    }

    /** CRC32C, least significant byte first (RFC 7143 appendix B), its lowest bit flipped by {@code spoil}. */
    private static byte[] digest(byte[] bytes, int length, int spoil) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, length);
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) crc.getValue() ^ spoil).array();
    }

    private static ByteBuffer header(int opcode, int flags, ByteBuffer request) {
        ByteBuffer r = ByteBuffer.allocate(48);
        r.put(0, (byte) opcode).put(1, (byte) flags);
        r.putInt(16, request.getInt(16));                  // ITT
        r.putInt(28, request.getInt(24) + 1);              // ExpCmdSN
        r.putInt(32, request.getInt(24) + 64);             // MaxCmdSN
        if (opcode == LOGIN_RESPONSE) {
            r.put(8, request.array(), 8, 6);               // ISID
            r.putInt(28, request.getInt(24));
            r.putInt(32, request.getInt(24) + 64);
        }
        return r;
    }

    /** One request; with digests in force, the initiator's digests are checked and a wrong one ends the test target. */
    private static ByteBuffer readPdu(DataInputStream in, boolean digests) throws IOException {
        byte[] h = new byte[48];
        in.readFully(h);
        if (digests) {
            expectDigest(in, h, 48);
        }
        int ahs = (h[4] & 0xff) * 4;
        int dsl = ((h[5] & 0xff) << 16) | ((h[6] & 0xff) << 8) | (h[7] & 0xff);
        byte[] segment = new byte[ahs + (dsl + 3) / 4 * 4];
        in.readFully(segment);
        if (digests && dsl > 0) {
            expectDigest(in, segment, segment.length);
        }
        return ByteBuffer.wrap(h);
    }

    private static void expectDigest(DataInputStream in, byte[] covered, int length) throws IOException {
        byte[] received = new byte[4];
        in.readFully(received);
        if (!Arrays.equals(received, digest(covered, length, 0))) {
            throw new IOException("the initiator sent a wrong digest");
        }
    }
}
