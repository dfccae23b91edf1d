package io.stripestack.targetserver.iscsi;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A byte-level iSCSI initiator over a real TCP socket, for hostile tests: it sends whatever PDU it
 * is told to, with no checks of its own, and reads the target's PDUs one by one.
 */
final class RawIscsiClient implements AutoCloseable {
    static final long ISID = 0x800000001234L;

    /** One PDU from the target: its 48-byte header and its data segment. */
    record Pdu(ByteBuffer header, byte[] data) {
        int opcode() { return header.get(0) & 0x3f; }
        int flags() { return header.get(1) & 0xff; }
        int byte2() { return header.get(2) & 0xff; }
        int byte3() { return header.get(3) & 0xff; }
        int itt() { return header.getInt(16); }
        int ttt() { return header.getInt(20); }
        int statSn() { return header.getInt(24); }
        int bufferOffset() { return header.getInt(40); }
        int desiredLength() { return header.getInt(44); }
        /** A login response's status class and detail. */
        int loginStatus() { return header.getShort(36) & 0xffff; }

        Map<String, String> keys() {
            Map<String, String> keys = new LinkedHashMap<>();
            for (String pair : new String(data, StandardCharsets.UTF_8).split("\0")) {
                int eq = pair.indexOf('=');
                if (eq > 0) {
                    keys.put(pair.substring(0, eq), pair.substring(eq + 1));
                }
            }
            return keys;
        }
    }

    final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    /** The ISID of this client's logins (another one makes another session of the same initiator name). */
    long isid = ISID;
    private int itt = 1;
    int cmdSn = 1;
    private int expStatSn;

    RawIscsiClient(int port, int receiveBuffer) throws IOException {
        this(null, port, receiveBuffer);
    }

    /**
     * A client whose connection comes from {@code sourceAddress} (a loopback address such as 127.0.0.2, so that
     * one test can be several hosts), or from any address when null.
     */
    RawIscsiClient(String sourceAddress, int port, int receiveBuffer) throws IOException {
        socket = new Socket();
        if (receiveBuffer > 0) {
            socket.setReceiveBufferSize(receiveBuffer);
        }
        if (sourceAddress != null) {
            socket.bind(new InetSocketAddress(sourceAddress, 0));
        }
        socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
        socket.setSoTimeout(10_000);
        in = new DataInputStream(socket.getInputStream());
        out = socket.getOutputStream();
    }

    RawIscsiClient(int port) throws IOException {
        this(port, 0);
    }

