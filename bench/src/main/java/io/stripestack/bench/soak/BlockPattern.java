package io.stripestack.bench.soak;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * The self-describing content of one 4 KiB soak block, and its check. Layout (big-endian):
 * <pre>
 *   0  magic "STRPSOAK"        8  block number (4 KiB units from the start of the device)
 *  16  generation (int)        20  reserved (0)         24  run seed
 *  32  payload: 507 longs derived from (seed, block, generation)
 * 4088 reserved (0)         4092  CRC32C of bytes 0..4091
 * </pre>
 * A read tells apart: the expected generation, an older one ({@link Verdict#STALE}), a block of another place
 * ({@link Verdict#MISPLACED}), bytes that do not check ({@link Verdict#TORN}), or a generation never written
 * ({@link Verdict#PHANTOM}).
 *
 * <p>Threads: one instance per worker thread; it is bound to that worker's buffer and keeps the details of
 * its last {@link #check} ({@link #foundGeneration()}, {@link #foundBlock()}). Allocates nothing per block.
 */
public final class BlockPattern {
    public static final int BLOCK = 4096;
    static final long MAGIC = 0x53545250534f414bL; // "STRPSOAK"
    private static final int CRC_AT = BLOCK - 4;
    private static final int PAYLOAD_AT = 32;
    private static final int PAYLOAD_LONGS = (CRC_AT - 4 - PAYLOAD_AT) / 8;

    /** What a read of one block shows, relative to the generations the soak allows there. */
    public enum Verdict {
        /** a generation in the allowed range */
        OK,
        /** never written by this run and not holding anything the run must find */
        UNWRITTEN,
        /** an older generation than the last acknowledged write, another run's data, or zeros */
        STALE,
        /** the checksum or payload does not match: partial or corrupted bytes */
        TORN,
        /** a correct block that belongs to another block number */
        MISPLACED,
        /** a correct block with a generation this run never wrote there */
        PHANTOM
    }

    private final long seed;
    private final ByteBuffer buffer;
    private final ByteBuffer crcView;
    private final CRC32C crc = new CRC32C();
    private int foundGeneration;
    private long foundBlock;

    /** @param buffer the worker's I/O buffer; blocks are addressed by their byte index in it */
    public BlockPattern(long seed, ByteBuffer buffer) {
        this.seed = seed;
        this.buffer = buffer;
        this.crcView = buffer.duplicate();
    }

    /** Writes block {@code block}'s content for {@code generation} at byte {@code at} of the buffer. */
    public void fill(int at, long block, int generation) {
        buffer.putLong(at, MAGIC);
        buffer.putLong(at + 8, block);
        buffer.putInt(at + 16, generation);
        buffer.putInt(at + 20, 0);
        buffer.putLong(at + 24, seed);
        long state = start(block, generation);
        for (int i = 0; i < PAYLOAD_LONGS; i++) {
            state += 0x9e3779b97f4a7c15L;
            buffer.putLong(at + PAYLOAD_AT + 8 * i, mix(state));
        }
        buffer.putInt(at + CRC_AT - 4, 0);
        buffer.putInt(at + CRC_AT, checksum(at));
    }

    /**
     * Checks the block at byte {@code at}, expected to be block {@code block} with a generation in
     * {@code [minGeneration, maxGeneration]} (0 = never acknowledged: zeros are then acceptable).
     */
    public Verdict check(int at, long block, int minGeneration, int maxGeneration) {
        foundGeneration = -1;
        foundBlock = -1;
        if (maxGeneration == 0) {
            return Verdict.UNWRITTEN;
        }
        if (buffer.getInt(at + CRC_AT) != checksum(at)) {
            if (isZero(at)) {
                foundGeneration = 0;
                return minGeneration == 0 ? Verdict.UNWRITTEN : Verdict.STALE;
            }
            return Verdict.TORN;
        }
        if (buffer.getLong(at) != MAGIC) {
            return Verdict.TORN;
        }
        foundBlock = buffer.getLong(at + 8);
        foundGeneration = buffer.getInt(at + 16);
        if (buffer.getLong(at + 24) != seed) {
            foundGeneration = 0;
            return minGeneration == 0 ? Verdict.UNWRITTEN : Verdict.STALE;
        }
        if (foundBlock != block) {
            return Verdict.MISPLACED;
        }
        if (foundGeneration < minGeneration) {
            return Verdict.STALE;
        }
        if (foundGeneration > maxGeneration) {
            return Verdict.PHANTOM;
        }
        long state = start(block, foundGeneration);
        for (int i = 0; i < PAYLOAD_LONGS; i++) {
            state += 0x9e3779b97f4a7c15L;
            if (buffer.getLong(at + PAYLOAD_AT + 8 * i) != mix(state)) {
                return Verdict.TORN;
            }
        }
        return Verdict.OK;
    }

    /** The generation the last {@link #check} found (0 for zeros or another run's block, -1 if unreadable). */
    public int foundGeneration() {
        return foundGeneration;
    }

    /** The block number the last {@link #check} found in the block's header, or -1. */
    public long foundBlock() {
        return foundBlock;
    }

    private long start(long block, int generation) {
        return seed ^ block * 0xbf58476d1ce4e5b9L ^ (long) generation * 0x94d049bb133111ebL;
    }

    /** splitmix64's finaliser. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    private int checksum(int at) {
        crc.reset();
        crcView.limit(at + CRC_AT).position(at);
        crc.update(crcView);
        return (int) crc.getValue();
    }

    private boolean isZero(int at) {
        for (int i = 0; i < BLOCK; i += 8) {
            if (buffer.getLong(at + i) != 0) {
                return false;
            }
        }
        return true;
    }
}
