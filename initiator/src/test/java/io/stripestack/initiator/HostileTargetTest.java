package io.stripestack.initiator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * The initiator against a target that breaks the protocol on purpose: a minimal target on a socket that logs
 * in, answers TEST UNIT READY and READ CAPACITY(16), and then answers a WRITE with Data-In, which would write into the data being sent.
 */
class HostileTargetTest {
    private static final int LOGIN_RESPONSE = 0x23;
    private static final int SCSI_RESPONSE = 0x21;
    private static final int DATA_IN = 0x25;

    @Test
    void dataInForAWriteFailsTheConnectionAndLeavesTheCallersDataAlone() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread target = new Thread(() -> serve(server), "hostile-target");
            target.setDaemon(true);
            target.start();
            IscsiUrl url = new IscsiUrl("127.0.0.1", server.getLocalPort(), "iqn.2026-12.test:hostile", 0, null, null);
            byte[] data = new byte[512];
            Arrays.fill(data, (byte) 0x11);
            try (IscsiInitiator initiator = IscsiInitiator.login(url, InitiatorOptions.defaults())) {
                IOException e = assertThrows(IOException.class, () -> initiator.write16(0, ByteBuffer.wrap(data)));
                assertTrue(e.getMessage().contains("Data-In") || String.valueOf(e.getCause()).contains("Data-In"),
                        e.toString());
            }
            byte[] untouched = new byte[512];
            Arrays.fill(untouched, (byte) 0x11);
            assertArrayEquals(untouched, data, "the target's Data-In must not land in the data being written");
        }
    }

    /** Login rounds granted at once, TEST UNIT READY good, READ CAPACITY(16) answered, anything else: Data-In of 0xee. */
    private static void serve(ServerSocket server) {
        try (Socket s = server.accept()) {
            DataInputStream in = new DataInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            int statSn = 100;
            while (true) {
                ByteBuffer req = readPdu(in);
                int op = req.get(0) & 0x3f;
                if (op == 0x03) {
                    int nsg = (req.get(1) & 0x03);
                    ByteBuffer r = header(LOGIN_RESPONSE, 0x80 | ((req.get(1) >> 2) & 0x03) << 2 | nsg, req);
                    r.put(2, (byte) 0).put(3, (byte) 0);
                    r.putShort(14, (short) 1);        // TSIH
                    r.putInt(24, statSn++);
                    out.write(r.array());
                    continue;
                }
                if (op == 0x01) {
                    int opcode = req.get(32) & 0xff;
                    if (opcode == 0x00) {             // TEST UNIT READY
                        ByteBuffer r = header(SCSI_RESPONSE, 0x80, req);
                        r.putInt(24, statSn++);
                        out.write(r.array());
                    } else if (opcode == 0x9e) {      // READ CAPACITY(16): 2048 blocks of 512 bytes
                        ByteBuffer capacity = ByteBuffer.allocate(32).putLong(0, 2047).putInt(8, 512);
                        ByteBuffer r = header(DATA_IN, 0x80 | 0x01, req);
                        r.putInt(4, 32);
                        r.putInt(24, statSn++);
                        out.write(r.array());
                        out.write(capacity.array());
                    } else {
                        byte[] payload = new byte[512];
                        Arrays.fill(payload, (byte) 0xee);
                        ByteBuffer r = header(DATA_IN, 0x80 | 0x01, req); // final, with status
                        r.putInt(4, 512);             // data segment length (no AHS)
                        r.putInt(24, statSn++);
                        out.write(r.array());
                        out.write(payload);
                    }
                    out.flush();
                }
            }
        } catch (IOException e) {
            // the initiator hung up: what it should do
        }
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

    private static ByteBuffer readPdu(DataInputStream in) throws IOException {
        byte[] h = new byte[48];
        in.readFully(h);
        int ahs = (h[4] & 0xff) * 4;
        int dsl = ((h[5] & 0xff) << 16) | ((h[6] & 0xff) << 8) | (h[7] & 0xff);
        in.readFully(new byte[ahs + (dsl + 3) / 4 * 4]);
        return ByteBuffer.wrap(h);
    }
}
