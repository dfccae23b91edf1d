package io.stripestack.remote;

import java.io.Closeable;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small iSCSI target for tests, on a plain socket, serving one LUN from memory: it logs in any initiator
 * (AuthMethod None, no digests, ImmediateData=No and InitialR2T=Yes so every write is driven by R2T), answers TEST
 * UNIT READY, READ CAPACITY(16), READ(16), WRITE(16), SYNCHRONIZE CACHE(16) and Logout as a working target does,
 * and once {@link #misbehave} is called breaks the protocol on every READ (or, for {@link Misbehaviour#BAD_R2T},
 * every WRITE) in the chosen way; {@link Misbehaviour#SILENT} stops answering anything at all, logins included,
 * while keeping every connection open, as a host that vanished from the network does. It counts the connections
 * it accepted.
 *
 * <p>Threads: one accepting thread, one thread per connection; the LUN's bytes are guarded by the LUN array's
 * monitor, the misbehaviour is volatile.
 */
public final class HostileTarget implements Closeable {
    public enum Misbehaviour {
        /** A working target. */
        NONE,
        /** Half the bytes asked for, final status GOOD, no underflow bit, residual 0. */
        SHORT_READ,
        /** One Data-In PDU more than asked for, past the end of the transfer. */
        OVERSIZE_DATA_IN,
        /** A Data-In header whose DataSegmentLength is 0xFFFFFF, followed by that many bytes if they are read. */
        HUGE_SEGMENT,
        /** The Data-In and the status carry another ITT than the command's. */
        WRONG_ITT,
        /** The connection closes after half of a Data-In PDU's data segment. */
        CLOSE_MID_PDU,
        /** A WRITE gets an R2T for bytes past the end of its transfer. */
        BAD_R2T,
        /** Nothing is answered any more, on old or new connections, and no connection is closed. */
        SILENT
    }

    public static final String IQN = "iqn.2026-12.test:hostile";
    public static final int BLOCK = 512;
    private static final int SEGMENT = 64 << 10;
    private static final int MAX_BURST = 256 << 10;
    private static final int OP_NOP_OUT = 0x00;
    private static final int OP_SCSI_COMMAND = 0x01;
    private static final int OP_LOGIN = 0x03;
    private static final int OP_DATA_OUT = 0x05;
    private static final int OP_LOGOUT = 0x06;

    private final byte[] lun;
    private final ServerSocket server;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final AtomicInteger connections = new AtomicInteger();
    private volatile Misbehaviour misbehaviour = Misbehaviour.NONE;

    private HostileTarget(long bytes) throws IOException {
        this.lun = new byte[Math.toIntExact(bytes)];
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "hostile-target-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** A working target with a zeroed LUN of {@code bytes} bytes, listening on a free loopback port. */
    public static HostileTarget start(long bytes) throws IOException {
        return new HostileTarget(bytes);
    }

    /** The URL of its LUN 0, for a remote member. */
    public String url() {
        return "iscsi://127.0.0.1:" + server.getLocalPort() + "/" + IQN + "/0";
    }

    /** From now on, every READ (or WRITE for BAD_R2T) is answered this way; SILENT answers nothing at all. */
    public void misbehave(Misbehaviour m) {
        misbehaviour = m;
    }

    /** Connections accepted since start. */
    public int connections() {
        return connections.get();
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket s : open) {
            s.close();
        }
    }

    private void accept() {
        try {
            while (true) {
                Socket s = server.accept();
                connections.incrementAndGet();
                open.add(s);
                Thread t = new Thread(() -> serve(s), "hostile-target-connection");
                t.setDaemon(true);
                t.start();
            }
        } catch (IOException closed) {
            // close() ended the listening socket
        }
    }

    private void serve(Socket s) {
        try (s) {
            s.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            Connection c = new Connection(in, out);
            while (true) {
                ByteBuffer req = c.readPdu();
                if (misbehaviour == Misbehaviour.SILENT) {
                    continue; // read and drop: the peer sees a target that no longer answers
                }
                int op = req.get(0) & 0x3f;
                switch (op) {
                    case OP_LOGIN -> c.login(req);
                    case OP_SCSI_COMMAND -> c.command(req);
                    case OP_LOGOUT -> {
                        ByteBuffer r = c.response(0x26, 0x80, req);
                        c.send(r, new byte[0], 0, 0);
                        return;
                    }
                    case OP_NOP_OUT, OP_DATA_OUT -> { } // no pings of ours to answer; stray Data-Out is dropped
                    default -> throw new IOException("unexpected opcode 0x" + Integer.toHexString(op));
                }
            }
        } catch (IOException e) {
            // the initiator hung up, or a misbehaviour closed the connection
        } finally {
            open.remove(s);
        }
    }

    /** One connection's state: its streams, the StatSN it is at and the last segment it read. */
    private final class Connection {
        private final DataInputStream in;
        private final OutputStream out;
        private byte[] segment = new byte[0];
        private int statSn = 1;

        Connection(DataInputStream in, OutputStream out) {
            this.in = in;
            this.out = out;
        }

        ByteBuffer readPdu() throws IOException {
            byte[] h = new byte[48];
            in.readFully(h);
            int ahs = (h[4] & 0xff) * 4;
            int dsl = ((h[5] & 0xff) << 16) | ((h[6] & 0xff) << 8) | (h[7] & 0xff);
            in.readFully(new byte[ahs]);
            segment = new byte[(dsl + 3) & ~3];
            in.readFully(segment);
            return ByteBuffer.wrap(h);
        }

        void login(ByteBuffer req) throws IOException {
            int csg = (req.get(1) >> 2) & 0x03;
            int nsg = req.get(1) & 0x03;
            boolean transit = (req.get(1) & 0x80) != 0;
            ByteBuffer r = ByteBuffer.allocate(48);
            r.put(0, (byte) 0x23).put(1, (byte) ((transit ? 0x80 : 0) | csg << 2 | (transit ? nsg : 0)));
            r.put(8, req.array(), 8, 6);                      // ISID
            r.putShort(14, (short) 1);                        // TSIH
            r.putInt(16, req.getInt(16));                     // ITT
            r.putInt(24, statSn++);
            r.putInt(28, req.getInt(24));                     // ExpCmdSN: the login's own CmdSN
            r.putInt(32, req.getInt(24) + 64);
            String keys = csg == 1 ? "HeaderDigest=None\0DataDigest=None\0ImmediateData=No\0InitialR2T=Yes\0"
                    + "MaxRecvDataSegmentLength=" + SEGMENT + "\0MaxBurstLength=" + MAX_BURST + "\0"
                    + "FirstBurstLength=" + SEGMENT + "\0" : "";
            byte[] data = keys.getBytes(StandardCharsets.US_ASCII);
            send(r, data, 0, data.length);
        }

        void command(ByteBuffer req) throws IOException {
            int opcode = req.get(32) & 0xff;
            switch (opcode) {
                case 0x00, 0x35, 0x91 -> status(req, 0); // TEST UNIT READY, SYNCHRONIZE CACHE(10) and (16)
                case 0x9e -> {                            // READ CAPACITY(16)
                    byte[] capacity = new byte[32];
                    ByteBuffer.wrap(capacity).putLong(0, lun.length / BLOCK - 1).putInt(8, BLOCK);
                    ByteBuffer r = response(0x25, 0x81, req);
                    r.putInt(24, statSn++);
                    send(r, capacity, 0, capacity.length);
                }
                case 0x88 -> read(req);
                case 0x8a -> write(req);
                default -> status(req, 2);                // CHECK CONDITION without sense: not supported here
            }
        }

        private void read(ByteBuffer req) throws IOException {
            long lba = req.getLong(34);
            int length = req.getInt(20);
            byte[] data = new byte[length];
            synchronized (lun) {
                System.arraycopy(lun, Math.toIntExact(lba * BLOCK), data, 0, length);
            }
            Misbehaviour m = misbehaviour;
            int itt = m == Misbehaviour.WRONG_ITT ? req.getInt(16) ^ 0x5a5a00 : req.getInt(16);
            int sendBytes = m == Misbehaviour.SHORT_READ ? length / 2 : length;
            int dataSn = 0;
            for (int at = 0; at < sendBytes; at += SEGMENT, dataSn++) {
                int n = Math.min(SEGMENT, sendBytes - at);
                boolean last = at + n == sendBytes && m != Misbehaviour.OVERSIZE_DATA_IN;
                ByteBuffer r = response(0x25, last ? 0x81 : 0, req);
                r.putInt(16, itt).putInt(36, dataSn).putInt(40, at);
                if (last) {
                    r.putInt(24, statSn++);
                }
                if (m == Misbehaviour.HUGE_SEGMENT) {
                    r.putInt(4, 0xFFFFFF);                // 16 MiB - 1 announced
                    out.write(r.array());
                    out.flush();
                    return;                               // the bytes follow only if they are read: none come
                }
                if (m == Misbehaviour.CLOSE_MID_PDU) {
                    r.putInt(4, n);
                    out.write(r.array());
                    out.write(data, at, n / 2);
                    out.flush();
                    throw new IOException("closing in the middle of a PDU, as told");
                }
                send(r, data, at, n);
            }
            if (m == Misbehaviour.OVERSIZE_DATA_IN) {
                ByteBuffer r = response(0x25, 0x81, req);
                r.putInt(16, itt).putInt(24, statSn++).putInt(36, dataSn).putInt(40, sendBytes);
                send(r, new byte[BLOCK], 0, BLOCK);       // a block past the end of the transfer
            }
        }

        private void write(ByteBuffer req) throws IOException {
            long lba = req.getLong(34);
            int length = req.getInt(20);
            byte[] data = new byte[length];
            int r2tSn = 0;
            for (int burst = 0; burst < length; burst += MAX_BURST, r2tSn++) {
                int n = Math.min(MAX_BURST, length - burst);
                ByteBuffer r2t = response(0x31, 0x80, req);
                int ttt = 0x100 + r2tSn;
                r2t.putInt(20, ttt).putInt(24, statSn).putInt(36, r2tSn);
                if (misbehaviour == Misbehaviour.BAD_R2T) {
                    r2t.putInt(40, length).putInt(44, BLOCK); // the block after the transfer's end
                } else {
                    r2t.putInt(40, burst).putInt(44, n);
                }
                send(r2t, new byte[0], 0, 0);
                for (int got = 0; got < n; ) {
                    ByteBuffer pdu = readPdu();
                    if ((pdu.get(0) & 0x3f) != OP_DATA_OUT) {
                        throw new IOException("expected Data-Out, got opcode 0x" + Integer.toHexString(pdu.get(0)));
                    }
                    int dsl = pdu.getInt(4) & 0xffffff;
                    System.arraycopy(segment, 0, data, pdu.getInt(40), dsl);
                    got += dsl;
                }
            }
            synchronized (lun) {
                System.arraycopy(data, 0, lun, Math.toIntExact(lba * BLOCK), length);
            }
            status(req, 0);
        }

        private void status(ByteBuffer req, int status) throws IOException {
            ByteBuffer r = response(0x21, 0x80, req);
            r.put(3, (byte) status).putInt(24, statSn++);
            send(r, new byte[0], 0, 0);
        }

        /** A response header to {@code req}: its ITT, the command window opened 64 beyond its CmdSN. */
        ByteBuffer response(int opcode, int flags, ByteBuffer req) {
            ByteBuffer r = ByteBuffer.allocate(48);
            r.put(0, (byte) opcode).put(1, (byte) flags);
            r.putInt(16, req.getInt(16));
            r.putInt(20, -1);                                // TTT: none
            r.putInt(28, req.getInt(24) + 1);
            r.putInt(32, req.getInt(24) + 64);
            return r;
        }

        void send(ByteBuffer header, byte[] data, int from, int length) throws IOException {
            header.putInt(4, length);                        // no AHS
            out.write(header.array());
            out.write(data, from, length);
            out.write(new byte[(4 - (length & 3)) & 3]);
            out.flush();
        }
    }

}
