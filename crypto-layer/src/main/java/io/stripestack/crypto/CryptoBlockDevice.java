package io.stripestack.crypto;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.IoStats;
import io.stripestack.blockdev.MeteredForwardingBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A dm-crypt compatible encryption layer over another {@link BlockDevice}: the bytes it stores below are
 * what the kernel's dm-crypt target {@code <spec> <key> <skip> <device> <offset> [sector_size:N]
 * [iv_large_sectors]} would store, so the device below opens with {@code cryptsetup open --type plain} (or
 * through a LUKS header) with the same parameters.
 *
 * <p>Layout: the payload starts {@code offsetSectors} 512-byte sectors into the device below
 * (cryptsetup {@code --offset}); byte {@code x} of this device is byte {@code offset * 512 + x} below. The IV
 * of the crypto sector at byte {@code x} derives from {@code x / 512 + skipSectors} (cryptsetup
 * {@code --skip}), divided by {@code sectorSize / 512} with iv_large_sectors; see {@link SectorCipher}.
 * The size is what is left below after the offset, rounded down to the crypto sector size, which is also
 * this device's logical block size.
 *
 * <p>I/O: a read fills the caller's buffer from below and decrypts it in place; a write encrypts into a
 * buffer this layer owns (one per thread, grown on demand up to {@link #maxPieceBytes()} and kept; longer
 * writes go down in pieces that end on optimal-I/O boundaries below, see {@link #maxPieceBytes()}) and never
 * touches the caller's bytes. Requests of
 * {@link ParallelCipher#PARALLEL_MIN_BYTES} or more are encrypted/decrypted on several cores. A failed read
 * leaves the caller's buffer with undefined contents. Offsets and lengths must be multiples of the crypto
 * sector size ({@link IllegalArgumentException} naming it otherwise).
 *
 * <p>Threads: thread-safe as the {@link BlockDevice} contract requires. Immutable configuration but the size
 * (volatile, grown under this object's monitor by {@link #resized}, the thread that learns the array grew); the cipher
 * keeps per-thread ciphers, this class per-thread write buffers (ThreadLocal, used by the owning thread
 * only); counters are LongAdders. {@link #close()} must come after I/O has drained.
 *
 * <p>Ownership: the layer owns its {@link SectorCipher} and the device below; {@link #close()} zeroes the
 * key and closes the device below.
 */
public final class CryptoBlockDevice extends MeteredForwardingBlockDevice {
    private static final Logger log = LoggerFactory.getLogger(CryptoBlockDevice.class);
    /** Bound of the write pieces (and per-thread write buffers), unless one optimal I/O below is larger. */
    static final int MAX_WRITE_BUFFER = 4 * 1024 * 1024;
    private static final int MIN_WRITE_BUFFER = 64 * 1024;
    private static final int BUFFER_ALIGNMENT = 4096;

    private final String name;
    private final SectorCipher cipher;
    private final long offsetSectors;
    private final long skipSectors;
    private final long payloadStart;
    /** Grows when the device below did ({@link #resized}); the payload keeps its start, like cryptsetup resize. */
    private volatile long size;
    /** The payload's fixed length, or -1 when it reaches to the end of the device below. */
    private final long fixedPayloadBytes;
    private final int sectorSize;
    private final boolean allowDiscards;
    private final Geometry geometry;
    /** Longest piece a write goes down in: a whole number of optimal I/Os (see {@link #maxPieceBytes()}). */
    private final int maxPiece;
    private final LongAdder sectorsEncrypted;
    private final LongAdder sectorsDecrypted;
    private final ThreadLocal<ByteBuffer> writeBuffers = new ThreadLocal<>();

    /**
     * @param name          device name for logs and statistics, e.g. {@code crypt0}
     * @param below         the device holding the ciphertext (a RAID-5 array, a file...); owned from now on
     * @param cipher        spec, key, sector size and iv_large_sectors; owned from now on
     * @param offsetSectors where the payload starts below, in 512-byte sectors (cryptsetup {@code --offset})
     * @param skipSectors   IV offset in 512-byte sectors (cryptsetup {@code --skip})
     * @param allowDiscards pass discards down (dm-crypt {@code allow_discards}); reveals which sectors are unused
     * @throws IllegalArgumentException when the configuration cannot work, naming the fix; the caller then
     *                                  still owns (and closes) {@code below} and {@code cipher}
     */
    public CryptoBlockDevice(String name, BlockDevice below, SectorCipher cipher, long offsetSectors,
                             long skipSectors, boolean allowDiscards) {
        this(name, below, cipher, offsetSectors, skipSectors, allowDiscards, -1);
    }

    /**
     * A payload of fixed length (a LUKS2 data segment whose size is not "dynamic", or {@code cryptsetup --size}):
     * the device is that long, never longer, also when the device below grows.
     *
     * @param payloadBytes the payload's length in bytes, a multiple of the sector size, or -1 for "to the end of
     *                     the device below"
     */
    public CryptoBlockDevice(String name, BlockDevice below, SectorCipher cipher, long offsetSectors,
                             long skipSectors, boolean allowDiscards, long payloadBytes) {
        super(name, below);
        this.name = name;
        this.cipher = cipher;
        this.offsetSectors = offsetSectors;
        this.skipSectors = skipSectors;
        this.sectorSize = cipher.sectorSize();
        this.allowDiscards = allowDiscards;
        this.payloadStart = offsetSectors * 512;
        if (offsetSectors < 0 || skipSectors < 0) {
            throw new IllegalArgumentException(name + ": offset " + offsetSectors + " and skip " + skipSectors
                    + " must not be negative");
        }
        if (sectorSize < below.logicalBlockSize()) {
            throw new IllegalArgumentException(name + ": crypto sector size " + sectorSize + " is smaller than the "
                    + below.logicalBlockSize() + "-byte blocks of " + below.name() + "; use sector size "
                    + below.logicalBlockSize() + " or more");
        }
        if (payloadStart % below.logicalBlockSize() != 0) {
            throw new IllegalArgumentException(name + ": payload offset " + offsetSectors + " sectors is not a multiple of "
                    + below.name() + "'s " + below.logicalBlockSize() + "-byte blocks; use a multiple of "
                    + below.logicalBlockSize() / 512 + " sectors");
        }
        if (cipher.ivLargeSectors() && skipSectors % (sectorSize / 512) != 0) {
            throw new IllegalArgumentException(name + ": with iv_large_sectors the skip (" + skipSectors
                    + " sectors) must be a multiple of " + sectorSize / 512 + " (the " + sectorSize + "-byte sector)");
        }
        long usable = below.size() - payloadStart;
        if (usable < sectorSize) {
            throw new IllegalArgumentException(name + ": payload offset " + offsetSectors + " sectors leaves no room on "
                    + below.name() + " of " + below.size() + " bytes");
        }
        if (payloadBytes >= 0 && (payloadBytes < sectorSize || payloadBytes % sectorSize != 0)) {
            throw new IllegalArgumentException(name + ": a payload of " + payloadBytes + " bytes is not a positive "
                    + "multiple of the " + sectorSize + "-byte sector");
        }
        if (payloadBytes > usable) {
            throw new IllegalArgumentException(name + ": the payload of " + payloadBytes + " bytes at sector "
                    + offsetSectors + " reaches past the end of " + below.name() + " (" + below.size() + " bytes); the "
                    + "device is smaller than the volume was made for");
        }
        this.fixedPayloadBytes = payloadBytes;
        this.size = payloadBytes >= 0 ? payloadBytes : usable - usable % sectorSize;
        Geometry belowGeometry = below.geometry();
        this.geometry = geometryAbove(belowGeometry, payloadStart, sectorSize);
        this.maxPiece = maxPiece(geometry.optimalIo());
        this.sectorsEncrypted = stats.counter("sectors_encrypted");
        this.sectorsDecrypted = stats.counter("sectors_decrypted");
        logAlignment(belowGeometry);
    }

    /** The geometry below, shifted by the payload offset and coarsened to whole crypto sectors. */
    static Geometry geometryAbove(Geometry below, long payloadStart, int sectorSize) {
        Geometry shifted = below.shiftedBy(payloadStart);
        int minimumIo = Math.max(shifted.minimumIo(), sectorSize);
        int optimalIo = lcm(shifted.optimalIo(), minimumIo);
        int maxTransfer = shifted.maxTransfer() == 0 ? 0 : Math.max(sectorSize, shifted.maxTransfer() - shifted.maxTransfer() % sectorSize);
        return new Geometry(minimumIo, optimalIo, shifted.alignmentOffset() % optimalIo, maxTransfer);
    }

    /**
     * The largest multiple of {@code optimalIo} not above {@link #MAX_WRITE_BUFFER}, and at least one
     * {@code optimalIo}: over a 1.5 MiB RAID-5 row that is 3 MiB, over a 192 KiB row 4032 KiB.
     */
    static int maxPiece(int optimalIo) {
        return Math.max(optimalIo, MAX_WRITE_BUFFER / optimalIo * optimalIo);
    }

    /**
     * The longest piece a write goes down in: a whole number of the optimal I/O (full stripe) of the device
     * below, at most 4 MiB unless one optimal I/O is larger. A longer write is cut where a piece ends on an
     * optimal-I/O boundary below, so over an aligned payload every piece but a partial first or last one is
     * whole rows of the array below (cutting at a fixed 4 MiB would turn every row a cut falls into into two
     * partial-row writes).
     */
    public int maxPieceBytes() {
        return maxPiece;
    }

    /**
     * Length of the piece of a write starting at {@code offset} with {@code remaining} bytes left: all of it
     * when that fits {@link #maxPiece}, else up to the last optimal-I/O boundary below within it.
     */
    private int pieceLength(long offset, int remaining) {
        if (remaining <= maxPiece) {
            return remaining;
        }
        long unit = geometry.optimalIo();
        long end = offset + maxPiece;
        long boundary = end - Math.floorMod(end - geometry.alignmentOffset(), unit);
        if (boundary > offset && (boundary - offset) % sectorSize == 0) {
            return (int) (boundary - offset);
        }
        return maxPiece;    // boundaries below fall inside crypto sectors (misaligned payload): whole units then
    }

    private static int lcm(int a, int b) {
        int x = a;
        int y = b;
        while (y != 0) {
            int t = x % y;
            x = y;
            y = t;
        }
        return Math.multiplyExact(a / x, b);
    }

    private void logAlignment(Geometry belowGeometry) {
        if (geometry.isOptimalIoAligned()) {
            log.info("{}: {} over {}, payload at sector {} (aligned to the {}-byte optimal I/O below), skip {}, {} bytes",
                    name, cipher, below.name(), offsetSectors, belowGeometry.optimalIo(), skipSectors, size);
            return;
        }
        log.warn("{}: payload offset {} sectors ({} bytes) is misaligned with the {}-byte optimal I/O (stripe) of {}: "
                        + "every full-stripe write above becomes two partial ones. Use offset {} sectors "
                        + "(cryptsetup --offset / --align-payload) to align it.",
                name, offsetSectors, payloadStart, belowGeometry.optimalIo(), below.name(),
                alignedPayloadStart(belowGeometry, payloadStart) / 512);
    }

    /**
     * The first payload start (bytes below) at or after {@code payloadStart} that begins an optimal-I/O unit
     * of the device below; at or after, so a header in front of the payload keeps its room.
     */
    static long alignedPayloadStart(Geometry below, long payloadStart) {
        long stripe = below.optimalIo();
        long first = below.alignmentOffset();
        return payloadStart <= first ? first : first + (payloadStart - first + stripe - 1) / stripe * stripe;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long size() {
        return size;
    }

    /**
     * The device below grew: the payload now reaches to its new end (what {@code cryptsetup resize} does for a plain
     * or LUKS volume whose data segment is "dynamic"; a fixed-length payload keeps its length). Sectors keep their
     * numbers and IVs, so nothing is re-encrypted.
     */
    @Override
    public long resized() {
        long usable = below.resized() - payloadStart;
        if (fixedPayloadBytes >= 0) {
            return size;   // a fixed-length payload stays as long as its header says
        }
        long grown = usable - usable % sectorSize;
        synchronized (this) {
            if (grown > size) {
                size = grown;
            }
        }
        return size;
    }

    @Override
    public int logicalBlockSize() {
        return sectorSize;
    }

    @Override
    public Geometry geometry() {
        return geometry;
    }

    public SectorCipher cipher() {
        return cipher;
    }

    public long offsetSectors() {
        return offsetSectors;
    }

    public long skipSectors() {
        return skipSectors;
    }

    @Override
    protected void readBlocks(long offset, ByteBuffer dst) throws IOException {
        int length = dst.remaining();
        int start = dst.position();
        below.read(payloadStart + offset, dst);
        ParallelCipher.run(cipher, false, dst, start, dst, start, length, ivSector(offset));
        sectorsDecrypted.add(length / sectorSize);
    }

    @Override
    protected void writeBlocks(long offset, ByteBuffer src) throws IOException {
        int length = src.remaining();
        ByteBuffer buffer = writeBuffer(length);
        int srcIndex = src.position();
        for (int done = 0; done < length; ) {
            int n = pieceLength(offset + done, length - done);
            buffer.clear(); // absolute puts are bounded by the limit the previous write left
            ParallelCipher.run(cipher, true, src, srcIndex + done, buffer, 0, n, ivSector(offset + done));
            buffer.limit(n);
            below.write(payloadStart + offset + done, buffer);
            done += n;
        }
        src.position(src.limit());
        sectorsEncrypted.add(length / sectorSize);
    }

    @Override
    public boolean supportsDiscard() {
        return allowDiscards && below.supportsDiscard();
    }

    /** Discarded ranges read back as whatever the zeros (or garbage) below decrypt to: never as zeros. */
    @Override
    public boolean discardZeroes() {
        return false;
    }

    @Override
    protected void discardBlocks(long offset, long length) throws IOException {
        if (!supportsDiscard()) {
            throw new UnsupportedOperationException(name + " does not pass discards down"
                    + (allowDiscards ? " (" + below.name() + " does not support them)" : "; enable allow_discards"));
        }
        below.discard(payloadStart + offset, length);
    }

    /** Zeroes the key and closes the device below. */
    @Override
    public void close() throws IOException {
        cipher.close();
        super.close();
    }

    @Override
    public String toString() {
        return name + " (" + cipher + ", offset " + offsetSectors + ", skip " + skipSectors + ", over " + below.name() + ")";
    }

    /** dm-crypt's sector number of payload byte {@code offset}: 512-byte units plus the IV offset. */
    private long ivSector(long offset) {
        return offset / 512 + skipSectors;
    }

    @Override
    protected void checkRequest(long offset, long length) {
        if (offset % sectorSize != 0 || length % sectorSize != 0) {
            throw new IllegalArgumentException(name + ": offset " + offset + " / length " + length
                    + " is not a multiple of the " + sectorSize + "-byte crypto sector size");
        }
        BlockDevice.checkRange(this, offset, length);
    }

    /** This thread's write buffer, grown (once) to fit {@code length} up to {@link #maxPiece}. */
    private ByteBuffer writeBuffer(int length) {
        ByteBuffer buffer = writeBuffers.get();
        int wanted = (int) Math.min(maxPiece, Math.max(MIN_WRITE_BUFFER, Long.highestOneBit(length - 1L) << 1));
        if (buffer == null || buffer.capacity() < Math.min(length, maxPiece)) {
            // aligned, so a device below opened with O_DIRECT accepts it
            buffer = ByteBuffer.allocateDirect(wanted + BUFFER_ALIGNMENT).alignedSlice(BUFFER_ALIGNMENT);
            buffer = buffer.limit(wanted).slice();
            writeBuffers.set(buffer);
        }
        return buffer;
    }
}
