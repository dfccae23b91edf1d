package io.stripestack.targetserver.scsi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.stripestack.blockdev.BlockDevice;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Drives a {@link ScsiTarget} the way the transport does: builds {@link ScsiCommand}s from CDB bytes,
 * executes them and exposes status, sense and Data-In as plain bytes. Every Data-In buffer is released
 * and checked for leaks when the harness closes.
 */
final class ScsiHarness implements AutoCloseable {
    static final String NEXUS_A = "iqn.2026-01.test:a,i,0x400000000001,iqn.2026-01.stripestack:t,t,0x1";
    static final String NEXUS_B = "iqn.2026-01.test:b,i,0x400000000002,iqn.2026-01.stripestack:t,t,0x1";
    static final UUID LUN_ID = UUID.fromString("6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9");

    final ByteBufAllocator allocator = new UnpooledByteBufAllocator(true, false, true);
    final ScsiTarget target;
    final LogicalUnit unit;
    private final List<ByteBuf> toRelease = Collections.synchronizedList(new ArrayList<>());

    ScsiHarness(BlockDevice device, boolean readOnly) {
        this(new LogicalUnit(device, LogicalUnitIdentity.of(LUN_ID), readOnly));
    }

    ScsiHarness(LogicalUnit unit) {
        this(List.of(unit));
    }

    /** A target whose LUN {@code i} is {@code units.get(i)}; {@link #unit} is LUN 0. */
    ScsiHarness(List<LogicalUnit> units) {
        this.unit = units.get(0);
        Map<Long, LogicalUnit> byLun = new HashMap<>();
        for (int i = 0; i < units.size(); i++) {
            byLun.put((long) i, units.get(i));
        }
        this.target = new ScsiTarget(byLun);
    }

    /** The result of one command, with Data-In copied out. */
    record Result(int status, byte[] sense, byte[] data, long commandTransferLength) {
        int senseKey() {
            assertNotNull(sense, "no sense data (status " + status + ")");
            return sense[2] & 0x0f;
        }

        int asc() {
            return sense[12] & 0xff;
        }

        int ascq() {
            return sense[13] & 0xff;
        }

        /** The fixed-format INFORMATION field, or -1 if VALID is clear. */
        long information() {
            return (sense[0] & 0x80) == 0 ? -1 : Cdb.u32(sense, 3);
        }

        Result assertGood() {
            assertEquals(ScsiCommand.GOOD, status, () -> "expected GOOD, sense " + hex(sense));
            return this;
        }

        Result assertCheck(int key, int asc, int ascq) {
            assertEquals(ScsiCommand.CHECK_CONDITION, status, "status");
            assertEquals(0x70, sense[0] & 0x7f, "fixed-format current sense");
            assertEquals(key, senseKey(), () -> "sense key in " + hex(sense));
            assertEquals(asc, asc(), () -> "ASC in " + hex(sense));
            assertEquals(ascq, ascq(), () -> "ASCQ in " + hex(sense));
            return this;
        }

        /** Asserts ILLEGAL REQUEST / INVALID FIELD IN CDB with a field pointer to {@code byteIndex}. */
        Result assertInvalidFieldInCdb(int byteIndex) {
            assertCheck(SenseException.ILLEGAL_REQUEST, 0x24, 0x00);
            assertEquals(0xC0, sense[15] & 0xC0, "SKSV and C/D set");
            assertEquals(byteIndex, Cdb.u16(sense, 16), "field pointer");
            return this;
        }
    }

    Result run(String nexus, byte[] cdb, byte[] dataOut) {
        return run(nexus, 0, cdb, dataOut);
    }

    Result run(String nexus, long lun, byte[] cdb, byte[] dataOut) {
        return run(nexus, lun, cdb, dataOut, dataOut == null ? 4096 : dataOut.length);
    }

    /** Runs a command whose Expected Data Transfer Length is {@code edtl}, whatever the Data-Out holds. */
    Result run(String nexus, long lun, byte[] cdb, byte[] dataOut, int edtl) {
        ByteBuf out = dataOut == null ? null : Unpooled.wrappedBuffer(dataOut);
        ScsiCommand cmd = new ScsiCommand(nexus, lun, cdb, edtl,
                dataOut == null, dataOut != null, ScsiCommand.ATTR_SIMPLE, out, allocator);
        target.execute(cmd);
        byte[] data = null;
        if (cmd.dataIn() != null) {
            ByteBuf in = cmd.dataIn();
            data = new byte[in.readableBytes()];
            in.getBytes(in.readerIndex(), data);
            toRelease.add(in);
        }
        return new Result(cmd.status(), cmd.sense(), data, cmd.commandTransferLength());
    }

    Result run(byte[] cdb) {
        return run(NEXUS_A, cdb, null);
    }

    Result run(byte[] cdb, byte[] dataOut) {
        return run(NEXUS_A, cdb, dataOut);
    }

    @Override
    public void close() {
        for (ByteBuf b : toRelease) {
            assertEquals(1, b.refCnt(), "Data-In handed over with one reference");
            b.release();
        }
    }

    // ---- CDB builders (byte layouts from SBC-3 / SPC-4)

    static byte[] cdb(int... bytes) {
        byte[] c = new byte[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            c[i] = (byte) bytes[i];
        }
        return c;
    }

    static byte[] read10(long lba, int blocks) {
        byte[] c = new byte[10];
        c[0] = 0x28;
        Cdb.put32(c, 2, lba);
        Cdb.put16(c, 7, blocks);
        return c;
    }

    static byte[] write10(long lba, int blocks, boolean fua) {
        byte[] c = new byte[10];
        c[0] = 0x2A;
        c[1] = (byte) (fua ? 0x08 : 0);
        Cdb.put32(c, 2, lba);
        Cdb.put16(c, 7, blocks);
        return c;
    }

    static byte[] rw16(int opcode, long lba, long blocks) {
        byte[] c = new byte[16];
        c[0] = (byte) opcode;
        Cdb.put64(c, 2, lba);
        Cdb.put32(c, 10, blocks);
        return c;
    }

    static byte[] inquiry(boolean evpd, int page, int allocation) {
        return cdb(0x12, evpd ? 1 : 0, page, allocation >>> 8, allocation & 0xff, 0);
    }

    static byte[] pattern(int length, int seed) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i * 31 + seed * 7 + (i >>> 9));
        }
        return b;
    }

    static String hex(byte[] b) {
        if (b == null) {
            return "null";
        }
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x ", x));
        }
        return s.toString().trim();
    }
}
