package io.stripestack.targetserver.testing;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * A TCP relay on a loopback port in front of a target that reads the initiator's PDUs as they pass (RFC 7143
 * framing; sessions without digests only) and counts what reaches the target: SCSI commands by CDB opcode,
 * WRITEs with FUA, the connections that carried commands, and the largest data segment, burst and unsolicited
 * data per command. What an initiator sends is then seen from the wire, not from its own counters.
 *
 * <p>Threads: one acceptor and two pumps per relayed connection (daemons, ended by closing the sockets). A
 * connection's pump owns its per-command map; the totals are adders and atomics any thread may read.
 */
public final class CommandTap implements AutoCloseable {
    private static final int BHS = 48;
    private static final int OP_SCSI_COMMAND = 0x01;
    private static final int OP_DATA_OUT = 0x05;
    private static final int UNSOLICITED_TTT = 0xffffffff;
    private static final int OPCODE_SYNCHRONIZE_CACHE_10 = 0x35;
    private static final int OPCODE_SYNCHRONIZE_CACHE_16 = 0x91;

    private final ServerSocket listener;
    private final int targetPort;
    private final LongAdder[] commandsByOpcode = new LongAdder[256];
    private final LongAdder fuaWrites = new LongAdder();
    private final LongAdder immediateDataCommands = new LongAdder();
    private final LongAdder unsolicitedDataOuts = new LongAdder();
    private final AtomicInteger connectionsWithCommands = new AtomicInteger();
    private final AtomicInteger largestDataSegment = new AtomicInteger();
    private final AtomicInteger largestTransfer = new AtomicInteger();
    private final AtomicInteger largestUnsolicited = new AtomicInteger();

    private CommandTap(int targetPort) throws IOException {
        this.targetPort = targetPort;
        for (int i = 0; i < commandsByOpcode.length; i++) {
            commandsByOpcode[i] = new LongAdder();
        }
        this.listener = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "command-tap");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public static CommandTap inFrontOf(int targetPort) throws IOException {
        return new CommandTap(targetPort);
    }

    public int port() {
        return listener.getLocalPort();
    }

    /** {@code url} with its port replaced by the tap's, so the initiator connects through it. */
    public String relay(String url) {
        return url.replaceFirst(":" + targetPort + "/", ":" + port() + "/");
    }

    /** SCSI commands with this CDB opcode (operation code byte) that reached the target. */
    public long commands(int opcode) {
        return commandsByOpcode[opcode].sum();
    }

    /** Every SCSI command that reached the target. */
    public long commands() {
        long sum = 0;
        for (LongAdder a : commandsByOpcode) {
            sum += a.sum();
        }
        return sum;
    }

    /** SYNCHRONIZE CACHE (10) and (16). */
    public long synchronizeCaches() {
        return commands(OPCODE_SYNCHRONIZE_CACHE_10) + commands(OPCODE_SYNCHRONIZE_CACHE_16);
    }

    /** WRITE (10), (12) and (16) with the FUA bit. */
    public long fuaWrites() {
        return fuaWrites.sum();
    }

    /** Relayed connections that carried at least one SCSI command (a session each, for our initiator). */
    public int connectionsWithCommands() {
        return connectionsWithCommands.get();
    }

    /** The largest data segment of any SCSI Command or Data-Out PDU. */
    public int largestDataSegment() {
        return largestDataSegment.get();
    }

    /** The largest Expected Data Transfer Length of any SCSI command. */
    public int largestTransfer() {
        return largestTransfer.get();
    }

    /** Commands that carried immediate data (a data segment in the SCSI Command PDU). */
    public long immediateDataCommands() {
        return immediateDataCommands.sum();
    }

    /** Data-Out PDUs sent before any R2T asked for them. */
    public long unsolicitedDataOuts() {
        return unsolicitedDataOuts.sum();
    }

    /** The most unsolicited bytes (immediate data and unsolicited Data-Out) any one command sent. */
    public int largestUnsolicited() {
        return largestUnsolicited.get();
    }

    private void accept() {
        try {
            while (true) {
                Socket initiator = listener.accept();
                Socket target = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                start(() -> readInitiator(initiator, target));
                start(() -> pump(target, initiator));
            }
        } catch (IOException closed) {
            // the tap was closed
        }
    }

    private static void start(Runnable pump) {
        Thread t = new Thread(pump, "command-tap-pump");
        t.setDaemon(true);
        t.start();
    }

    private static void pump(Socket from, Socket to) {
        byte[] buffer = new byte[64 << 10];
        try (from; to) {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            for (int n; (n = in.read(buffer)) > 0; ) {
                out.write(buffer, 0, n);
            }
        } catch (IOException closed) {
            // either side hung up: the other is closed with it
        }
    }

    /** Relays the initiator's stream PDU by PDU, counting each before it goes on. */
    private void readInitiator(Socket from, Socket to) {
        Map<Integer, Integer> unsolicitedByTask = new HashMap<>();
        boolean counted = false;
        byte[] pdu = new byte[1 << 20];
        try (from; to) {
            DataInputStream in = new DataInputStream(from.getInputStream());
            OutputStream out = to.getOutputStream();
            for (;;) {
                in.readFully(pdu, 0, BHS);
                int ahs = (pdu[4] & 0xff) * 4;
                int segment = (pdu[5] & 0xff) << 16 | (pdu[6] & 0xff) << 8 | (pdu[7] & 0xff);
                int length = BHS + ahs + ((segment + 3) & ~3);
                if (length > pdu.length) {
                    throw new IOException("a PDU of " + length + " bytes");
                }
                in.readFully(pdu, BHS, length - BHS);
                int opcode = pdu[0] & 0x3f;
                int task = intAt(pdu, 16);
                if (opcode == OP_SCSI_COMMAND) {
                    if (!counted) {
                        counted = true;
                        connectionsWithCommands.incrementAndGet();
                    }
                    countCommand(pdu, segment);
                    largestDataSegment.accumulateAndGet(segment, Math::max);
                    unsolicitedByTask.put(task, segment);
                    largestUnsolicited.accumulateAndGet(segment, Math::max);
                } else if (opcode == OP_DATA_OUT) {
                    largestDataSegment.accumulateAndGet(segment, Math::max);
                    if (intAt(pdu, 20) == UNSOLICITED_TTT) {
                        unsolicitedDataOuts.increment();
                        int sent = unsolicitedByTask.merge(task, segment, Integer::sum);
                        largestUnsolicited.accumulateAndGet(sent, Math::max);
                    }
                }
                out.write(pdu, 0, length);
            }
        } catch (IOException closed) {
            // either side hung up: the other is closed with it
        }
    }

    private void countCommand(byte[] pdu, int segment) {
        int cdb = 32;
        int opcode = pdu[cdb] & 0xff;
        commandsByOpcode[opcode].increment();
        boolean write = opcode == 0x2a || opcode == 0xaa || opcode == 0x8a;
        if (write && (pdu[cdb + 1] & 0x08) != 0) {
            fuaWrites.increment();
        }
        if (segment > 0) {
            immediateDataCommands.increment();
        }
        largestTransfer.accumulateAndGet(intAt(pdu, 20), Math::max);
    }

    private static int intAt(byte[] b, int at) {
        return (b[at] & 0xff) << 24 | (b[at + 1] & 0xff) << 16 | (b[at + 2] & 0xff) << 8 | (b[at + 3] & 0xff);
    }

    @Override
    public void close() throws IOException {
        listener.close();
    }
}
