package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.IoStats;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.LongAdder;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * md's partial parity log (PPL, {@code mdadm --consistency-policy=ppl}), which closes the RAID-5 write
 * hole: before a row update touches any member, the row's partial parity (the XOR of the data it leaves
 * alone, over the columns it changes) is made durable in the log of the row's parity member. After a crash
 * the parity of every row in flight is recomputed from the data on the members and the logged partial
 * parity, so a member lost afterwards is rebuilt right: untouched chunks read back as they were, written
 * ones as old or new. The format is {@link PplHeader}'s, at {@link Md1Superblock#pplOffset} on every member.
 *
 * <p>Protocol per member, md's: at most one log unit (a header and the partial parity of up to
 * {@value PplHeader#MAX_ENTRIES} rows) is outstanding. A row waits until the rows of the previous unit
 * have written their members; the first waiting row then writes one unit for every row waiting behind it
 * (group commit: one log write and flush covers all of them), after flushing the members the previous
 * unit's rows wrote, since the new header replaces the old one in place. So the header on a member always
 * names every row whose parity on that member may disagree with its data, and recovery needs only the
 * newest header, as the kernel's. A torn header write loses nothing: its rows had not touched the members.
 *
 * <p>Concurrency: each member's log state is guarded by that {@link MemberLog}'s monitor; the unit is
 * written outside it by the row thread that leads the batch (any row-updating thread, see
 * {@link WriteScheduler}), while the others wait on the monitor. A {@link Row} belongs to one updating
 * thread's {@link CallerContext}; its fields are set by that thread before {@link #log} and read by the
 * leader while the owner waits in {@link #log}.
 */
final class PartialParityLog {
    private static final Logger LOG = LoggerFactory.getLogger(Raid5Array.class);

    /** One row update's log entry and partial parity, owned by its updating thread. */
    static final class Row {
        /** The partial parity, {@link #ppSize} bytes from 0; one chunk of room. */
        final ByteBuffer pp;
        int parityRole;
        long dataSector;
        int ppSize;
        int dataSize;
        /** Roles the update writes (bit per role): flushed before the next header replaces this one's. */
        long membersWritten;
        /** Set under the member log's monitor once the unit holding this row is durable. */
        boolean logged;

        Row(ByteBuffer pp) {
            this.pp = pp;
        }
    }

    /** What recovery did at open, for the log and status. */
    record Recovery(int headersRead, int headersInvalid, int entriesReplayed, int entriesSkipped, long parityBytes) {
        boolean clean() {
            return headersInvalid == 0;
        }

        String describe() {
            return headersRead + " member logs read" + (headersInvalid > 0 ? " (" + headersInvalid + " invalid)" : "")
                    + ", " + entriesReplayed + " entries replayed (" + parityBytes + " parity bytes rewritten)"
                    + (entriesSkipped > 0 ? ", " + entriesSkipped + " skipped (a data member they name is missing)" : "");
        }
    }

    private final class MemberLog {
        final int role;
        final ByteBuffer unit;
        final Row[] batch = new Row[PplHeader.MAX_ENTRIES];
        final CRC32C crc = new CRC32C();
        // guarded by this:
        final ArrayDeque<Row> waiting = new ArrayDeque<>();
        boolean writing;
        int activeRows;
        long activeMembers;
        long generation;

        MemberLog(int role) {
            this.role = role;
            this.unit = ByteBuffer.allocateDirect(areaBytes).order(ByteOrder.LITTLE_ENDIAN);
        }
    }

    private final String name;
    private final StripeGeometry geo;
    private final MemberSet members;
    private final int signature;
    /** Byte offset of the log area on a member and its length. */
    private final long areaOffset;
    private final int areaBytes;
    private final int blockSize;
    private final MemberLog[] logs;
    private final LongAdder unitsWritten;
    private final LongAdder bytesWritten;
    private final LongAdder rowsLogged;

    PartialParityLog(String name, StripeGeometry geo, MemberSet members, Md1Superblock sb, int blockSize, IoStats stats) {
        this.name = name;
        this.geo = geo;
        this.members = members;
        this.signature = PplHeader.signature(sb.setUuid);
        this.areaOffset = areaOffset(sb);
        this.areaBytes = sb.pplSize * 512;
        this.blockSize = blockSize;
        this.logs = new MemberLog[geo.members];
        for (int r = 0; r < geo.members; r++) {
            logs[r] = new MemberLog(r);
        }
        this.unitsWritten = stats.counter("ppl_writes");
        this.bytesWritten = stats.counter("ppl_bytes");
        this.rowsLogged = stats.counter("ppl_rows");
    }

    static long areaOffset(Md1Superblock sb) {
        return (sb.superOffsetSectors + sb.pplOffset) * 512;
    }

    /** md's placement: {@value WriteIntentBitmap#OFFSET_SECTORS} sectors after the superblock, up to 1 MiB before the data. */
    static void place(Md1Superblock sb) {
        sb.pplOffset = WriteIntentBitmap.OFFSET_SECTORS;
        sb.pplSize = (int) Math.min(2048, WriteIntentBitmap.roomBeforeData(sb) / 512);
    }

    /**
     * Why this array cannot keep a partial parity log, or null when it can: the log must hold a header and
     * the partial parity of one whole row (a chunk) between the superblock and the data.
     */
    static String whyNot(Md1Superblock sb) {
        long room = WriteIntentBitmap.roomBeforeData(sb);
        long needed = PplHeader.BYTES + sb.chunkSectors * 512L;
        if (Math.min(room, 2048 * 512L) < needed) {
            return "the partial parity log needs " + needed + " bytes (a 4 KiB header and one " + sb.chunkSectors / 2
                    + " KiB chunk) between the superblock and the data, and there are " + room
                    + " -- use a smaller chunk, a larger data offset, or consistency_policy bitmap";
        }
        return null;
    }

    /** Bytes a log write may carry for one row whose partial parity is {@code ppSize} bytes. */
    private int entrySpace() {
        return areaBytes - PplHeader.BYTES;
    }

    /**
     * Makes {@code row}'s entry durable in its parity member's log; returns when it is, or when that
     * member failed (then it is faulty and the row's parity is not written). Pair with {@link #done}.
     */
    void log(Row row) {
        MemberLog log = logs[row.parityRole];
        int taken;
        long previousMembers;
        boolean interrupted = false;
        synchronized (log) {
            row.logged = false;
            log.waiting.addLast(row);
            while (!row.logged && (log.writing || log.activeRows > 0 || log.waiting.peekFirst() != row)) {
                try {
                    log.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (row.logged) {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
                return;
            }
            taken = 0;
            int ppBytes = 0;
            while (taken < log.batch.length && !log.waiting.isEmpty()
                    && ppBytes + log.waiting.peekFirst().ppSize <= entrySpace()) {
                Row next = log.waiting.pollFirst();
                ppBytes += next.ppSize;
                log.batch[taken++] = next;
            }
            log.writing = true;
            previousMembers = log.activeMembers;
            log.generation++;
        }
        long members = 0;
        try {
            flushMembers(previousMembers);
            members = writeUnit(log, taken);
        } finally {
            synchronized (log) {
                log.writing = false;
                log.activeRows = taken;
                log.activeMembers = members;
                for (int i = 0; i < taken; i++) {
                    log.batch[i].logged = true;
                    log.batch[i] = null;
                }
                log.notifyAll();
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The row's member writes are done (or failed): the log may move on once its unit's rows all are. */
    void done(Row row) {
        MemberLog log = logs[row.parityRole];
        synchronized (log) {
            if (--log.activeRows == 0) {
                log.notifyAll();
            }
        }
    }

    /** Writes the header and partial parity of the batch and flushes; returns the roles the batch's rows write. */
    private long writeUnit(MemberLog log, int taken) {
        ByteBuffer unit = log.unit;
        PplHeader.begin(unit, signature, log.generation);
        int at = PplHeader.BYTES;
        long written = 0;
        for (int i = 0; i < taken; i++) {
            Row r = log.batch[i];
            int sum = 0;
            if (r.ppSize > 0) {
                unit.put(at, r.pp, 0, r.ppSize);
                sum = PplHeader.ppChecksum(unit, at, r.ppSize, log.crc);
                at += r.ppSize;
            }
            PplHeader.addEntry(unit, r.dataSector, r.ppSize, r.dataSize, r.parityRole, sum);
            written |= r.membersWritten;
        }
        PplHeader.seal(unit, log.crc);
        MemberSet.Member m = members.roles[log.role];
        BlockDevice device = m.device;
        try {
            device.write(areaOffset, unit.duplicate().position(0).limit(at));
            device.flush();
            unitsWritten.increment();
            bytesWritten.add(at);
            rowsLogged.add(taken);
        } catch (IOException e) {
            members.memberFailed(log.role, device, e);
        }
        return written;
    }

    private void flushMembers(long roles) {
        for (long left = roles; left != 0; left &= left - 1) {
            int role = Long.numberOfTrailingZeros(left);
            MemberSet.Member m = members.roles[role];
            BlockDevice device = m.device;
            if (device == null || !m.holdsRole()) {
                continue;
            }
            try {
                device.flush();
            } catch (IOException e) {
                members.memberFailed(role, device, e);
            }
        }
    }

    // ----------------------------------------------------------------------------------------- at open

    /**
     * Replays the newest log unit of every member that holds a role (md's ppl_load/ppl_recover): for each
     * entry whose checksum holds and whose data members are present, the parity of its columns becomes the
     * XOR of the data on the members and the logged partial parity. Runs before the array serves I/O.
     */
    Recovery recover() throws IOException {
        int read = 0;
        int invalid = 0;
        int replayed = 0;
        int skipped = 0;
        long parityBytes = 0;
        CRC32C crc = new CRC32C();
        ByteBuffer header = ByteBuffer.allocate(PplHeader.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer candidate = ByteBuffer.allocate(PplHeader.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (MemberSet.Member m : members.roles) {
            if (m.device == null || m.state != Raid5Status.MemberState.ACTIVE) {
                continue;
            }
            read++;
            long unitOffset = newestUnit(m.device, header, candidate, crc);
            if (unitOffset < 0) {
                invalid++;
                LOG.warn("{}: member {} ({}) holds no valid partial parity log header", name, m.role, m.displayName);
                continue;
            }
            long ppAt = unitOffset + PplHeader.BYTES;
            int entries = PplHeader.entries(header);
            for (int e = 0; e < entries; e++) {
                int ppSize = PplHeader.ppSize(header, e);
                ByteBuffer pp = ByteBuffer.allocate(ppSize);
                m.device.read(ppAt, pp);
                pp.flip();
                ppAt += ppSize;
                if (PplHeader.ppChecksum(pp, 0, ppSize, crc) != PplHeader.entryChecksum(header, e)) {
                    skipped++;
                    LOG.warn("{}: partial parity log entry {} of member {} has a bad checksum; skipped", name, e, m.role);
                    continue;
                }
                long bytes = replayEntry(PplHeader.dataSector(header, e), ppSize, PplHeader.dataSize(header, e), pp);
                if (bytes < 0) {
                    skipped++;
                } else {
                    replayed++;
                    parityBytes += bytes;
                }
            }
        }
        return new Recovery(read, invalid, replayed, skipped, parityBytes);
    }

    /**
     * Finds the newest valid unit in a member's log area (the kernel may have written several one after
     * another; this engine writes one, at the start) and leaves its header in {@code header}; -1 if none.
     */
    private long newestUnit(BlockDevice device, ByteBuffer header, ByteBuffer candidate, CRC32C crc) throws IOException {
        long found = -1;
        long generation = Long.MIN_VALUE;
        long offset = 0;
        while (offset + PplHeader.BYTES <= areaBytes) {
            candidate.clear();
            device.read(areaOffset + offset, candidate);
            if (!PplHeader.isValid(candidate, signature, crc)
                    || (found >= 0 && PplHeader.generation(candidate) < generation)) {
                break;
            }
            found = areaOffset + offset;
            generation = PplHeader.generation(candidate);
            header.clear().put(candidate.clear());
            long next = offset + PplHeader.BYTES;
            for (int e = 0, n = PplHeader.entries(candidate); e < n; e++) {
                next += Integer.toUnsignedLong(PplHeader.ppSize(candidate, e));
            }
            offset = next;
        }
        return found;
    }

    /**
     * Recomputes the parity an entry covers, block by block as the kernel does; returns the parity bytes
     * written, or -1 when a data member it names is missing (that entry cannot be replayed).
     */
    private long replayEntry(long dataSector, int ppSize, int dataSize, ByteBuffer pp) throws IOException {
        long first = dataSector * blockSize;
        int setCount;
        int strip;
        long last;
        if (ppSize > 0 && ppSize < geo.chunk) {
            setCount = dataSize / ppSize;
            strip = ppSize;
            last = first + (long) (setCount - 1) * geo.chunk + strip;
        } else if (ppSize == 0) {
            setCount = geo.dataDisks;
            strip = dataSize / geo.dataDisks;
            last = first + (long) (setCount - 1) * geo.chunk + strip;
        } else {
            setCount = geo.dataDisks;
            strip = geo.chunk;
            last = first + dataSize;
        }
        long row = first / geo.rowBytes;
        if (first < 0 || last > geo.size || row != (last - 1) / geo.rowBytes || strip <= 0) {
            LOG.warn("{}: partial parity log entry at array sector {} does not fit one row; skipped", name, dataSector);
            return -1;
        }
        int firstIndex = (int) ((first % geo.rowBytes) >>> geo.chunkShift);
        int inChunk = (int) (first & (geo.chunk - 1));
        for (int k = 0; k < setCount; k++) {
            long at = first + (long) k * geo.chunk;
            if (at >= last) {
                break;
            }
            MemberSet.Member m = members.roles[geo.dataMember(row, firstIndex + k)];
            if (m.device == null || m.state != Raid5Status.MemberState.ACTIVE) {
                return -1;
            }
        }
        ByteBuffer parity = ByteBuffer.allocate(strip);
        if (ppSize > 0) {
            parity.put(0, pp, 0, strip);
        }
        ByteBuffer data = ByteBuffer.allocate(strip);
        long memberOffset = geo.memberOffset(row) + inChunk;
        for (int k = 0; k < setCount; k++) {
            long at = first + (long) k * geo.chunk;
            if (at >= last) {
                break;
            }
            MemberSet.Member m = members.roles[geo.dataMember(row, firstIndex + k)];
            int length = (int) Math.min(strip, last - at);
            data.clear().limit(length);
            m.device.read(memberOffset, data);
            for (int i = 0; i < length; i++) {
                parity.put(i, (byte) (parity.get(i) ^ data.get(i)));
            }
        }
        MemberSet.Member p = members.roles[geo.parityMember(row)];
        if (p.device == null || p.state != Raid5Status.MemberState.ACTIVE) {
            return 0;
        }
        p.device.write(memberOffset, parity.clear());
        return strip;
    }

    /**
     * Zeroes every member's log area and writes an empty header (md does so at every start), so no unit
     * of an earlier run is ever taken for a current one; spares get one too, for when they take a role.
     */
    void writeEmptyHeaders() {
        ByteBuffer area = ByteBuffer.allocate(areaBytes).order(ByteOrder.LITTLE_ENDIAN);
        PplHeader.begin(area, signature, 0);
        PplHeader.seal(area, new CRC32C());
        for (MemberSet.Member m : members.roles) {
            if (m.device == null || !m.holdsRole()) {
                continue;
            }
            try {
                m.device.write(areaOffset, area.clear());
                m.device.flush();
            } catch (IOException e) {
                members.memberFailed(m.role, m.device, e);
            }
        }
        for (MemberSet.Member spare : members.spares) {
            try {
                spare.device.write(areaOffset, area.clear());
            } catch (IOException e) {
                LOG.warn("{}: writing the empty partial parity log of spare {} failed: {}", name, spare.displayName,
                        e.getMessage());
            }
        }
    }
}
