package io.stripestack.initiator;

import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small RFC 7143 initiator on a plain blocking socket: one session, one connection, one LUN. Login with
 * AuthMethod None or one-way CHAP (MD5), operational negotiation (the target's answers are honoured), and
 * READ(16), WRITE(16) (immediate data, unsolicited Data-Out, R2T-driven Data-Out), SYNCHRONIZE CACHE(16),
 * READ CAPACITY(16), TEST UNIT READY, Logout. Target NOP-In pings are answered. Digests are not offered.
 * Enough to drive stripestack, tgtd or any other target from the soak tool and from tests.
 *
 * <p>Threads. Any number of caller threads may issue commands at once; each call is synchronous and
 * occupies one of {@link InitiatorOptions#maxTasks()} task slots (its ITT), so the number of callers is the
 * queue depth. A caller sends its command PDU and its Data-Out PDUs itself under {@code sendLock} (which keeps
 * PDUs whole and CmdSN in send order), and waits on its task's monitor. The {@code iscsi-reader} thread owns the
 * receive side: it reads every PDU, places Data-In straight into the caller's buffer, hands R2Ts and the final
 * status to the waiting task, and tracks StatSN and the CmdSN window (guarded by {@code window}). The reader
 * never takes {@code sendLock} (a sender blocked on a full socket must not stop the reader), so NOP-Out
 * replies go through the {@code iscsi-nop} thread. A broken connection fails every waiting command with an
 * IOException and every later one at once ({@link #isConnected()}).
 *
 * <p>Buffers: each task slot owns its header buffer; Data-In is read into the caller's buffer and Data-Out is
 * sent from it, so a command allocates nothing.
 */
public final class IscsiInitiator implements Closeable {
    private static final Logger log = LoggerFactory.getLogger(IscsiInitiator.class);

    private static final int BHS = 48;
    private static final int NO_TAG = 0xffffffff;
    private static final int IMMEDIATE = 0x40;
    private static final int OP_NOP_OUT = 0x00;
    private static final int OP_SCSI_COMMAND = 0x01;
    private static final int OP_LOGIN = 0x03;
    private static final int OP_DATA_OUT = 0x05;
    private static final int OP_LOGOUT = 0x06;
    private static final int OP_NOP_IN = 0x20;
    private static final int OP_SCSI_RESPONSE = 0x21;
    private static final int OP_TMF_RESPONSE = 0x22;
    private static final int OP_LOGIN_RESPONSE = 0x23;
    private static final int OP_DATA_IN = 0x25;
    private static final int OP_LOGOUT_RESPONSE = 0x26;
    private static final int OP_R2T = 0x31;
    private static final int OP_ASYNC = 0x32;
    private static final int OP_REJECT = 0x3f;

    private static final int READ_16 = 0x88;
    private static final int WRITE_16 = 0x8a;
    private static final int SYNCHRONIZE_CACHE_16 = 0x91;
    private static final int SERVICE_ACTION_IN_16 = 0x9e;
    private static final int TEST_UNIT_READY = 0x00;
    private static final int READ_CAPACITY_16_LENGTH = 32;
    /** A new nexus sees a power-on UNIT ATTENTION; a LUN change may raise another. Retried this often. */
    private static final int UNIT_ATTENTION_RETRIES = 4;
    private static final int SLOT_BITS = 10;

    /** The operational values in force after login. */
    public record Negotiated(boolean immediateData, boolean initialR2T, int targetMaxRecvDataSegmentLength,
            int maxBurstLength, int firstBurstLength) {
    }

    /** READ CAPACITY(16): the number of logical blocks and their size. */
    public record Capacity(long blocks, int blockSize) {
        public long bytes() {
            return blocks * blockSize;
        }
    }

    private final SocketChannel channel;
    private final String description;
    private final InitiatorOptions options;
    private final long lunField;
    private final Task[] tasks;
    private final BlockingQueue<Task> freeTasks;
    private final ReentrantLock sendLock = new ReentrantLock();
    private final Object window = new Object();
    /** Next CmdSN to send and the target's MaxCmdSN; guarded by {@code window}. */
    private int cmdSn;
    private int maxCmdSn;
    /** Written by the reader thread only. */
    private volatile int expStatSn;
    private final BlockingQueue<NopReply> nopReplies = new ArrayBlockingQueue<>(16);
    private final ByteBuffer[] gather = new ByteBuffer[3];
    /** Commands holding a task slot now, and the most ever at once. */
    private final java.util.concurrent.atomic.AtomicInteger inFlight = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicInteger peakInFlight = new java.util.concurrent.atomic.AtomicInteger();
    private final ByteBuffer pad = ByteBuffer.allocate(4);
    private final ByteBuffer empty = ByteBuffer.allocate(0);
    private Negotiated negotiated;
    private Capacity capacity;
    private Thread reader;
    private Thread nopResponder;
    private volatile IOException failure;
    /** Set when the end of the connection is expected (logout answered, or close()): no warning then. */
    private volatile boolean closing;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

    private record NopReply(int ttt, long lun, byte[] data) {
    }

    /** One ITT slot. Fields marked (owner) are set by the calling thread before {@code active} is published. */
    private static final class Task {
        final int slot;
        final ByteBuffer header = ByteBuffer.allocate(BHS);
        final ByteBuffer dataOutHeader = ByteBuffer.allocate(BHS);
        int generation;
        volatile int itt;
        volatile boolean active;
        // (owner) the caller's buffer, its base position and the transfer length
        ByteBuffer buffer;
        int base;
        int length;
        // completion and R2T hand-over, guarded by this
        boolean done;
        int response;
        int status;
        int senseKey;
        int asc;
        int ascq;
        boolean underflow;
        int residual;
        IOException error;
        int r2tOffset;
        int r2tLength;
        int r2tTtt;
        boolean r2tPending;

        Task(int slot) {
            this.slot = slot;
        }

        synchronized void reset(ByteBuffer buffer, int length) {
            this.buffer = buffer;
            this.base = buffer == null ? 0 : buffer.position();
            this.length = length;
            done = false;
            error = null;
            r2tPending = false;
            senseKey = -1;
            asc = -1;
            ascq = -1;
            status = 0;
            response = 0;
            underflow = false;
            residual = 0;
        }
    }

    private IscsiInitiator(SocketChannel channel, String description, InitiatorOptions options, int lun) {
        this.channel = channel;
        this.description = description;
        this.options = options;
        this.lunField = lun < 256 ? (long) lun << 48 : (0x4000L | lun) << 48;
        this.tasks = new Task[options.maxTasks()];
        this.freeTasks = new ArrayBlockingQueue<>(options.maxTasks());
        for (int i = 0; i < tasks.length; i++) {
            tasks[i] = new Task(i);
            freeTasks.add(tasks[i]);
        }
    }

    /**
     * Connects, logs in to {@code url}'s target (CHAP when the URL carries a user and secret; the URL's secret
     * is not cleared here), clears the power-on UNIT ATTENTION and reads the capacity.
     *
     * @throws IscsiLoginException when the target refuses the login, naming the reason and the fix
     */
    public static IscsiInitiator login(IscsiUrl url, InitiatorOptions options) throws IOException {
        SocketChannel ch = SocketChannel.open();
        String description = url.toString();
        try {
            Socket s = ch.socket();
            s.connect(new InetSocketAddress(url.host(), url.port()), (int) options.connectTimeout().toMillis());
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            s.setSoTimeout(0);
        } catch (IOException e) {
            ch.close();
            throw new IOException("cannot connect to " + description + ": " + e.getMessage()
                    + " (is the target running and listening on that address?)", e);
        }
        IscsiInitiator initiator = new IscsiInitiator(ch, description, options, url.lun());
        try {
            initiator.loginExchange(url);
            initiator.startThreads();
            initiator.clearUnitAttentions();
            initiator.capacity = initiator.readCapacity16();
            return initiator;
        } catch (IOException | RuntimeException e) {
            initiator.close();
            throw e;
        }
    }

    public Negotiated negotiated() {
        return negotiated;
    }

    /** The capacity read at login. */
    public Capacity capacity() {
        return capacity;
    }

    /** The most commands this session ever had outstanding at once (each caller thread holds one). */
    public int peakCommandsInFlight() {
        return peakInFlight.get();
    }

    public boolean isConnected() {
        return failure == null && !closed.get();
    }

    @Override
    public String toString() {
        return description;
    }

    // ------------------------------------------------------------------------------------------ login

    private void loginExchange(IscsiUrl url) throws IOException {
        long isid = 0x80L << 40 | (ThreadLocalRandom.current().nextLong() & 0xffffffffffL);
        LoginRound round = new LoginRound(isid);
        Map<String, String> answer;
        if (url.chapUser() != null && url.chapSecret() != null) {
            answer = round.send(0, false, 0, "InitiatorName=" + options.initiatorIqn(), "TargetName=" + url.targetIqn(),
                    "SessionType=Normal", "AuthMethod=CHAP,None");
            String method = answer.getOrDefault("AuthMethod", "None");
            if (method.equals("CHAP")) {
                answer = round.send(0, false, 0, "CHAP_A=5");
                if (!"5".equals(answer.get("CHAP_A")) || answer.get("CHAP_I") == null || answer.get("CHAP_C") == null) {
                    throw new IscsiLoginException(description + ": the target did not offer CHAP with MD5 (CHAP_A=5);"
                            + " got " + answer.keySet(), -1, -1);
                }
                String chapResponse = chapResponse(answer.get("CHAP_I"), url.chapSecret(), answer.get("CHAP_C"));
                answer = round.send(0, true, 1, "CHAP_N=" + url.chapUser(), "CHAP_R=" + chapResponse);
            } else if (!round.transit) {
                answer = round.send(0, true, 1);
            }
        } else {
            answer = round.send(0, true, 1, "InitiatorName=" + options.initiatorIqn(), "TargetName=" + url.targetIqn(),
                    "SessionType=Normal", "AuthMethod=None");
        }
        for (int i = 0; !round.transit && i < 4; i++) {
            answer = round.send(0, true, 1);
        }
        if (!round.transit) {
            throw new IscsiLoginException(description + ": the target did not leave the security stage", -1, -1);
        }
        Map<String, String> operational = new LinkedHashMap<>(round.send(1, true, 3,
                "HeaderDigest=None", "DataDigest=None", "MaxConnections=1",
                "InitialR2T=" + yesNo(options.initialR2T()), "ImmediateData=" + yesNo(options.immediateData()),
                "MaxRecvDataSegmentLength=" + options.maxRecvDataSegmentLength(),
                "MaxBurstLength=" + options.maxBurstLength(), "FirstBurstLength=" + options.firstBurstLength(),
                "DefaultTime2Wait=0", "DefaultTime2Retain=0", "MaxOutstandingR2T=1", "DataPDUInOrder=Yes",
                "DataSequenceInOrder=Yes", "ErrorRecoveryLevel=0"));
        for (int i = 0; !round.transit && i < 4; i++) {
            operational.putAll(round.send(1, true, 3));
        }
        if (!round.transit) {
            throw new IscsiLoginException(description + ": the target did not enter full feature phase", -1, -1);
        }
        boolean immediate = options.immediateData()
                && !"No".equals(operational.getOrDefault("ImmediateData", "Yes"));
        boolean initialR2t = options.initialR2T() || !"No".equals(operational.getOrDefault("InitialR2T", "Yes"));
        int maxBurst = Math.min(options.maxBurstLength(), number(operational, "MaxBurstLength", 262144));
        int firstBurst = Math.min(Math.min(options.firstBurstLength(), maxBurst),
                number(operational, "FirstBurstLength", 65536));
        int targetMrdsl = number(operational, "MaxRecvDataSegmentLength", 8192);
        negotiated = new Negotiated(immediate, initialR2t, targetMrdsl, maxBurst, firstBurst);
        synchronized (window) {
            cmdSn = round.expCmdSn;
            maxCmdSn = round.maxCmdSn;
        }
        log.debug("{}: logged in, {}", description, negotiated);
    }

    private static String yesNo(boolean b) {
        return b ? "Yes" : "No";
    }

    private static int number(Map<String, String> keys, String key, int rfcDefault) {
        String v = keys.get(key);
        if (v == null) {
            return rfcDefault;
        }
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            return rfcDefault; // NotUnderstood, Irrelevant, Reject: the default stands
        }
    }

    /** CHAP_R = MD5(identifier byte, secret, challenge) as 0x hex; the secret's bytes are zeroed after use. */
    private static String chapResponse(String identifier, char[] secret, String challengeText) throws IOException {
        byte[] challenge = decodeBinary(challengeText);
        byte[] secretBytes = new String(secret).getBytes(StandardCharsets.UTF_8);
        try {
            MessageDigest md5 = MessageDigest.getInstance("MD5");
            md5.update((byte) Integer.parseInt(identifier));
            md5.update(secretBytes);
            md5.update(challenge);
            return "0x" + HexFormat.of().formatHex(md5.digest());
        } catch (NoSuchAlgorithmException | NumberFormatException e) {
            throw new IOException("CHAP: cannot compute the response (" + e.getClass().getSimpleName() + ")", e);
        } finally {
            Arrays.fill(secretBytes, (byte) 0);
        }
    }

    private static byte[] decodeBinary(String text) throws IOException {
        if (text.startsWith("0x") || text.startsWith("0X")) {
            return HexFormat.of().parseHex(text.length() % 2 == 1 ? "0" + text.substring(2) : text.substring(2));
        }
        if (text.startsWith("0b") || text.startsWith("0B")) {
            return java.util.Base64.getDecoder().decode(text.substring(2));
        }
        throw new IOException("CHAP: the target's challenge is neither 0x hex nor 0b base64");
    }

    /** The login phase: synchronous request/response on the socket before the reader thread starts. */
    private final class LoginRound {
        final long isid;
        final int itt = 1;
        boolean transit;
        int expCmdSn = 1;
        int maxCmdSn = 1;
        int statSn = -1;

        LoginRound(long isid) {
            this.isid = isid;
        }

        Map<String, String> send(int csg, boolean transitRequested, int nsg, String... keys) throws IOException {
            StringBuilder text = new StringBuilder();
            for (String k : keys) {
                text.append(k).append('\0');
            }
            byte[] data = text.toString().getBytes(StandardCharsets.UTF_8);
            ByteBuffer h = ByteBuffer.allocate(BHS);
            h.put(0, (byte) (OP_LOGIN | IMMEDIATE));
            h.put(1, (byte) ((transitRequested ? 0x80 : 0) | csg << 2 | (transitRequested ? nsg : 0)));
            h.putInt(4, data.length);
            h.putLong(8, isid << 16);
            h.putInt(16, itt);
            h.putInt(24, expCmdSn);
            h.putInt(28, statSn + 1);
            writeFully(h, ByteBuffer.wrap(data), data.length);
            ByteBuffer r = ByteBuffer.allocate(BHS);
            readFully(r);
            int op = r.get(0) & 0x3f;
            int dsl = r.getInt(4) & 0xffffff;
            skip((r.get(4) & 0xff) * 4);
            if (op != OP_LOGIN_RESPONSE) {
                throw new IscsiLoginException(description + ": expected a Login Response, got opcode 0x"
                        + Integer.toHexString(op), -1, -1);
            }
            ByteBuffer body = ByteBuffer.allocate(dsl + padding(dsl));
            readFully(body);
            int statusClass = r.get(36) & 0xff;
            int statusDetail = r.get(37) & 0xff;
            statSn = r.getInt(24);
            expCmdSn = r.getInt(28);
            maxCmdSn = r.getInt(32);
            if (statusClass != 0) {
                throw new IscsiLoginException(description + ": login refused: " + loginStatusText(statusClass,
                        statusDetail), statusClass, statusDetail);
            }
            int flags = r.get(1) & 0xff;
            transit = (flags & 0x80) != 0;
            Map<String, String> answer = new LinkedHashMap<>();
            String s = new String(body.array(), 0, dsl, StandardCharsets.UTF_8);
            for (String pair : s.split("\0")) {
                int eq = pair.indexOf('=');
                if (eq > 0) {
                    answer.put(pair.substring(0, eq), pair.substring(eq + 1));
                }
            }
            return answer;
        }
    }

    private static String loginStatusText(int cls, int detail) {
        String code = String.format(" (status 0x%02x%02x)", cls, detail);
        if (cls == 2) {
            return switch (detail) {
                case 1 -> "authentication failed" + code + "; check the CHAP user and secret";
                case 2 -> "this initiator is not authorized" + code + "; check the target's allowed initiators";
                case 3 -> "no such target" + code + "; check the target name (iscsi-ls -s iscsi://HOST:PORT/ lists them)";
                case 4 -> "the target was removed" + code;
                default -> "initiator error" + code;
            };
        }
        if (cls == 1) {
            return "the target redirects elsewhere" + code + "; this initiator does not follow redirections";
        }
        return "target error" + code + "; see the target's log";
    }

    // ------------------------------------------------------------------------------------------ commands

    /** READ(16) of {@code dst.remaining()} bytes (a multiple of the block size) at {@code lba}; fills dst. */
    public void read16(long lba, ByteBuffer dst) throws IOException {
        execute(READ_16, lba, dst, true);
    }

    /** WRITE(16) of {@code src.remaining()} bytes at {@code lba}; src's position and limit are left as they were. */
    public void write16(long lba, ByteBuffer src) throws IOException {
        execute(WRITE_16, lba, src, false);
    }

    /** SYNCHRONIZE CACHE(16) of the whole LUN: returns when the target says everything written is durable. */
    public void synchronizeCache16() throws IOException {
        execute(SYNCHRONIZE_CACHE_16, 0, null, false);
    }

    public void testUnitReady() throws IOException {
        execute(TEST_UNIT_READY, 0, null, false);
    }

    public Capacity readCapacity16() throws IOException {
        ByteBuffer data = ByteBuffer.allocate(READ_CAPACITY_16_LENGTH);
        execute(SERVICE_ACTION_IN_16, 0, data, true);
        return new Capacity(data.getLong(0) + 1, data.getInt(8));
    }

    private void clearUnitAttentions() throws IOException {
        for (int i = 0; ; i++) {
            try {
                executeOnce(TEST_UNIT_READY, 0, null, false);
                return;
            } catch (ScsiCommandException e) {
                if (e.senseKey() != ScsiCommandException.SENSE_UNIT_ATTENTION || i >= UNIT_ATTENTION_RETRIES) {
                    throw e;
                }
            }
        }
    }

    private void execute(int opcode, long lba, ByteBuffer data, boolean read) throws IOException {
        for (int attempt = 0; ; attempt++) {
            try {
                executeOnce(opcode, lba, data, read);
                return;
            } catch (ScsiCommandException e) {
                if (e.senseKey() != ScsiCommandException.SENSE_UNIT_ATTENTION || attempt >= UNIT_ATTENTION_RETRIES) {
                    throw e;
                }
                log.debug("{}: {}; retrying", description, e.getMessage());
            }
        }
    }

    private void executeOnce(int opcode, long lba, ByteBuffer data, boolean read) throws IOException {
        IOException broken = failure;
        if (broken != null || closed.get()) {
            throw new IOException(description + ": the connection is closed"
                    + (broken == null ? "" : " (" + broken.getMessage() + ")"), broken);
        }
        int length = data == null ? 0 : data.remaining();
        if (opcode == READ_16 || opcode == WRITE_16) {
            int block = capacity == null ? 512 : capacity.blockSize();
            if (length % block != 0) {
                throw new IllegalArgumentException(length + " bytes is not a multiple of the " + block + "-byte block");
            }
        }
        Task t = acquireTask();
        try {
            t.reset(data, length);
            ByteBuffer h = t.header;
            for (int i = 0; i < BHS; i++) {
                h.put(i, (byte) 0);
            }
            boolean write = !read && data != null;
            h.put(0, (byte) OP_SCSI_COMMAND);
            h.putLong(8, lunField);
            h.putInt(16, t.itt);
            h.putInt(20, length);
            fillCdb(h, opcode, lba, length);
            int immediate = 0;
            int unsolicitedEnd = 0;
            if (write) {
                immediate = negotiated.immediateData()
                        ? Math.min(length, Math.min(negotiated.firstBurstLength(), negotiated.targetMaxRecvDataSegmentLength()))
                        : 0;
                unsolicitedEnd = negotiated.initialR2T() ? immediate : Math.min(length, negotiated.firstBurstLength());
            }
            boolean moreUnsolicited = unsolicitedEnd > immediate;
            h.put(1, (byte) ((moreUnsolicited ? 0 : 0x80) | (read && length > 0 ? 0x40 : 0) | (write ? 0x20 : 0) | 1));
            h.putInt(4, immediate);
            t.active = true;
            sendLock.lock();
            try {
                h.putInt(24, takeCmdSn());
                h.putInt(28, expStatSn);
                sendPdu(h, data, t.base, immediate);
                if (moreUnsolicited) {
                    sendDataOut(t, NO_TAG, immediate, unsolicitedEnd - immediate);
                }
            } finally {
                sendLock.unlock();
            }
            awaitCompletion(t, opcodeName(opcode));
            if (t.response != 0) {
                throw new IOException(description + ": " + opcodeName(opcode) + ": the target reported a service"
                        + " failure (iSCSI response 0x" + Integer.toHexString(t.response) + ")");
            }
            if (t.status != 0) {
                throw new ScsiCommandException(description + ": " + opcodeName(opcode) + " at LBA " + lba, t.status,
                        t.senseKey, t.asc, t.ascq);
            }
            if (read && t.underflow && t.residual > 0 && opcode == READ_16) {
                throw new IOException(description + ": READ(16) at LBA " + lba + " returned " + (length - t.residual)
                        + " of " + length + " bytes");
            }
        } finally {
            if (data != null) {
                data.limit(t.base + length);
                data.position(read ? t.base + length : t.base);
            }
            t.active = false;
            t.buffer = null;
            inFlight.decrementAndGet();
            freeTasks.add(t);
        }
    }

    private static String opcodeName(int opcode) {
        return switch (opcode) {
            case READ_16 -> "READ(16)";
            case WRITE_16 -> "WRITE(16)";
            case SYNCHRONIZE_CACHE_16 -> "SYNCHRONIZE CACHE(16)";
            case SERVICE_ACTION_IN_16 -> "READ CAPACITY(16)";
            case TEST_UNIT_READY -> "TEST UNIT READY";
            default -> "opcode 0x" + Integer.toHexString(opcode);
        };
    }

    private void fillCdb(ByteBuffer h, int opcode, long lba, int length) {
        h.put(32, (byte) opcode);
        switch (opcode) {
            case READ_16, WRITE_16 -> {
                h.putLong(34, lba);
                h.putInt(42, length / capacity.blockSize());
            }
            case SERVICE_ACTION_IN_16 -> {
                h.put(33, (byte) 0x10);
                h.putInt(42, length);
            }
            default -> {
                // SYNCHRONIZE CACHE(16) with LBA 0 and 0 blocks: the whole LUN; TEST UNIT READY: no fields
            }
        }
    }

    private Task acquireTask() throws IOException {
        try {
            Task t = freeTasks.poll(options.commandTimeout().toMillis(), TimeUnit.MILLISECONDS);
            if (t == null) {
                throw new IOException(description + ": all " + tasks.length + " command slots stayed busy for "
                        + options.commandTimeout().toSeconds() + " s");
            }
            peakInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            t.generation = (t.generation + 1) & ((1 << (31 - SLOT_BITS)) - 1);
            t.itt = t.generation << SLOT_BITS | t.slot;
            return t;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException(description + ": interrupted waiting for a command slot");
        }
    }

    /** Waits for the CmdSN window (caller holds sendLock) and takes the next CmdSN. */
    private int takeCmdSn() throws IOException {
        long deadline = System.nanoTime() + options.commandTimeout().toNanos();
        synchronized (window) {
            while (cmdSn - maxCmdSn > 0) {
                checkFailure();
                long wait = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (wait <= 0) {
                    throw fail(new IOException(description + ": the target kept its command window closed for "
                            + options.commandTimeout().toSeconds() + " s"));
                }
                try {
                    window.wait(wait);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException(description + ": interrupted waiting for the command window");
                }
            }
            return cmdSn++;
        }
    }

    private void checkFailure() throws IOException {
        IOException f = failure;
        if (f != null) {
            throw new IOException(description + ": the connection is closed (" + f.getMessage() + ")", f);
        }
    }

    /** Waits for the task's status, sending Data-Out for each R2T on the way. */
    private void awaitCompletion(Task t, String what) throws IOException {
        long deadline = System.nanoTime() + options.commandTimeout().toNanos();
        for (;;) {
            int offset;
            int length;
            int ttt;
            synchronized (t) {
                while (!t.done && !t.r2tPending && t.error == null) {
                    long wait = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                    if (wait <= 0) {
                        throw fail(new IOException(description + ": no answer to " + what + " within "
                                + options.commandTimeout().toSeconds() + " s; connection closed"));
                    }
                    try {
                        t.wait(wait);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw fail(new java.io.InterruptedIOException(description + ": interrupted waiting for " + what));
                    }
                }
                if (t.error != null) {
                    throw new IOException(description + ": " + what + ": " + t.error.getMessage(), t.error);
                }
                if (t.done) {
                    return;
                }
                offset = t.r2tOffset;
                length = t.r2tLength;
                ttt = t.r2tTtt;
                t.r2tPending = false;
            }
            if (offset < 0 || length <= 0 || (long) offset + length > t.length) {
                throw fail(new IOException(description + ": R2T for bytes " + offset + "+" + length
                        + " outside the " + t.length + "-byte write"));
            }
            sendLock.lock();
            try {
                sendDataOut(t, ttt, offset, length);
            } finally {
                sendLock.unlock();
            }
        }
    }

    /** Sends bytes {@code [offset, offset+length)} of the task's buffer as one Data-Out sequence. Holds sendLock. */
    private void sendDataOut(Task t, int ttt, int offset, int length) throws IOException {
        ByteBuffer h = t.dataOutHeader;
        int pduMax = negotiated.targetMaxRecvDataSegmentLength();
        int dataSn = 0;
        for (int done = 0; done < length; dataSn++) {
            int n = Math.min(pduMax, length - done);
            for (int i = 0; i < BHS; i++) {
                h.put(i, (byte) 0);
            }
            h.put(0, (byte) OP_DATA_OUT);
            h.put(1, (byte) (done + n == length ? 0x80 : 0));
            h.putInt(4, n);
            h.putLong(8, lunField);
            h.putInt(16, t.itt);
            h.putInt(20, ttt);
            h.putInt(28, expStatSn);
            h.putInt(36, dataSn);
            h.putInt(40, offset + done);
            sendPdu(h, t.buffer, t.base + offset + done, n);
            done += n;
        }
    }

    /** Writes a header and {@code length} bytes of {@code data} from {@code from} (padded). Holds sendLock. */
    private void sendPdu(ByteBuffer header, ByteBuffer data, int from, int length) throws IOException {
        if (data != null && length > 0) {
            int savedPosition = data.position();
            int savedLimit = data.limit();
            data.limit(from + length).position(from);
            try {
                writeFully(header, data, length);
            } finally {
                data.limit(savedLimit).position(savedPosition);
            }
        } else {
            writeFully(header, null, 0);
        }
    }

    private void writeFully(ByteBuffer header, ByteBuffer data, int length) throws IOException {
        header.clear();
        gather[0] = header;
        gather[1] = data == null ? empty : data;
        pad.clear().limit(padding(length));
        gather[2] = pad;
        try {
            while (header.hasRemaining() || gather[1].hasRemaining() || pad.hasRemaining()) {
                channel.write(gather);
            }
        } catch (IOException e) {
            throw fail(new IOException("sending to the target failed: " + e.getMessage(), e));
        } finally {
            gather[1] = null;
        }
    }

    private static int padding(int length) {
        return (4 - (length & 3)) & 3;
    }

    // ------------------------------------------------------------------------------------------ receiving

    private void startThreads() {
        reader = new Thread(this::readLoop, "iscsi-reader");
        reader.setDaemon(true);
        reader.start();
        nopResponder = new Thread(this::nopLoop, "iscsi-nop");
        nopResponder.setDaemon(true);
        nopResponder.start();
    }

    private void readLoop() {
        ByteBuffer h = ByteBuffer.allocate(BHS);
        ByteBuffer scratch = ByteBuffer.allocate(64 << 10);
        try {
            while (!closing) {
                readFully(h.clear());
                int op = h.get(0) & 0x3f;
                int dsl = h.getInt(4) & 0xffffff;
                skip((h.get(4) & 0xff) * 4);
                int itt = h.getInt(16);
                switch (op) {
                    case OP_DATA_IN -> dataIn(h, dsl, itt, scratch);
                    case OP_SCSI_RESPONSE -> scsiResponse(h, dsl, itt, scratch);
                    case OP_R2T -> r2t(h, itt, dsl);
                    case OP_NOP_IN -> nopIn(h, dsl, itt);
                    case OP_LOGOUT_RESPONSE -> logoutResponse(h, dsl, itt);
                    case OP_REJECT -> reject(h, dsl, scratch);
                    case OP_ASYNC -> asyncMessage(h, dsl);
                    case OP_TMF_RESPONSE -> discard(dsl);
                    default -> throw new IOException("unexpected PDU opcode 0x" + Integer.toHexString(op));
                }
            }
        } catch (IOException | RuntimeException e) {
            if (!closing) {
                fail(e instanceof IOException io ? io : new IOException(e.toString(), e));
            }
        }
    }

    private void updateWindow(ByteBuffer h) {
        int newMax = h.getInt(32);
        int newExp = h.getInt(28);
        if (newMax - newExp < -1) {
            return; // RFC 7143 4.2.2.1: such values are ignored
        }
        synchronized (window) {
            if (newMax - maxCmdSn > 0) {
                maxCmdSn = newMax;
                window.notifyAll();
            }
        }
    }

    private void advanceStatSn(int statSn) {
        if (statSn + 1 - expStatSn > 0) {
            expStatSn = statSn + 1;
        }
    }

    private Task taskFor(int itt) {
        Task t = tasks[(itt & ((1 << SLOT_BITS) - 1)) % tasks.length];
        return t.active && t.itt == itt ? t : null;
    }

    private void dataIn(ByteBuffer h, int dsl, int itt, ByteBuffer scratch) throws IOException {
        int flags = h.get(1) & 0xff;
        int offset = h.getInt(40);
        updateWindow(h);
        Task t = taskFor(itt);
        if (t == null || t.buffer == null || offset < 0 || (long) offset + dsl > t.length) {
            if (t != null) {
                throw new IOException("Data-In for bytes " + offset + "+" + dsl + " outside the " + t.length
                        + "-byte buffer of ITT 0x" + Integer.toHexString(itt));
            }
            discard(dsl);
        } else {
            ByteBuffer b = t.buffer;
            b.limit(t.base + offset + dsl).position(t.base + offset);
            readFully(b);
            skip(padding(dsl));
        }
        if ((flags & 0x01) != 0) {
            advanceStatSn(h.getInt(24));
            if (t != null) {
                complete(t, 0, h.get(3) & 0xff, (flags & 0x02) != 0, h.getInt(44), null, 0);
            }
        }
    }

    private void scsiResponse(ByteBuffer h, int dsl, int itt, ByteBuffer scratch) throws IOException {
        advanceStatSn(h.getInt(24));
        updateWindow(h);
        int senseLength = 0;
        if (dsl > 0) {
            if (dsl > scratch.capacity()) {
                throw new IOException("SCSI Response with a " + dsl + "-byte data segment");
            }
            scratch.clear().limit(dsl + padding(dsl));
            readFully(scratch);
            senseLength = Math.min(scratch.getShort(0) & 0xffff, dsl - 2);
        }
        Task t = taskFor(itt);
        if (t != null) {
            int flags = h.get(1) & 0xff;
            complete(t, h.get(2) & 0xff, h.get(3) & 0xff, (flags & 0x02) != 0, h.getInt(44), scratch, senseLength);
        }
    }

    private static void complete(Task t, int response, int status, boolean underflow, int residual, ByteBuffer sense,
            int senseLength) {
        synchronized (t) {
            t.response = response;
            t.status = status;
            t.underflow = underflow;
            t.residual = residual;
            if (senseLength >= 3) {
                int code = sense.get(2) & 0x7f;
                if (code == 0x72 || code == 0x73) {
                    t.senseKey = sense.get(3) & 0x0f;
                    t.asc = senseLength > 2 ? sense.get(4) & 0xff : -1;
                    t.ascq = senseLength > 3 ? sense.get(5) & 0xff : -1;
                } else {
                    t.senseKey = sense.get(4) & 0x0f;
                    t.asc = senseLength > 12 ? sense.get(14) & 0xff : -1;
                    t.ascq = senseLength > 13 ? sense.get(15) & 0xff : -1;
                }
            }
            t.done = true;
            t.notifyAll();
        }
    }

    private void r2t(ByteBuffer h, int itt, int dsl) throws IOException {
        updateWindow(h);
        discard(dsl);
        Task t = taskFor(itt);
        if (t == null) {
            return;
        }
        synchronized (t) {
            if (t.r2tPending) {
                throw new IOException("a second R2T arrived for ITT 0x" + Integer.toHexString(itt)
                        + " although MaxOutstandingR2T is 1");
            }
            t.r2tTtt = h.getInt(20);
            t.r2tOffset = h.getInt(40);
            t.r2tLength = h.getInt(44);
            t.r2tPending = true;
            t.notifyAll();
        }
    }

    private void nopIn(ByteBuffer h, int dsl, int itt) throws IOException {
        updateWindow(h);
        int ttt = h.getInt(20);
        if (itt != NO_TAG) {
            advanceStatSn(h.getInt(24)); // an answer to a ping of ours (we send none), advance anyway
        }
        byte[] data = new byte[dsl];
        readFully(ByteBuffer.wrap(data));
        skip(padding(dsl));
        if (ttt != NO_TAG && !nopReplies.offer(new NopReply(ttt, h.getLong(8), data))) {
            log.warn("{}: too many unanswered NOP-In pings; dropping one", description);
        }
    }

    private void nopLoop() {
        ByteBuffer h = ByteBuffer.allocate(BHS);
        try {
            while (!closing) {
                NopReply reply = nopReplies.take();
                for (int i = 0; i < BHS; i++) {
                    h.put(i, (byte) 0);
                }
                h.put(0, (byte) (OP_NOP_OUT | IMMEDIATE));
                h.put(1, (byte) 0x80);
                h.putInt(4, reply.data().length);
                h.putLong(8, reply.lun());
                h.putInt(16, NO_TAG);
                h.putInt(20, reply.ttt());
                synchronized (window) {
                    h.putInt(24, cmdSn);
                }
                h.putInt(28, expStatSn);
                sendLock.lock();
                try {
                    sendPdu(h, ByteBuffer.wrap(reply.data()), 0, reply.data().length);
                } finally {
                    sendLock.unlock();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            fail(e);
        }
    }

    private void logoutResponse(ByteBuffer h, int dsl, int itt) throws IOException {
        advanceStatSn(h.getInt(24));
        discard(dsl);
        Task t = taskFor(itt);
        if (t != null) {
            closing = (h.get(2) & 0xff) == 0; // the target closes the connection next
            complete(t, h.get(2) & 0xff, 0, false, 0, null, 0);
        }
    }

    private void reject(ByteBuffer h, int dsl, ByteBuffer scratch) throws IOException {
        advanceStatSn(h.getInt(24));
        updateWindow(h);
        if (dsl > scratch.capacity()) {
            throw new IOException("Reject PDU with a " + dsl + "-byte data segment");
        }
        scratch.clear().limit(dsl + padding(dsl));
        readFully(scratch);
        int reason = h.get(2) & 0xff;
        if (dsl >= BHS) {
            Task t = taskFor(scratch.getInt(16));
            if (t != null) {
                synchronized (t) {
                    t.error = new IOException("the target rejected the PDU (reason 0x" + Integer.toHexString(reason) + ")");
                    t.notifyAll();
                }
                return;
            }
        }
        log.warn("{}: the target rejected a PDU (reason 0x{})", description, Integer.toHexString(reason));
    }

    private void asyncMessage(ByteBuffer h, int dsl) throws IOException {
        advanceStatSn(h.getInt(24));
        updateWindow(h);
        discard(dsl);
        int event = h.get(36) & 0xff;
        if (event == 1 || event == 2 || event == 3) {
            log.warn("{}: the target asks to end the {} (async event {})", description,
                    event == 1 ? "session (logout request)" : "connection", event);
        }
    }

    private void discard(int dsl) throws IOException {
        skip(dsl + padding(dsl));
    }

    private void skip(int bytes) throws IOException {
        if (bytes > 0) {
            readFully(ByteBuffer.allocate(bytes));
        }
    }

    private void readFully(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (channel.read(b) < 0) {
                throw new EOFException("the target closed the connection");
            }
        }
    }

    /** Marks the connection broken, closes the socket and wakes every waiter; returns {@code e} to throw. */
    private IOException fail(IOException e) {
        synchronized (window) {
            if (failure == null) {
                failure = e;
                if (!closing) {
                    log.warn("{}: connection failed: {}", description, e.getMessage());
                }
            }
            window.notifyAll();
        }
        try {
            channel.close();
        } catch (IOException ignored) {
            // already failing
        }
        for (Task t : tasks) {
            synchronized (t) {
                if (t.active && t.error == null && !t.done) {
                    t.error = e;
                }
                t.notifyAll();
            }
        }
        return e;
    }

    // ------------------------------------------------------------------------------------------ logout

    /** Logs out (reason: close the session) and closes the connection. */
    public void logout() throws IOException {
        checkFailure();
        Task t = acquireTask();
        try {
            t.reset(null, 0);
            ByteBuffer h = t.header;
            for (int i = 0; i < BHS; i++) {
                h.put(i, (byte) 0);
            }
            h.put(0, (byte) (OP_LOGOUT | IMMEDIATE));
            h.put(1, (byte) 0x80);
            h.putInt(16, t.itt);
            t.active = true;
            sendLock.lock();
            try {
                synchronized (window) {
                    h.putInt(24, cmdSn);
                }
                h.putInt(28, expStatSn);
                sendPdu(h, null, 0, 0);
            } finally {
                sendLock.unlock();
            }
            awaitCompletion(t, "Logout");
            if (t.response != 0) {
                throw new IOException(description + ": logout refused (response " + t.response + ")");
            }
        } finally {
            t.active = false;
            inFlight.decrementAndGet();
            freeTasks.add(t);
            close();
        }
    }

    /** Closes the connection without logging out (the target sees the connection drop). */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        closing = true;
        fail(new IOException("closed by the initiator"));
        if (reader != null) {
            reader.interrupt();
        }
        if (nopResponder != null) {
            nopResponder.interrupt();
        }
    }
}
