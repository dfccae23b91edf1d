package io.stripestack.targetserver.iscsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ResourceLeakDetector;
import io.stripestack.blockdev.MemoryBlockDevice;
import io.stripestack.iscsi.proto.Bhs;
import io.stripestack.iscsi.proto.TextKeys;
import io.stripestack.targetserver.scsi.LogicalUnit;
import io.stripestack.targetserver.scsi.LogicalUnitIdentity;
import io.stripestack.targetserver.scsi.ScsiTarget;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * A scripted initiator for EmbeddedChannel tests: builds request PDUs, feeds them to a connection
 * pipeline running with a direct executor, and parses what the target wrote back.
 */
final class IscsiTestInitiator implements AutoCloseable {
    static final String TARGET_IQN = "iqn.2026-11.io.stripestack:test";
    static final String INITIATOR_IQN = "iqn.1993-08.org.debian:01:test";
    static final long ISID = 0x400001370000L;

    static {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
    }

    /** One PDU from the target, copied out of the channel. */
    static final class Response {
        final byte[] header;
        final byte[] data;

        Response(byte[] header, byte[] data) {
            this.header = header;
            this.data = data;
        }

        int opcode() { return header[0] & 0x3f; }
        int flags() { return header[1] & 0xff; }
        int byte2() { return header[2] & 0xff; }
        int byte3() { return header[3] & 0xff; }
        int intAt(int offset) { return Unpooled.wrappedBuffer(header).getInt(offset); }
        int shortAt(int offset) { return Unpooled.wrappedBuffer(header).getUnsignedShort(offset); }
        int itt() { return intAt(16); }
        int ttt() { return intAt(20); }
        int statSn() { return intAt(24); }
        int expCmdSn() { return intAt(28); }
        int maxCmdSn() { return intAt(32); }
        Map<String, String> keys() { return TextKeys.parse(ByteBuffer.wrap(data), null); }
        String text() { return new String(data, StandardCharsets.UTF_8); }
    }

    final EmbeddedChannel channel;
    final ServerContext server;
    final TrackingAllocator allocator = new TrackingAllocator();
    final IscsiConnection connection;
    /** Commands handed to the I/O executor and not run yet (see {@link #deferExecution}). */
    final ArrayDeque<Runnable> deferred = new ArrayDeque<>();
    private boolean deferExecution;
    final MemoryBlockDevice device;
    private final ArrayDeque<Response> received = new ArrayDeque<>();
    private ByteBuf pending = Unpooled.buffer();
    int cmdSn = 1;
    int itt = 0x100;
    int expStatSn;
    boolean headerDigest;
    boolean dataDigest;

    IscsiTestInitiator(IscsiServerSettings settings, List<IscsiTargetDefinition> targets) {
        this(settings, targets, null);
    }