    static byte[] text(String... pairs) {
        StringBuilder sb = new StringBuilder();
        for (String pair : pairs) {
            sb.append(pair).append('\0');
        }
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    static ByteBuffer header(int opcode, int flags, int dataLength) {
        ByteBuffer h = ByteBuffer.allocate(48);
        h.put(0, (byte) opcode);
        h.put(1, (byte) flags);
        h.putInt(4, dataLength & 0xffffff);
        return h;
    }

    void send(ByteBuffer header, byte[] data) throws IOException {
        byte[] pdu = new byte[48 + (data == null ? 0 : (data.length + 3) & ~3)];
        header.get(0, pdu, 0, 48);
        if (data != null) {
            System.arraycopy(data, 0, pdu, 48, data.length);
        }
        out.write(pdu);
        out.flush();
    }

    /** One login request; returns the target's response. */
    Pdu login(int currentStage, boolean transit, int nextStage, byte[] keys) throws IOException {
        ByteBuffer h = header(0x43, (transit ? 0x80 : 0) | currentStage << 2 | (transit ? nextStage : 0), keys.length);
        h.putLong(8, isid << 16);
        h.putInt(16, itt);
        h.putInt(24, cmdSn);
        h.putInt(28, expStatSn);
        send(h, keys);
        Pdu response = next();
        expStatSn = response.statSn() + 1;
        return response;
    }

    /**
     * Logs in to a target without authentication, straight to full feature phase, and takes the unit
     * attention a new session's first command gets.
     */
    Pdu loginNormal(String target, String initiator, String... operational) throws IOException {
        String[] pairs = new String[3 + operational.length];
        pairs[0] = "InitiatorName=" + initiator;
        pairs[1] = "TargetName=" + target;
        pairs[2] = "SessionType=Normal";
        System.arraycopy(operational, 0, pairs, 3, operational.length);
        Pdu answer = login(1, true, 3, text(pairs));
        if (answer.loginStatus() == 0) {
            takeUnitAttention();
        }
        return answer;
    }

    /** TEST UNIT READY until GOOD: a new nexus's first command is answered UNIT ATTENTION. */
    void takeUnitAttention() throws IOException {
        for (int i = 0; i < 4; i++) {
            int tag = scsiCommand(new byte[16], 0, false, false, false, null, true);
            if (readResult(tag, 0).getValue().byte3() == 0) {
                return;
            }
        }
        throw new IOException("TEST UNIT READY never answered GOOD");
    }

    /**
     * Logs in with CHAP (MD5) answering with {@code secret}; returns the response to the CHAP answer,
     * or the first failed response.
     */
    Pdu loginChap(String target, String initiator, String user, byte[] secret) throws IOException {
        Pdu offer = login(0, false, 0, text("InitiatorName=" + initiator, "TargetName=" + target,
                "SessionType=Normal", "AuthMethod=CHAP"));
        if (offer.loginStatus() != 0) {
            return offer;
        }
        Pdu challenge = login(0, false, 0, text("CHAP_A=5"));
        if (challenge.loginStatus() != 0) {
            return challenge;
        }
        int id = Integer.parseInt(challenge.keys().get("CHAP_I"));
        byte[] c = HexFormat.of().parseHex(challenge.keys().get("CHAP_C").substring(2));
        return login(0, true, 1, text("CHAP_N=" + user, "CHAP_R=0x" + HexFormat.of().formatHex(chapResponse(id, secret, c))));
    }

    static byte[] chapResponse(int id, byte[] secret, byte[] challenge) {
        try {
            MessageDigest md5 = MessageDigest.getInstance("MD5");
            md5.update((byte) id);
            md5.update(secret);
            md5.update(challenge);
            return md5.digest();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /** Sends a SCSI Command PDU and returns its ITT. */
    int scsiCommand(byte[] cdb, int expectedLength, boolean read, boolean write, boolean immediate, byte[] immediateData,
            boolean finalBit) throws IOException {
        int tag = itt++;
        ByteBuffer h = header(0x01 | (immediate ? 0x40 : 0), (finalBit ? 0x80 : 0) | (read ? 0x40 : 0) | (write ? 0x20 : 0) | 1,
                immediateData == null ? 0 : immediateData.length);
        h.putInt(16, tag);
        h.putInt(20, expectedLength);
        h.putInt(24, cmdSn);
        if (!immediate) {
            cmdSn++;
        }
        h.putInt(28, expStatSn);
        h.put(32, cdb);
        send(h, immediateData);
        return tag;
    }

    void dataOut(int tag, int ttt, int offset, int dataSn, boolean finalBit, byte[] data) throws IOException {
        ByteBuffer h = header(0x05, finalBit ? 0x80 : 0, data.length);
        h.putInt(16, tag);
        h.putInt(20, ttt);
        h.putInt(28, expStatSn);
        h.putInt(36, dataSn);
        h.putInt(40, offset);
        send(h, data);
    }

    /** Sends an immediate Logout Request (close the session); the answer is read like any PDU. */
    void sendLogout() throws IOException {
        ByteBuffer h = header(0x06 | 0x40, 0x80, 0);
        h.putInt(16, itt++);
        h.putInt(24, cmdSn);
        h.putInt(28, expStatSn);
        send(h, null);
    }

    /** Answers a NOP-In that asks for it (a target's ping) with a NOP-Out, as a live initiator does. */
    void answerNopIn(Pdu nopIn) throws IOException {
        if (nopIn.ttt() == 0xffffffff) {
            return;
        }
        ByteBuffer h = header(0x00 | 0x40, 0x80, 0);
        h.putInt(16, 0xffffffff);
        h.putInt(20, nopIn.ttt());
        h.putInt(24, cmdSn);
        h.putInt(28, expStatSn);
        send(h, null);
    }

    Pdu next() throws IOException {
        byte[] header = new byte[48];
        in.readFully(header);
        ByteBuffer h = ByteBuffer.wrap(header);
        int ahs = (h.get(4) & 0xff) * 4;
        int dataLength = h.getInt(4) & 0xffffff;
        in.skipNBytes(ahs);
        byte[] data = new byte[dataLength];
        in.readFully(data);
        in.skipNBytes((4 - dataLength % 4) % 4);
        return new Pdu(h, data);
    }

    /** The next PDU that is not a NOP-In or R2T of another command, or null when the target closed. */
    Pdu nextOrNull() throws IOException {
        try {
            return next();
        } catch (EOFException | java.net.SocketException e) {
            return null;
        }
    }

    /** Whether the target closed the connection within the socket timeout (reads and drops PDUs until then). */
    boolean closedByTarget() throws IOException {
        try {
            while (true) {
                next();
            }
        } catch (EOFException | java.net.SocketException e) {
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        }
    }

    /** Data-In PDUs of {@code tag} gathered until its status; returns the data and the status PDU. */
    Map.Entry<byte[], Pdu> readResult(int tag, int expectedLength) throws IOException {
        byte[] data = new byte[expectedLength];
        while (true) {
            Pdu pdu = next();
            if (pdu.itt() != tag) {
                continue;
            }
            if (pdu.opcode() == 0x25) {
                System.arraycopy(pdu.data(), 0, data, pdu.bufferOffset(), pdu.data().length);
                if ((pdu.flags() & 0x01) != 0) {
                    return Map.entry(data, pdu);
                }
            } else if (pdu.opcode() == 0x21 || pdu.opcode() == 0x3f) {
                return Map.entry(data, pdu);
            }
        }
    }

    static byte[] read10(long lba, int blocks) {
        return ByteBuffer.allocate(16).put(0, (byte) 0x28).putInt(2, (int) lba).putShort(7, (short) blocks).array();
    }

    static byte[] write10(long lba, int blocks) {
        return ByteBuffer.allocate(16).put(0, (byte) 0x2a).putInt(2, (int) lba).putShort(7, (short) blocks).array();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
