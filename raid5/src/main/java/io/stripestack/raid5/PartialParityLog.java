package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.IoStats;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
 * <p>Protocol per member, md's (raid5-ppl.c): log units (a header and the partial parity of up to
 * {@value PplHeader#MAX_ENTRIES} rows) are written one after another through the area, each with a durable write
 * ({@link BlockDevice#writeDurable}, the FUA write md uses), one at a time, and a unit is written only once the
 * unit before it is retired: its rows have written their members and those members were flushed. Rows that arrive
 * meanwhile wait and go together into the next unit (group commit: one log write covers all of them). So the
 * newest unit of a member's log names every row whose parity may disagree with its data, after a crash of the
 * process as after a power loss, and the kernel, which replays only that unit (the highest generation), recovers
 * an array stripestack left as stripestack does. When the area is full the log starts again at its beginning, and
 * so it does where the next unit would start in the area's last 4 KiB, where the kernel reads no header
 * ({@link #headerLimit}): a header-only unit there would be the newest and invisible to Linux.
 *
 * <p>Recovery here replays every unit from the start of the area up to the first one with a lower generation
 * (what follows is left from before the area last started over) or the kernel's bound, newest first, each entry
 * only over the columns no newer entry of the same row decided: a row's updates are serialized by its write slot
 * and each is logged, so an older entry is still true wherever no newer one touched the row, and where a newer one
 * did, the newer one decides (it is replayed, or skipped when a data member it names is missing: the older one's
 * partial parity would then be stale). With the units retired in order the older ones change nothing; they are
 * read so that a log written by earlier stripestack builds, which let several units' rows write at once, is
 * recovered in full. A torn unit loses nothing: its rows had not touched the members.
 *
 * <p>A row's partial parity is computed from the data of its other chunks as this process sees them, which,
 * below a volatile cache, may not be on the media yet: the flush that retires the unit before makes an earlier
 * update of the row durable before a newer entry (which decides those columns at replay) assumes it is.
 *
 * <p>Concurrency: each member's log state is guarded by that {@link MemberLog}'s monitor; the unit is
 * written outside it by the row thread that leads the batch (any row-updating thread, see
 * {@link WriteScheduler}), while the others wait on the monitor. A {@link Row} belongs to one updating
 * thread's {@link CallerContext}; its fields are set by that thread before {@link #log} and read by the
 * leader while the owner waits in {@link #log}.
 */
final class PartialParityLog {
    private static final Logger LOG = LoggerFactory.getLogger(PartialParityLog.class);

    /**
     * One row update's log entries and partial parity, owned by its updating thread. An update gets one entry per
     * run of columns in which it writes the same chunks (md's format allows several entries per row), so an entry
     * never names a chunk the update did not write in its columns: a replay with that chunk's member missing then
     * still rewrites the parity of the others.
     */
    static final class Row {
        /** The most entries one update is logged in; an update whose columns need more gets one covering all. */
        static final int MAX_ENTRIES = 4;
        /** The partial parity of every entry, one after the other from 0; one chunk of room (their columns differ). */
        final ByteBuffer pp;
        int parityRole;
        int entries;
        final long[] dataSector = new long[MAX_ENTRIES];
        final int[] ppSize = new int[MAX_ENTRIES];
        final int[] dataSize = new int[MAX_ENTRIES];
        /** Roles the update writes (bit per role): flushed before the next unit of its log is written. */
        long membersWritten;
        /** Set under the member log's monitor once the unit holding this row is durable, or failed. */
        boolean logged;
        /** Set under the member log's monitor when a unit takes this row: its outcome is that unit's, retired or not. */
        boolean taken;
        /** Set with {@link #logged} when the unit could not be written for a reason other than the member failing. */
        boolean failed;

        Row(ByteBuffer pp) {
            this.pp = pp;
        }

        /** Starts the entries anew with one of {@code dataSize} bytes at {@code dataSector} ({@code ppSize} 0: all chunks). */
        void single(long sector, int pp, int data) {
            entries = 0;
            add(sector, pp, data);
        }

        void add(long sector, int pp, int data) {
            dataSector[entries] = sector;
            ppSize[entries] = pp;
            dataSize[entries] = data;
            entries++;
        }

        /** Bytes of partial parity of all the entries. */
        int ppBytes() {
            int bytes = 0;
            for (int e = 0; e < entries; e++) {
                bytes += ppSize[e];
            }
            return bytes;
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
        /** Roles the rows of this log wrote since it last flushed them. */
        long unflushedMembers;
        final ArrayDeque<Row> waiting = new ArrayDeque<>();
        /** A row thread is writing a unit. */
        boolean writing;
        /** Switched off ({@link #retire}): no unit is written any more. */
        boolean retired;
        /** Rows whose unit is durable and whose member writes have not finished. */
        int rowsInFlight;
        /** Where the next unit goes, from the start of the area. */
        int nextOffset;
        /**
         * The device whose area this log writes, emptied when it took the log over (at open, or as a rebuilt
         * member); another device there is emptied before its first unit.
         */
        BlockDevice device;
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
    /**
     * A unit's header starts below this offset of the area, or the kernel never reads it: ppl_validate_rdev rounds
     * the area's sectors after its header down to 4 KiB, and ppl_load_distributed reads headers only at offsets
     * below that (the area less one header). Both the writer and {@link #recover} keep to it.
     */
    private final int headerLimit;
    private final int blockSize;
    private final MemberLog[] logs;
    private final LongAdder unitsWritten;
    private final LongAdder bytesWritten;
    private final LongAdder rowsLogged;
    private final LongAdder areaRestarts;
    private final LongAdder retireFlushes;

    PartialParityLog(String name, StripeGeometry geo, MemberSet members, Md1Superblock sb, int blockSize, IoStats stats) {
        this.name = name;
        this.geo = geo;
        this.members = members;
        this.signature = PplHeader.signature(sb.setUuid);
        this.areaOffset = areaOffset(sb);
        this.areaBytes = sb.pplSize * 512;
        this.headerLimit = headerLimit(sb);
        this.blockSize = blockSize;
        this.logs = new MemberLog[geo.members];
        for (int r = 0; r < geo.members; r++) {
            logs[r] = new MemberLog(r);
        }
        this.unitsWritten = stats.counter("ppl_writes");
        this.bytesWritten = stats.counter("ppl_bytes");
        this.rowsLogged = stats.counter("ppl_rows");
        this.areaRestarts = stats.counter("ppl_area_restarts");
        this.retireFlushes = stats.counter("ppl_ordering_flushes");
    }

    /** The smallest area the kernel lays out as several units (two of 128 KiB of partial parity and a header each). */
    static final long MULTIPLE_UNITS_BYTES = 2L * (128 * 1024 + PplHeader.BYTES);

    /**
     * The feature bit of an array with this log, as md.c's super_1_sync writes it for an area of that size
     * (raid5-ppl.c's choice): {@link Md1Superblock#FEATURE_MULTIPLE_PPLS} alone for an area of at least
     * {@link #MULTIPLE_UNITS_BYTES}, else {@link Md1Superblock#FEATURE_PPL} alone. Never both: the kernel refuses
     * such a superblock and leaves that member out. The kernel walks the units of either area the same way.
     */
    static int featureBits(Md1Superblock sb) {
        return sb.pplSize * 512L >= MULTIPLE_UNITS_BYTES ? Md1Superblock.FEATURE_MULTIPLE_PPLS : Md1Superblock.FEATURE_PPL;
    }

    /** See {@link #headerLimit}: the area's sectors less one header, rounded down to 4 KiB, in bytes. */
    static int headerLimit(Md1Superblock sb) {
        int pageSectors = 4096 / 512;
        return (sb.pplSize - PplHeader.BYTES / 512) / pageSectors * pageSectors * 512;
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
        long room = sb.hasPpl() ? sb.pplSize * 512L : WriteIntentBitmap.roomBeforeData(sb);
        long needed = PplHeader.BYTES + sb.chunkSectors * 512L;
        if (Math.min(room, 2048 * 512L) < needed) {
            return "the partial parity log needs " + needed + " bytes (a 4 KiB header and one " + sb.chunkSectors / 2
                    + " KiB chunk) between the superblock and the data, and there are " + room
                    + " -- use a smaller chunk, a larger data offset, or consistency_policy bitmap";
        }
        return null;
    }

    /**
     * Makes {@code row}'s entry durable in its parity member's log; returns true when it is, or when that
     * member failed (then it is faulty and the row's parity is not written): pair with {@link #done}.
     * Returns false, logging nothing, once the log is {@link #retire retired}.
     *
     * @throws IOException when the unit could not be written otherwise; the row then must not touch the
     *                     members, and is not to be paired with {@link #done}
     */
    boolean log(Row row) throws IOException {
        MemberLog log = logs[row.parityRole];
        int taken;
        int offset;
        long retireFlush;
        BlockDevice device;
        boolean fresh;
        boolean interrupted = false;
        synchronized (log) {
            row.logged = false;
            row.failed = false;
            row.taken = false;
            log.waiting.addLast(row);
            while (!row.logged
                    && (row.taken || (!log.retired && (log.writing || log.waiting.peekFirst() != row)))) {
                try {
                    log.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if ((row.logged || log.retired) && interrupted) {
                Thread.currentThread().interrupt();
            }
            if (row.logged) {
                if (row.failed) {
                    throw new IOException(name + ": the partial parity log unit holding this write failed; see the log");
                }
                return true;
            }
            if (log.retired) {
                log.waiting.remove(row);
                log.notifyAll();
                return false;
            }
            taken = 0;
            int unitBytes = PplHeader.BYTES;
            int entries = 0;
            while (taken < log.batch.length && !log.waiting.isEmpty()
                    && entries + log.waiting.peekFirst().entries <= PplHeader.MAX_ENTRIES
                    && unitBytes + log.waiting.peekFirst().ppBytes() <= areaBytes) {
                Row next = log.waiting.pollFirst();
                next.taken = true;
                unitBytes += next.ppBytes();
                entries += next.entries;
                log.batch[taken++] = next;
            }
            log.writing = true;
            // The unit before this one is retired first, as md's raid5-ppl.c does: its rows have written their
            // members, and those members are flushed, so this unit alone names every row whose parity may
            // disagree with its data -- which is all the kernel replays (the newest unit of a member's log).
            while (log.rowsInFlight > 0) {
                try {
                    log.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            retireFlush = log.unflushedMembers;
            log.unflushedMembers = 0;
            if (retireFlush != 0) {
                retireFlushes.increment();
            }
            device = members.roles[log.role].device;
            fresh = device != log.device;
            if (fresh) {
                log.device = device;
                log.nextOffset = 0;
            }
            if (log.nextOffset + unitBytes > areaBytes || log.nextOffset >= headerLimit) {
                log.nextOffset = 0;
                areaRestarts.increment();
            }
            offset = log.nextOffset;
            log.generation++;
        }
        int unitBytes = 0;
        boolean ok = false;
        try {
            flushMembers(retireFlush);
            if (fresh) {
                clearArea(log.role, device);
            }
            unitBytes = writeUnit(log, taken, offset, device);
            ok = true;
        } finally {
            synchronized (log) {
                log.writing = false;
                if (ok) {
                    log.nextOffset = offset + unitBytes;
                    log.rowsInFlight += taken;
                } else {
                    log.device = null;    // the area's state is unknown: start it afresh next time
                    log.unflushedMembers |= retireFlush;   // and whether the members were flushed
                }
                for (int i = 0; i < taken; i++) {
                    log.batch[i].logged = true;
                    log.batch[i].failed = !ok;
                    log.batch[i] = null;
                }
                log.notifyAll();
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        if (row.failed) {
            throw new IOException(name + ": the partial parity log unit holding this write failed; see the log");
        }
        return true;
    }

    /**
     * Switches the log off: returns once no unit is being written and no row a unit holds is still writing its
     * members, and none is written after (rows still waiting are told so by {@link #log}), so another log can take
     * the areas over: a successor that empties them must not erase the entries of rows whose member writes a crash
     * could still tear.
     */
    void retire() {
        boolean interrupted = false;
        for (MemberLog log : logs) {
            synchronized (log) {
                log.retired = true;
                log.notifyAll();
                while (log.writing || log.rowsInFlight > 0) {
                    try {
                        log.wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Empties the log area of a device that takes the log over (a rebuilt member): units a former life of
     * the device left there, with the same signature, must never be replayed.
     */
    private void clearArea(int role, BlockDevice device) {
        try {
            device.writeDurable(areaOffset, emptyArea());
        } catch (IOException e) {
            members.memberFailed(role, device, e);
        }
    }

    /** A whole log area: an empty header, zeros after it (md writes the same at every start). */
    private ByteBuffer emptyArea() {
        ByteBuffer area = ByteBuffer.allocate(areaBytes).order(ByteOrder.LITTLE_ENDIAN);
        PplHeader.begin(area, signature, 0);
        PplHeader.seal(area, new CRC32C());
        return area;
    }

    /** The row's member writes are done (or failed): the next unit of its log flushes the members it wrote first. */
    void done(Row row) {
        MemberLog log = logs[row.parityRole];
        synchronized (log) {
            log.unflushedMembers |= row.membersWritten;
            if (--log.rowsInFlight == 0) {
                log.notifyAll();
            }
        }
    }

    /** Writes the batch's unit at {@code offset} of the area, durably; returns its bytes. */
    private int writeUnit(MemberLog log, int taken, int offset, BlockDevice device) {
        ByteBuffer unit = log.unit;
        PplHeader.begin(unit, signature, log.generation);
        int at = PplHeader.BYTES;
        for (int i = 0; i < taken; i++) {
            Row r = log.batch[i];
            int ppAt = 0;
            for (int e = 0; e < r.entries; e++) {
                int sum = 0;
                if (r.ppSize[e] > 0) {
                    unit.put(at, r.pp, ppAt, r.ppSize[e]);
                    sum = PplHeader.ppChecksum(unit, at, r.ppSize[e], log.crc);
                    at += r.ppSize[e];
                    ppAt += r.ppSize[e];
                }
                PplHeader.addEntry(unit, r.dataSector[e], r.ppSize[e], r.dataSize[e], r.parityRole, sum);
            }
        }
        PplHeader.seal(unit, log.crc);
        try {
            device.writeDurable(areaOffset + offset, unit.duplicate().position(0).limit(at));
            unitsWritten.increment();
            bytesWritten.add(at);
            rowsLogged.add(taken);
        } catch (IOException e) {
            members.memberFailed(log.role, device, e);
        }
        return at;
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
        int[] counts = new int[4];
        long[] parityBytes = new long[1];
        CRC32C crc = new CRC32C();
        ByteBuffer header = ByteBuffer.allocate(PplHeader.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (MemberSet.Member m : members.roles) {
            if (m.device == null || !m.holdsRole()) {
                continue;
            }
            counts[0]++;
            int units = replayUnits(m, header, crc, counts, parityBytes);
            if (units == 0) {
                counts[1]++;
                LOG.warn("{}: member {} ({}) holds no valid partial parity log header", name, m.role, m.displayName);
            }
        }
        return new Recovery(counts[0], counts[1], counts[2], counts[3], parityBytes[0]);
    }

    /**
     * Replays the member's units: those from the start of its area on, as long as each is valid, not older
     * than the one before (what follows is left from before the area last started over) and starts below
     * {@link #headerLimit} (the kernel's walk), newest first, each entry only over the columns no newer entry
     * of its row decided; returns how many units. {@code counts[2]} and {@code [3]} count entries replayed and
     * skipped.
     */
    private int replayUnits(MemberSet.Member m, ByteBuffer header, CRC32C crc, int[] counts, long[] parityBytes)
            throws IOException {
        List<ByteBuffer> headers = new ArrayList<>();
        List<Long> offsets = new ArrayList<>();
        long generation = Long.MIN_VALUE;
        long offset = 0;
        while (offset < headerLimit) {   // as ppl_load_distributed walks
            header.clear();
            m.device.read(areaOffset + offset, header);
            if (!PplHeader.isValid(header, signature, crc) || PplHeader.generation(header) < generation) {
                break;
            }
            generation = PplHeader.generation(header);
            headers.add(ByteBuffer.allocate(PplHeader.BYTES).order(ByteOrder.LITTLE_ENDIAN).put(header.clear()));
            offsets.add(offset);
            long next = offset + PplHeader.BYTES;
            for (int e = 0, n = PplHeader.entries(header); e < n; e++) {
                next += Integer.toUnsignedLong(PplHeader.ppSize(header, e));
            }
            offset = next;
        }
        Map<Long, long[]> covered = new HashMap<>();
        for (int u = headers.size() - 1; u >= 0; u--) {
            ByteBuffer h = headers.get(u);
            long ppAt = areaOffset + offsets.get(u) + PplHeader.BYTES;
            for (int e = 0, n = PplHeader.entries(h); e < n; e++) {
                int ppSize = PplHeader.ppSize(h, e);
                if (ppSize < 0 || ppAt - areaOffset + ppSize > areaBytes) {
                    counts[3]++;
                    break;
                }
                ByteBuffer pp = ByteBuffer.allocate(ppSize);
                m.device.read(ppAt, pp);
                pp.flip();
                ppAt += ppSize;
                if (PplHeader.ppChecksum(pp, 0, ppSize, crc) != PplHeader.entryChecksum(h, e)) {
                    counts[3]++;
                    LOG.warn("{}: partial parity log entry {} of member {} has a bad checksum; skipped", name, e, m.role);
                    continue;
                }
                long bytes = replayEntry(PplHeader.dataSector(h, e), ppSize, PplHeader.dataSize(h, e), pp, covered);
                if (bytes < 0) {
                    counts[3]++;
                } else {
                    counts[2]++;
                    parityBytes[0] += bytes;
                }
            }
        }
        return headers.size();
    }

    /**
     * Recomputes the parity an entry covers, block by block as the kernel does; returns the parity bytes
     * written, or -1 when a data member it names is missing (that entry cannot be replayed).
     */
    private long replayEntry(long dataSector, int ppSize, int dataSize, ByteBuffer pp, Map<Long, long[]> covered)
            throws IOException {
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
        // A newer entry of the row decided these columns already: replayed, or skipped for a missing member.
        long[] decided = covered.computeIfAbsent(row, r -> new long[(geo.blocksPerChunk + 63) / 64]);
        int fromBlock = inChunk / StripeCache.BLOCK;
        int toBlock = Math.min(geo.blocksPerChunk, (inChunk + strip) / StripeCache.BLOCK);
        long[] open = decided.clone();
        Bits.setRange(decided, fromBlock, toBlock);
        if (Bits.nextClear(open, fromBlock, toBlock) >= toBlock) {
            return 0;
        }
        for (int k = 0; k < setCount; k++) {
            long at = first + (long) k * geo.chunk;
            if (at >= last) {
                break;
            }
            if (!holdsData(members.roles[geo.dataMember(row, firstIndex + k)], row)) {
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
        if (p.device == null || !p.holdsRole()) {
            return 0;
        }
        long bytes = 0;
        for (int b = Bits.nextClear(open, fromBlock, toBlock); b < toBlock; ) {
            int end = Bits.nextSet(open, b, toBlock);
            int from = (b - fromBlock) * StripeCache.BLOCK;
            int length = (end - b) * StripeCache.BLOCK;
            p.device.write(memberOffset + from, parity.clear().position(from).limit(from + length));
            bytes += length;
            b = Bits.nextClear(open, end, toBlock);
        }
        return bytes;
    }

    /** Whether {@code m} holds valid data in {@code row}: active, or rebuilt past it. */
    private boolean holdsData(MemberSet.Member m, long row) {
        return m.device != null && (m.state == Raid5Status.MemberState.ACTIVE
                || (m.state == Raid5Status.MemberState.REBUILDING && row < members.recoveredRows));
    }

    /**
     * Zeroes every member's log area and writes an empty header (md does so at every start), so no unit
     * of an earlier run is ever taken for a current one; spares get one too, for when they take a role.
     */
    void writeEmptyHeaders() {
        ByteBuffer area = emptyArea();
        for (MemberSet.Member m : members.roles) {
            if (m.device == null || !m.holdsRole()) {
                continue;
            }
            try {
                m.device.writeDurable(areaOffset, area.clear());
                synchronized (logs[m.role]) {
                    logs[m.role].device = m.device;   // emptied: its first unit need not empty it again
                }
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