    private IscsiTestInitiator(IscsiServerSettings settings, List<IscsiTargetDefinition> targets, MemoryBlockDevice device) {
        this.server = new ServerContext(settings, targets, this::execute);
        this.device = device;
        PduDecoder decoder = new PduDecoder();
        PduEncoder encoder = new PduEncoder();
        this.channel = new EmbeddedChannel(false, false);
        channel.config().setAllocator(allocator);
        this.connection = new IscsiConnection(server, decoder, encoder);
        channel.pipeline().addLast(decoder, encoder, connection);
        try {
            channel.register();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A target over a 16 MiB memory LUN 0 with default settings. */
    static IscsiTestInitiator withMemoryLun(IscsiServerSettings settings) {
        return withMemoryLun(settings, b -> { });
    }

    static IscsiTestInitiator withMemoryLun(IscsiServerSettings settings,
            java.util.function.Consumer<IscsiTargetDefinition.Builder> customize) {
        MemoryBlockDevice device = new MemoryBlockDevice("lun0", 16 << 20, 512);
        ScsiTarget router = new ScsiTarget(Map.of(0L, new LogicalUnit(device,
                LogicalUnitIdentity.of(UUID.nameUUIDFromBytes(TARGET_IQN.getBytes(StandardCharsets.UTF_8))), false)));
        IscsiTargetDefinition.Builder b = IscsiTargetDefinition.builder(TARGET_IQN, router).alias("test target");
        customize.accept(b);
        return new IscsiTestInitiator(settings, List.of(b.build()), device);
    }

    static IscsiServerSettings.Builder settings() {
        return IscsiServerSettings.builder().nopInInterval(java.time.Duration.ZERO);
    }

    private void execute(Runnable command) {
        if (deferExecution) {
            deferred.add(command);
        } else {
            command.run();
        }
    }

    /** From now on commands wait in {@link #deferred} until {@link #runDeferred()}: "slow device". */
    void deferExecution() {
        deferExecution = true;
    }

    void runDeferred() {
        for (Runnable r; (r = deferred.poll()) != null; ) {
            r.run();
        }
        channel.runPendingTasks();
    }

    // ------------------------------------------------------------------ building requests

    static ByteBuf bhs(int opcode, int flags, int dataLength) {
        ByteBuf h = Unpooled.buffer(Bhs.LENGTH);
        h.writeZero(Bhs.LENGTH);
        h.setByte(0, opcode);
        h.setByte(1, flags);
        h.setMedium(5, dataLength);
        return h;
    }

    static byte[] keys(String... pairs) {
        StringBuilder sb = new StringBuilder();
        for (String pair : pairs) {
            sb.append(pair).append('\0');
        }
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** Sends header + data (padded, with digests if enabled) into the target. */
    void send(ByteBuf header, byte[] data) {
        ByteBuf wire = Unpooled.buffer();
        wire.writeBytes(header);
        ByteBufDigest crc = new ByteBufDigest();
        if (headerDigest) {
            wire.writeIntLE(crc.compute(header, 0, header.writerIndex(), 0));
        }
        if (data != null && data.length > 0) {
            wire.writeBytes(data);
            int pad = Bhs.pad(data.length);
            wire.writeZero(pad);
            if (dataDigest) {
                ByteBuf d = Unpooled.wrappedBuffer(data);
                wire.writeIntLE(crc.compute(d, 0, data.length, pad));
            }
        }
        channel.writeInbound(wire);
        channel.runPendingTasks();
        collect();
    }

    ByteBuf loginHeader(int flags, int dataLength) {
        ByteBuf h = bhs(0x43, flags, dataLength);
        h.setLong(8, ISID << 16);
        h.setInt(16, itt++);
        h.setInt(24, cmdSn);
        h.setInt(28, expStatSn);
        return h;
    }

    /** Sends one login request and returns its response. */
    Response login(int csg, boolean transit, int nsg, String... pairs) {
        byte[] data = keys(pairs);
        int flags = (transit ? 0x80 : 0) | csg << 2 | (transit ? nsg : 0);
        send(loginHeader(flags, data.length), data);
        Response r = next();
        assertEquals(Bhs.OP_LOGIN_RESPONSE, r.opcode(), "login response opcode");
        expStatSn = r.statSn() + 1;
        if ((r.flags() & 0x83) == 0x83) {
            // digests start with the first PDU after the final login response
            headerDigest = "CRC32C".equals(r.keys().get("HeaderDigest"));
            dataDigest = "CRC32C".equals(r.keys().get("DataDigest"));
        }
        return r;
    }

    /** A complete login with AuthMethod=None into full feature phase; returns the last response. */
    Response loginNormal(String... operationalPairs) {
        Response sec = login(0, true, 1, "InitiatorName=" + INITIATOR_IQN, "TargetName=" + TARGET_IQN,
                "SessionType=Normal", "AuthMethod=None");
        assertEquals(0, sec.shortAt(36), "security stage status");
        Response op = login(1, true, 3, operationalPairs);
        assertEquals(0, op.shortAt(36), "operational stage status");
        assertEquals(0x80 | 1 << 2 | 3, op.flags(), "transit to full feature phase");
        // the SCSI layer reports power-on reset once per new nexus: consume it
        int tur = scsiCommand(new byte[16], 0, false, false, null, true);
        assertEquals(0x02, readResult(tur).getValue().byte3(), "unit attention after login");
        return op;
    }

    /** Sends a SCSI command; {@code immediate} may be null; returns the ITT used. */
    int scsiCommand(byte[] cdb, int expectedLength, boolean read, boolean write, byte[] immediate, boolean finalBit) {
        int tag = itt++;
        int flags = (finalBit ? 0x80 : 0) | (read ? 0x40 : 0) | (write ? 0x20 : 0) | 1;
        ByteBuf h = bhs(Bhs.OP_SCSI_COMMAND, flags, immediate == null ? 0 : immediate.length);
        h.setInt(16, tag);
        h.setInt(20, expectedLength);
        h.setInt(24, cmdSn++);
        h.setInt(28, expStatSn);
        h.setBytes(32, cdb);
        send(h, immediate);
        return tag;
    }

    void dataOut(int tag, int ttt, int offset, byte[] data, int dataSn, boolean finalBit) {
        ByteBuf h = bhs(Bhs.OP_DATA_OUT, finalBit ? 0x80 : 0, data.length);
        h.setInt(16, tag);
        h.setInt(20, ttt);
        h.setInt(28, expStatSn);
        h.setInt(36, dataSn);
        h.setInt(40, offset);
        send(h, data);
    }

    /** Sends an immediate task management request and returns the target's response to it. */
    Response taskManagement(int function, int referencedTag, int refCmdSn) {
        ByteBuf h = bhs(Bhs.OP_TASK_MGMT_REQUEST | Bhs.IMMEDIATE_BIT, 0x80 | function, 0);
        h.setInt(16, itt++);
        h.setInt(20, referencedTag);
        h.setInt(24, cmdSn);
        h.setInt(32, refCmdSn);
        send(h, null);
        Response r = next();
        assertEquals(Bhs.OP_TASK_MGMT_RESPONSE, r.opcode());
        return r;
    }

    static byte[] read10(long lba, int blocks) {
        byte[] cdb = new byte[16];
        cdb[0] = 0x28;
        Unpooled.wrappedBuffer(cdb).setInt(2, (int) lba);
        Unpooled.wrappedBuffer(cdb).setShort(7, blocks);
        return cdb;
    }

    static byte[] write10(long lba, int blocks) {
        byte[] cdb = read10(lba, blocks);
        cdb[0] = 0x2a;
        return cdb;
    }

    static byte[] inquiry(int allocationLength) {
        byte[] cdb = new byte[16];
        cdb[0] = 0x12;
        Unpooled.wrappedBuffer(cdb).setShort(3, allocationLength);
        return cdb;
    }

    // ------------------------------------------------------------------ reading responses

    private void collect() {
        for (;;) {
            ByteBuf out = channel.readOutbound();
            if (out == null) {
                break;
            }
            pending.writeBytes(out);
            out.release();
        }
        for (;;) {
            if (pending.readableBytes() < Bhs.LENGTH) {
                break;
            }
            int start = pending.readerIndex();
            int ahs = (pending.getByte(start + 4) & 0xff) * 4;
            int dsl = pending.getUnsignedMedium(start + 5);
            int hd = headerDigest ? 4 : 0;
            int dd = dataDigest && dsl > 0 ? 4 : 0;
            int total = Bhs.LENGTH + ahs + hd + dsl + Bhs.pad(dsl) + dd;
            if (pending.readableBytes() < total) {
                break;
            }
            byte[] header = new byte[Bhs.LENGTH + ahs];
            pending.getBytes(start, header);
            ByteBufDigest crc = new ByteBufDigest();
            if (headerDigest) {
                assertEquals(crc.compute(pending, start, header.length, 0), pending.getIntLE(start + header.length),
                        "header digest from target");
            }
            byte[] data = new byte[dsl];
            pending.getBytes(start + header.length + hd, data);
            if (dd > 0) {
                int dataStart = start + header.length + hd;
                assertEquals(crc.compute(pending, dataStart, dsl, Bhs.pad(dsl)),
                        pending.getIntLE(dataStart + dsl + Bhs.pad(dsl)), "data digest from target");
            }
            pending.readerIndex(start + total);
            received.add(new Response(header, data));
        }
        pending.discardReadBytes();
    }

    /** The next PDU the target sent; fails if there is none. */
    Response next() {
        channel.runPendingTasks();
        collect();
        Response r = received.poll();
        assertNotNull(r, "expected a PDU from the target");
        return r;
    }

    boolean hasNext() {
        channel.runPendingTasks();
        collect();
        return !received.isEmpty();
    }

    /** Reads Data-In PDUs and the status of command {@code tag}: data bytes and the final status PDU. */
    Map.Entry<byte[], Response> readResult(int tag) {
        ByteBuf data = Unpooled.buffer();
        for (;;) {
            Response r = next();
            assertEquals(tag, r.itt(), "ITT of a response");
            if (r.opcode() == Bhs.OP_DATA_IN) {
                assertEquals(data.writerIndex(), r.intAt(40), "Data-In buffer offset");
                data.writeBytes(r.data);
                if ((r.flags() & 0x01) != 0) {
                    return Map.entry(toArray(data), r);
                }
            } else {
                assertEquals(Bhs.OP_SCSI_RESPONSE, r.opcode(), "SCSI Response opcode");
                return Map.entry(toArray(data), r);
            }
        }
    }

    private static byte[] toArray(ByteBuf buf) {
        byte[] a = new byte[buf.readableBytes()];
        buf.readBytes(a);
        return a;
    }

    static Map<String, String> map(String... pairs) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String p : pairs) {
            int eq = p.indexOf('=');
            m.put(p.substring(0, eq), p.substring(eq + 1));
        }
        return m;
    }

    /** Closes the connection and proves that no buffer the target allocated is left referenced. */
    @Override
    public void close() {
        channel.finishAndReleaseAll();
        runDeferred();
        channel.runPendingTasks();
        pending.release();
        allocator.assertAllReleased();
    }
}
