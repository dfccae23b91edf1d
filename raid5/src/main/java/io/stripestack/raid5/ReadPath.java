package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MediumErrorException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads: a healthy read is split at chunk boundaries and each piece is read from its data member straight
 * into a slice of the caller's buffer (no copy, no cache, parity never read), pieces on different members
 * in parallel ({@link MemberIoExecutor}). A piece on the missing member is rebuilt as the XOR of the other
 * members; a piece whose member read fails is rebuilt and written back (md's read-error correction).
 * With check_parity_on_reads every read also checks the parity of the columns it touched.
 *
 * <p>Concurrency: runs on the calling thread (plus member I/O threads for the pieces), holding the
 * shared row lock of every row it touches ({@link WriteScheduler#lockRowsShared}), so it sees each block
 * before or after a racing row update and degraded rebuilds see consistent rows. It reads the failed role
 * and the recovery checkpoint once, after taking the locks. Scratch buffers are the thread's
 * {@link CallerContext}'s.
 */
final class ReadPath {
    private static final Logger LOG = LoggerFactory.getLogger(ReadPath.class);
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();

    private final String name;
    private final StripeGeometry geo;
    private final MemberSet members;
    private final WriteScheduler writes;
    private final MemberIoExecutor io;
    private final Xor xor;
    private final LongAdder degradedReads;
    private final LongAdder parityMismatches;
    private final LongAdder readErrorsCorrected;
    private volatile boolean checkParityOnReads;

    ReadPath(String name, StripeGeometry geo, MemberSet members, WriteScheduler writes, MemberIoExecutor io, Xor xor,
             IoStats stats, boolean checkParityOnReads) {
        this.name = name;
        this.geo = geo;
        this.members = members;
        this.writes = writes;
        this.io = io;
        this.xor = xor;
        this.degradedReads = stats.counter("degraded_reads");
        this.parityMismatches = stats.counter("parity_mismatches");
        this.readErrorsCorrected = stats.counter("read_errors_corrected");
        this.checkParityOnReads = checkParityOnReads;
    }


    boolean checkParityOnReads() {
        return checkParityOnReads;
    }

    void setCheckParityOnReads(boolean enabled) {
        checkParityOnReads = enabled;
    }

    /** Reads {@code length > 0} array bytes at {@code offset} into {@code dst} from {@code dstIndex}. */
    void read(long offset, ByteBuffer dst, int dstIndex, int length) throws IOException {
        long firstRow = offset / geo.rowBytes;
        long lastRow = (offset + length - 1) / geo.rowBytes;
        writes.lockRowsShared(firstRow, lastRow);
        try {
            members.checkUsable(offset, false);
            int failedNow = members.failedRole;
            long recovered = members.recoveredRows;
            MemberIoExecutor.Batch batch = io.batch();
            boolean degraded = false;
            StripeGeometry.Pieces p = geo.pieces(writes.context().walk, offset, length);
            while (p.next()) {
                int member = geo.dataMember(p.row, p.index);
                if (member != MemberSet.missingIn(p.row, failedNow, recovered)) {
                    batch.add(member, members.roles[member].device, geo.memberOffset(p.row) + p.inChunk,
                            dst.slice(dstIndex + p.done, p.length), false);
                } else {
                    degraded = true;
                }
            }
            batch.run();
            try {
                for (int i = 0; i < batch.size(); i++) {
                    if (batch.error(i) != null) {
                        repairFailedRead(batch.member(i), batch.device(i), batch.offset(i), batch.buffer(i),
                                batch.error(i), failedNow, recovered);
                    }
                }
            } finally {
                batch.clear();
            }
            if (degraded) {
                rebuildMissingPieces(offset, dst, dstIndex, length, failedNow, recovered);
            }
            if (checkParityOnReads && members.failedRole < 0) {
                verifyRows(offset, length);
            }
        } finally {
            writes.unlockRowsShared(firstRow, lastRow);
        }
    }

    /**
     * A member read failed: like md, rebuild the piece from the other members into the caller's buffer
     * and write it back to the member (a disk remaps a bad sector on write). The member is marked faulty
     * only if that write fails, or at once when the row has no redundancy left. The shared row lock
     * the caller holds keeps writers out, so the rewritten bytes are the row's current contents.
     */
    private void repairFailedRead(int member, BlockDevice device, long memberOffset, ByteBuffer piece,
                                  IOException error, int failedNow, long recovered) throws IOException {
        long inData = memberOffset - geo.dataOffset;
        long row = inData / geo.chunk;
        int inChunk = (int) (inData % geo.chunk);
        long arrayOffset = row * geo.rowBytes;
        if (MemberSet.missingIn(row, failedNow, recovered) >= 0 || members.failed) {
            members.memberFailed(member, device, error);
            members.checkUsable(arrayOffset, false);
            throw new MediumErrorException(name + ": member " + member + " failed reading row " + row
                    + " while another member was missing", arrayOffset, false, error);
        }
        ByteBuffer target = piece.duplicate().clear().order(NATIVE);
        int len = target.capacity();
        try {
            rebuild(row, member, inChunk, target, len, arrayOffset);
            degradedReads.increment();
        } catch (MediumErrorException e) {
            members.memberFailed(member, device, error);
            members.checkUsable(arrayOffset, false);
            throw e;
        }
        try {
            device.write(memberOffset, piece.duplicate().clear());
            readErrorsCorrected.increment();
            LOG.warn("{}: read error on member {} ({}) at byte {} corrected: {} bytes rebuilt from parity and "
                    + "rewritten ({})", name, member, members.roles[member].displayName, memberOffset, len,
                    error.getMessage());
        } catch (IOException e) {
            members.memberFailed(member, device, e);
        }
    }

    /** Rebuilds, from the other members, every piece of the range that lies on the row's missing member. */
    private void rebuildMissingPieces(long offset, ByteBuffer dst, int dstIndex, int length, int failedNow,
                                      long recovered) throws IOException {
        StripeGeometry.Pieces p = geo.pieces(writes.context().walk, offset, length);
        while (p.next()) {
            int member = geo.dataMember(p.row, p.index);
            if (member == MemberSet.missingIn(p.row, failedNow, recovered)) {
                members.checkUsable(p.offset, false);
                rebuild(p.row, member, p.inChunk, dst.slice(dstIndex + p.done, p.length).order(NATIVE), p.length,
                        p.offset);
                degradedReads.increment();
            }
        }
    }

    /**
     * {@code target[0, len) = XOR of every other member's bytes at that row and in-chunk offset}.
     *
     * @throws MediumErrorException when another member fails too (it is marked faulty)
     */
    private void rebuild(long row, int missing, int inChunk, ByteBuffer target, int len, long arrayOffset)
            throws IOException {
        CallerContext ctx = writes.context();
        ByteBuffer scratch = ctx.scratch();
        long memberOffset = geo.memberOffset(row) + inChunk;
        boolean first = true;
        for (int m = 0; m < geo.members; m++) {
            if (m == missing) {
                continue;
            }
            BlockDevice device = members.roles[m].device;
            try {
                if (first) {
                    device.read(memberOffset, target.duplicate().position(0).limit(len));
                    first = false;
                } else {
                    device.read(memberOffset, scratch.clear().limit(len));
                    ctx.srcs[0] = scratch;
                    ctx.idx[0] = 0;
                    xor.xorInto(target, 0, ctx.srcs, ctx.idx, 1, len);
                }
            } catch (IOException e) {
                ctx.srcs[0] = null;
                members.memberFailed(m, device, e);
                members.checkUsable(arrayOffset, false);
                throw new MediumErrorException(name + ": cannot rebuild row " + row + " of member " + missing
                        + ": member " + m + " failed too (" + e.getMessage() + ")", arrayOffset, false, e);
            }
        }
        ctx.srcs[0] = null;
    }

    /** check_parity_on_reads: XOR of all members over the columns the read touched must be zero. */
    private void verifyRows(long offset, int length) throws IOException {
        CallerContext ctx = writes.context();
        long end = offset + length;
        for (long row = offset / geo.rowBytes; row * geo.rowBytes < end; row++) {
            long rowStart = row * geo.rowBytes;
            long from = Math.max(offset, rowStart) - rowStart;
            long to = Math.min(end, rowStart + geo.rowBytes) - rowStart;
            int lo;
            int hi;
            if (from / geo.chunk == (to - 1) / geo.chunk) {
                lo = (int) (from % geo.chunk);
                hi = (int) ((to - 1) % geo.chunk) + 1;
            } else {
                lo = 0;
                hi = geo.chunk;
            }
            int len = hi - lo;
            ByteBuffer acc = ctx.accumulator();
            ByteBuffer scratch = ctx.scratch();
            long memberOffset = geo.memberOffset(row) + lo;
            for (int m = 0; m < geo.members; m++) {
                ByteBuffer target = m == 0 ? acc.clear().limit(len) : scratch.clear().limit(len);
                BlockDevice device = members.roles[m].device;
                try {
                    device.read(memberOffset, target);
                } catch (IOException e) {
                    members.memberFailed(m, device, e);
                    return;
                }
                if (m > 0) {
                    ctx.srcs[0] = scratch;
                    ctx.idx[0] = 0;
                    xor.xorInto(acc, 0, ctx.srcs, ctx.idx, 1, len);
                }
            }
            for (int i = 0; i < len; i += 8) {
                if (acc.getLong(i) != 0) {
                    parityMismatches.increment();
                    LOG.warn("{}: parity mismatch in stripe row {} (array bytes {}..{}, member offset {}, {} bytes checked)",
                            name, row, rowStart, rowStart + geo.rowBytes, memberOffset, len);
                    break;
                }
            }
        }
    }
}
