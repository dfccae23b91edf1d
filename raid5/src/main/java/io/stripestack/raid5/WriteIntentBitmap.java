package io.stripestack.raid5;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * md's internal write-intent bitmap, in md's on-disk format so {@code mdadm -X member} reads it: a
 * 256-byte {@code bitmap_super_t} (little-endian: magic 0x6d746962, version 4, the set UUID, events,
 * events_cleared, sync_size in sectors per member, state, chunksize in bytes, daemon_sleep in seconds,
 * write_behind, sectors_reserved) followed by one bit per bitmap chunk of every member's data area
 * (bit i in byte i/8 at position i%8). It sits {@value #OFFSET_SECTORS} sectors after the md superblock
 * (superblock field bitmap_offset, feature_map bit 0), in the gap before the data offset, on every
 * member.
 *
 * <p>Protocol: before a row is written, its region's bit is set on every member with one durable write
 * ({@link #startWrite}, only when the region is clean on disk); a bit is cleared lazily, by {@link #clearIdle} every daemon_sleep seconds,
 * once its region has had no write in flight or completed for a whole period and the members have
 * been flushed. After an unclean stop only regions whose bit is set can have parity that disagrees
 * with data, so the resync visits those only.
 *
 * <p>Concurrency: all state is guarded by this object's monitor. Setting a bit writes the bitmap to
 * the members while holding it, so a second writer to the same region waits until the bit is durable
 * (only the first write to a clean region pays this). The {@link Members} callback runs under the
 * monitor and must not take the array's state lock; failures are reported back and handled by the
 * caller after the monitor is released.
 */
final class WriteIntentBitmap {
    static final int MAGIC = 0x6d746962;
    static final int VERSION = 4;
    static final int SUPER_BYTES = 256;
    /** Where the bitmap starts, in sectors after the md superblock (mdadm's choice for metadata 1.2). */
    static final int OFFSET_SECTORS = 8;
    static final int DAEMON_SLEEP_SECONDS = 5;
    /** mdadm's default bitmap chunk for internal bitmaps: 64 MiB of each member per bit. */
    static final long DEFAULT_CHUNK = 64L << 20;

    /** Writes the encoded bitmap block to every member holding a role; returns a mask of roles that failed. */
    interface Members {
        long writeBitmap(ByteBuffer block);
    }

    private final byte[] uuid;
    private final long syncSizeSectors;
    private final int chunkBytes;
    private final long rowsPerBit;
    private final int bits;
    private final long[] onDisk;
    private final long[] touched;
    private final int[] pending;
    private final ByteBuffer block;
    private final int sectorsReserved;
    private long events;
    private long eventsCleared;

    private WriteIntentBitmap(byte[] uuid, long syncSizeSectors, int chunkBytes, int raidChunk, int sectorsReserved) {
        this.uuid = uuid.clone();
        this.syncSizeSectors = syncSizeSectors;
        this.chunkBytes = chunkBytes;
        this.rowsPerBit = chunkBytes / raidChunk;
        this.bits = (int) ((syncSizeSectors * 512 + chunkBytes - 1) / chunkBytes);
        this.onDisk = new long[(bits + 63) / 64];
        this.touched = new long[onDisk.length];
        this.pending = new int[bits];
        this.block = ByteBuffer.allocate(blockBytes(bits)).order(ByteOrder.LITTLE_ENDIAN);
        this.sectorsReserved = sectorsReserved;
    }

    /** The bytes written per member: the superblock and the bits, rounded up to a 512-byte sector. */
    static int blockBytes(int bits) {
        return (SUPER_BYTES + (bits + 7) / 8 + 511) / 512 * 512;
    }

    /** Byte offset of the bitmap in a member whose superblock is at {@code superOffsetSectors}. */
    static long memberOffset(long superOffsetSectors) {
        return (superOffsetSectors + OFFSET_SECTORS) * 512;
    }

    /**
     * A new, all-clean bitmap for an array, with regions of {@code requestedChunk} bytes per member (0:
     * {@link #DEFAULT_CHUNK}, like mdadm), at least one RAID chunk, doubled until the bits fit before the
     * data offset (and before md's bad-block log, see {@link #roomBeforeData}); null when not even one bit fits (then an unclean stop means a full resync).
     */
    static WriteIntentBitmap create(Md1Superblock sb, long requestedChunk) {
        int raidChunk = sb.chunkSectors * 512;
        long memberData = sb.sizeSectors * 512;
        long room = roomBeforeData(sb);
        if (blockBytes(1) > room) {
            return null;
        }
        long chunk = Math.max(raidChunk, requestedChunk > 0 ? requestedChunk : DEFAULT_CHUNK);
        while (blockBytes(bitsFor(memberData, chunk)) > room) {
            chunk <<= 1;
        }
        if (chunk > Integer.MAX_VALUE) {
            return null;
        }
        return new WriteIntentBitmap(sb.setUuid, sb.sizeSectors, (int) chunk, raidChunk, (int) (room / 512));
    }

    /**
     * Bytes the bitmap may take from its start: up to the data offset, and never into md's bad-block
     * log when the superblock reserves one (mdadm puts it after the space it keeps for a bitmap).
     */
    static long roomBeforeData(Md1Superblock sb) {
        long start = memberOffset(sb.superOffsetSectors);
        long room = sb.dataOffsetSectors * 512 - start;
        if (sb.hasBadBlockLog()) {
            long logStart = MdBadBlockLog.memberOffset(sb);
            long logEnd = logStart + sb.bblogSize * 512L;
            if (logStart >= start) {
                room = Math.min(room, logStart - start);
            } else if (logEnd > start) {
                room = 0;
            }
        }
        return Math.max(0, room);
    }

    private static int bitsFor(long memberData, long chunk) {
        return (int) Math.min(Integer.MAX_VALUE, (memberData + chunk - 1) / chunk);
    }

    /**
     * Reads the bitmap a member holds, or returns null with {@code problem[0]} saying why it cannot be
     * used (then every region must be treated as dirty).
     */
    static WriteIntentBitmap decode(ByteBuffer raw, Md1Superblock sb, String[] problem) {
        ByteBuffer b = raw.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (b.getInt(0) != MAGIC || b.getInt(4) != VERSION) {
            problem[0] = "no version-4 bitmap at sector " + memberOffset(sb.superOffsetSectors) / 512;
            return null;
        }
        int storedChunk = b.getInt(52);
        WriteIntentBitmap fresh = storedChunk > 0 && Integer.bitCount(storedChunk) == 1
                && storedChunk >= sb.chunkSectors * 512 ? create(sb, storedChunk) : null;
        if (fresh == null) {
            problem[0] = "its chunk size " + storedChunk + " does not suit the array";
            return null;
        }
        byte[] id = new byte[16];
        b.get(8, id);
        if (!java.util.Arrays.equals(id, sb.setUuid) || b.getLong(40) != sb.sizeSectors
                || b.getInt(52) != fresh.chunkBytes) {
            problem[0] = "its UUID, sync size or chunk size does not match the array";
            return null;
        }
        if (b.getLong(24) < sb.events) {
            problem[0] = "it is stale (bitmap events " + b.getLong(24) + " < superblock events " + sb.events + ")";
            return null;
        }
        fresh.eventsCleared = b.getLong(32);
        for (int i = 0; i < fresh.bits; i++) {
            if ((b.get(SUPER_BYTES + i / 8) & (1 << (i % 8))) != 0) {
                fresh.onDisk[i >>> 6] |= 1L << i;
            }
        }
        return fresh;
    }

    int bits() {
        return bits;
    }

    long rowsPerBit() {
        return rowsPerBit;
    }

    synchronized int dirtyBits() {
        int n = 0;
        for (long w : onDisk) {
            n += Long.bitCount(w);
        }
        return n;
    }

    /** Whether {@code row} lies in a region recorded as possibly being written. */
    synchronized boolean isDirty(long row) {
        int b = (int) (row / rowsPerBit);
        return (onDisk[b >>> 6] & (1L << b)) != 0;
    }

    /** Marks every region dirty (a bitmap that could not be read: resync everything it covers). */
    synchronized void markAllDirty() {
        for (int b = 0; b < bits; b++) {
            onDisk[b >>> 6] |= 1L << b;
        }
    }

    /**
     * Before a row's member writes: counts the write and, if its region is clean on disk, records it
     * dirty on every member first. Returns the mask of roles whose bitmap write failed (usually 0).
     */
    synchronized long startWrite(long row, Members members) {
        int b = (int) (row / rowsPerBit);
        pending[b]++;
        if ((onDisk[b >>> 6] & (1L << b)) != 0) {
            return 0;
        }
        onDisk[b >>> 6] |= 1L << b;
        return members.writeBitmap(encode());
    }

    /** After a row's member writes (successful or not). */
    synchronized void endWrite(long row) {
        int b = (int) (row / rowsPerBit);
        pending[b]--;
        touched[b >>> 6] |= 1L << b;
    }

    /**
     * One daemon pass, phase 1: the regions that may be cleared (dirty, nothing in flight, untouched since
     * the previous pass); starts a new period. Returns null when there is nothing to clear.
     */
    synchronized long[] idleCandidates() {
        long[] candidates = null;
        for (int w = 0; w < onDisk.length; w++) {
            long idle = onDisk[w] & ~touched[w];
            for (long m = idle; m != 0; m &= m - 1) {
                int b = w * 64 + Long.numberOfTrailingZeros(m);
                if (pending[b] != 0) {
                    idle &= ~(1L << b);
                }
            }
            if (idle != 0) {
                if (candidates == null) {
                    candidates = new long[onDisk.length];
                }
                candidates[w] = idle;
            }
            touched[w] = 0;
        }
        return candidates;
    }

    /**
     * Phase 2, after the members were flushed: clears the candidates still untouched and idle and writes
     * the bitmap. Returns the mask of roles whose write failed.
     */
    synchronized long clearIdle(long[] candidates, Members members) {
        boolean cleared = false;
        for (int w = 0; w < onDisk.length; w++) {
            long clear = candidates[w] & ~touched[w];
            for (long m = clear; m != 0; m &= m - 1) {
                int b = w * 64 + Long.numberOfTrailingZeros(m);
                if (pending[b] != 0) {
                    clear &= ~(1L << b);
                }
            }
            if (clear != 0) {
                onDisk[w] &= ~clear;
                cleared = true;
            }
        }
        if (!cleared) {
            return 0;
        }
        eventsCleared = events;
        return members.writeBitmap(encode());
    }

    /** Clears every bit (clean close: nothing in flight, members flushed). */
    synchronized void clearAll() {
        java.util.Arrays.fill(onDisk, 0);
        eventsCleared = events;
    }

    /** The event count written with the bitmap: kept equal to the superblocks'. */
    synchronized void setEvents(long superblockEvents) {
        events = superblockEvents;
    }

    /**
     * Writes the bitmap as it is now to the members (with the superblocks, which keep its events equal
     * to theirs). Under the monitor, so no older image can overwrite a newer one. Returns the failed roles.
     */
    synchronized long write(Members members) {
        return members.writeBitmap(encode());
    }

    /** The bitmap block as it is to be written now (a shared buffer: written before the monitor is released). */
    private ByteBuffer encode() {
        ByteBuffer b = block;
        for (int i = 0; i < b.capacity(); i += 8) {
            b.putLong(i, 0);
        }
        b.putInt(0, MAGIC);
        b.putInt(4, VERSION);
        b.put(8, uuid);
        b.putLong(24, events);
        b.putLong(32, eventsCleared);
        b.putLong(40, syncSizeSectors);
        b.putInt(48, 0);                        // state: not stale, no write error
        b.putInt(52, chunkBytes);
        b.putInt(56, DAEMON_SLEEP_SECONDS);
        b.putInt(60, 0);                        // write_behind: none
        b.putInt(64, sectorsReserved);
        for (int w = 0; w < onDisk.length; w++) {
            long word = onDisk[w];
            for (int k = 0; k < 8 && w * 8 + k < (bits + 7) / 8; k++) {
                b.put(SUPER_BYTES + w * 8 + k, (byte) (word >>> (8 * k)));
            }
        }
        return b.duplicate().clear();
    }
}
