package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.ForwardingBlockDevice;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/**
 * The partial parity log at a power cut: cuts taken at many points of a concurrent partial-write workload on shared
 * rows, members below a volatile cache of which any part may have reached the media, log writes durable. Every cut
 * must recover as stripestack does (rebuilding the chunks of a missing member right) and as Linux does (replaying only
 * the newest unit of each member's log, the end of the chain of headers the kernel walks). And no unit starts where
 * the kernel reads no header, and stripestack's recovery walks the chain exactly as far as the kernel does.
 */
class PartialParityLogPowerCutTest {
    static final int CHUNK = 16384;
    static final int N = 4;
    static final long MEMBER = 4L << 20;
    static final long DATA_OFFSET = Raid5Config.DEFAULT_DATA_OFFSET_SECTORS * 512;
    static final int ROWS_WRITTEN = 24;
    /** The member whose chunks no write touches: missing at every degraded start. */
    static final int SPARED = 1;
    /** Writes between two power cuts. */
    static final int CUT_EVERY = 10;
    static final int THREADS = 6;
    static final int WRITES = 250;

    /**
     * A member below a volatile cache. Reads see every write; a write reaches the media at a flush, or at a power cut
     * if it happens to; a durable write reaches it when it returns. Every call holds {@code cut}'s read lock while it
     * changes anything, so a cut ({@link #image}, under the write lock on every member) sees each call before or
     * after; calls linger before and after, so that a cut finds log writes issued and not yet on the media, and on
     * the media and not yet acknowledged.
     */
    static final class Media extends ForwardingBlockDevice {
        private record Pending(long offset, byte[] bytes, boolean durable) {
        }

        private final ReentrantReadWriteLock cut;
        private final byte[] media = new byte[(int) MEMBER];
        private final List<Pending> pending = new ArrayList<>();

        Media(String name, ReentrantReadWriteLock cut) {
            super(new MemoryBlockDevice(name, (int) MEMBER, 512));
            this.cut = cut;
        }

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            linger();
            store(offset, src, false);
            linger();
        }

        @Override
        public void writeDurable(long offset, ByteBuffer src) throws IOException {
            linger();
            store(offset, src, true);
            linger();
        }

        private void store(long offset, ByteBuffer src, boolean durable) throws IOException {
            byte[] bytes = new byte[src.remaining()];
            src.duplicate().get(bytes);
            cut.readLock().lock();
            try {
                synchronized (this) {
                    below.write(offset, src);
                    if (durable) {
                        System.arraycopy(bytes, 0, media, (int) offset, bytes.length);
                    } else {
                        pending.add(new Pending(offset, bytes, false));
                    }
                }
            } finally {
                cut.readLock().unlock();
            }
        }

        @Override
        public void flush() throws IOException {
            linger();
            cut.readLock().lock();
            try {
                synchronized (this) {
                    for (Pending p : pending) {
                        System.arraycopy(p.bytes, 0, media, (int) p.offset, p.bytes.length);
                    }
                    pending.clear();
                }
            } finally {
                cut.readLock().unlock();
            }
        }

        /** What the media would hold after a power cut now: each write not flushed since landed or not, by chance. */
        synchronized byte[] image(Random chance) {
            byte[] image = media.clone();
            for (Pending p : pending) {
                if (chance.nextBoolean()) {
                    System.arraycopy(p.bytes, 0, image, (int) p.offset, p.bytes.length);
                }
            }
            return image;
        }

        private static void linger() {
            LockSupport.parkNanos(ThreadLocalRandom.current().nextInt(200_000));
        }
    }

    @Test
    void everyPowerCutRecoversAsStripestackAndAsLinuxDo() throws Exception {
        ReentrantReadWriteLock cut = new ReentrantReadWriteLock();
        List<Media> devices = new ArrayList<>();
        for (int i = 0; i < N; i++) {
            devices.add(new Media("m" + i, cut));
        }
        int rowBytes = (N - 1) * CHUNK;
        AtomicInteger cuts = new AtomicInteger();
        try (Raid5Array array = Raid5Array.create(devices, Raid5Config.defaults("cuts").withChunk(CHUNK),
                PartialParityLogTest.PPL, true)) {
            byte[] model = new byte[(int) array.size()];
            new Random(1).nextBytes(model);
            array.write(0, ByteBuffer.wrap(model));
            array.flush();
            AtomicInteger written = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(THREADS);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    Random random = new Random(100 + thread);
                    for (int i = 0; i < WRITES; i++) {
                        // partial writes of one chunk each, rows shared by all, never a chunk of the spared member
                        // nor, in one row, chunks on both sides of it (an update writing both would be logged naming
                        // it, and its entry skipped without that member, as md's)
                        long row = random.nextInt(ROWS_WRITTEN);
                        int spared = sparedIndex(row);
                        int index = spared < 0 ? random.nextInt(N - 1)
                                : spared == 0 ? 1 + random.nextInt(N - 2) : random.nextInt(spared);
                        int blocks = 1 + random.nextInt(3);
                        int from = random.nextInt(CHUNK / 4096 - blocks + 1);
                        byte[] b = new byte[blocks * 4096];
                        random.nextBytes(b);
                        array.write(row * rowBytes + (long) index * CHUNK + from * 4096L, ByteBuffer.wrap(b));
                        int count = written.incrementAndGet();
                        if (count % CUT_EVERY == 0) {
                            byte[][] images = powerCut(devices, cut, count);
                            assertTheUntouchedChunksRebuild(images, model, rowBytes);
                            assertTheNewestUnitsMakeParityConsistent(images, rowBytes);
                            cuts.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(5, TimeUnit.MINUTES);
            }
            pool.shutdown();
        }
        assertEquals(THREADS * WRITES / CUT_EVERY, cuts.get());
    }

    /** A member that records where its log units start. */
    static final class UnitPlaces extends ForwardingBlockDevice {
        final List<Long> starts = Collections.synchronizedList(new ArrayList<>());

        UnitPlaces(BlockDevice below) {
            super(below);
        }

        @Override
        public void writeDurable(long offset, ByteBuffer src) throws IOException {
            if (offset < DATA_OFFSET && src.remaining() < PplHeader.BYTES * 2) {
                starts.add(offset);
            }
            super.writeDurable(offset, src);
        }
    }

    /**
     * Full-row writes log units of one header each (no partial parity): through the whole area, none starts in its
     * last 4 KiB, where the kernel reads no header (it walks offsets below the area less one header), so the newest
     * unit is never one the kernel cannot see.
     */
    @Test
    void noUnitStartsWhereTheKernelReadsNoHeader() throws Exception {
        List<UnitPlaces> devices = new ArrayList<>();
        for (int i = 0; i < N; i++) {
            devices.add(new UnitPlaces(new MemoryBlockDevice("m" + i, (int) MEMBER, 512)));
        }
        int rowBytes = (N - 1) * CHUNK;
        long area;
        long kernelWalk;
        try (Raid5Array array = Raid5Array.create(devices, Raid5Config.defaults("ends").withChunk(CHUNK),
                PartialParityLogTest.PPL, true)) {
            Md1Superblock sb = superblockOf(devices.get(0));
            area = PartialParityLog.areaOffset(sb);
            kernelWalk = kernelHeaderLimit(sb);
            byte[] row = new byte[rowBytes];
            int rows = (int) (array.size() / rowBytes);
            for (int i = 0; i < 2 * N * sb.pplSize * 512 / PplHeader.BYTES; i++) {
                array.write((long) (i % rows) * rowBytes, ByteBuffer.wrap(row));
            }
            assertTrue(array.stats().counter("ppl_area_restarts").sum() > 0, "the logs went round their areas");
        }
        for (UnitPlaces d : devices) {
            for (long start : d.starts) {
                assertTrue(start - area < kernelWalk, "a unit at byte " + (start - area)
                        + " of the area, where the kernel reads headers below " + kernelWalk);
            }
        }
    }

    /**
     * stripestack's recovery walks a member's chain of headers exactly as far as the kernel does: a unit at the last
     * offset the kernel reads is replayed, one at the next 4 KiB (where it reads none) is not.
     */
    @Test
    void theRecoveryWalksTheChainAsFarAsTheKernel() throws Exception {
        int rowBytes = (N - 1) * CHUNK;
        byte[][] images = new byte[N][(int) MEMBER];
        List<BlockDevice> devices = devicesOf(images, -1);
        try (Raid5Array array = Raid5Array.create(devices, Raid5Config.defaults("walk").withChunk(CHUNK),
                PartialParityLogTest.PPL, true)) {
            array.write(rowBytes, ByteBuffer.wrap(new byte[4096]));   // row 1: the array is dirty, its log not empty
            for (int m = 0; m < N; m++) {   // taken while it runs, as at a crash
                devices.get(m).read(0, ByteBuffer.wrap(images[m]));
            }
        }
        Md1Superblock sb = Md1Superblock.decode(ByteBuffer.wrap(images[0], Md1Superblock.OFFSET_BYTES,
                Md1Superblock.BLOCK_BYTES).slice(), "m0");
        int lastRead = kernelHeaderLimit(sb) - PplHeader.BYTES;
        int replayedWithin = entriesReplayed(withChainTo(images, sb, lastRead, rowBytes));
        int replayedPast = entriesReplayed(withChainTo(images, sb, lastRead + PplHeader.BYTES, rowBytes));
        assertEquals(1, replayedWithin - replayedPast, "only the unit the kernel reads is replayed");
    }

    /**
     * The images with the log of row 0's parity member replaced by a chain of empty units every 4 KiB up to
     * {@code last}, the newest, which names row 0 (a full-row entry).
     */
    private static byte[][] withChainTo(byte[][] images, Md1Superblock sb, int last, int rowBytes) {
        byte[][] copy = images.clone();
        int member = Raid5Layout.LEFT_SYMMETRIC.parityMember(0, N);
        copy[member] = images[member].clone();
        int area = (int) PartialParityLog.areaOffset(sb);
        Arrays.fill(copy[member], area, area + sb.pplSize * 512, (byte) 0);
        CRC32C crc = new CRC32C();
        int signature = PplHeader.signature(sb.setUuid);
        for (int at = 0; at <= last; at += PplHeader.BYTES) {
            ByteBuffer h = ByteBuffer.wrap(copy[member], area + at, PplHeader.BYTES).slice()
                    .order(ByteOrder.LITTLE_ENDIAN);
            PplHeader.begin(h, signature, 1000 + at / PplHeader.BYTES);
            if (at == last) {
                PplHeader.addEntry(h, 0, 0, rowBytes, member, PplHeader.ppChecksum(ByteBuffer.allocate(0), 0, 0, crc));
            }
            PplHeader.seal(h, crc);
        }
        return copy;
    }

    private static int entriesReplayed(byte[][] images) throws IOException {
        try (Raid5Array array = Raid5Assembler.assemble(devicesOf(images, -1), List.of(), Raid5Options.defaults())) {
            Matcher replayed = Pattern.compile("(\\d+) entries replayed").matcher(array.startRecovery());
            assertTrue(replayed.find(), array.startRecovery());
            return Integer.parseInt(replayed.group(1));
        }
    }

    /**
     * The kernel's walk for headers: offsets below the area's sectors less one header, rounded down to 4 KiB
     * (ppl_validate_rdev, ppl_load_distributed), in bytes.
     */
    private static int kernelHeaderLimit(Md1Superblock sb) {
        return (sb.pplSize - 8) / 8 * 8 * 512;
    }

    private static Md1Superblock superblockOf(BlockDevice d) throws IOException {
        ByteBuffer block = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
        d.read(Md1Superblock.OFFSET_BYTES, block);
        return Md1Superblock.decode(block.flip(), d.name());
    }

    /** The index of the spared member's chunk in the row, -1 where it holds the parity. */
    private static int sparedIndex(long row) {
        for (int index = 0; index < N - 1; index++) {
            if (Raid5Layout.LEFT_SYMMETRIC.dataMember(row, index, N) == SPARED) {
                return index;
            }
        }
        return -1;
    }

    private static byte[][] powerCut(List<Media> devices, ReentrantReadWriteLock cut, int seed) {
        cut.writeLock().lock();
        try {
            Random chance = new Random(seed);
            byte[][] images = new byte[devices.size()][];
            for (int i = 0; i < images.length; i++) {
                images[i] = devices.get(i).image(chance);
            }
            return images;
        } finally {
            cut.writeLock().unlock();
        }
    }

    private static List<BlockDevice> devicesOf(byte[][] images, int without) throws IOException {
        List<BlockDevice> devices = new ArrayList<>();
        for (int i = 0; i < images.length; i++) {
            if (i != without) {
                MemoryBlockDevice d = new MemoryBlockDevice("m" + i, images[i].length, 512);
                d.write(0, ByteBuffer.wrap(images[i]));
                devices.add(d);
            }
        }
        return devices;
    }

    /** stripestack's start without the spared member: its chunks, which no write touched, rebuild as they were. */
    private static void assertTheUntouchedChunksRebuild(byte[][] images, byte[] model, int rowBytes) throws IOException {
        try (Raid5Array array = Raid5Assembler.assemble(devicesOf(images, SPARED), List.of("m" + SPARED),
                Raid5Options.defaults())) {
            assertEquals(Raid5Status.Health.DEGRADED, array.status().health());
            assertTrue(array.startRecovery().contains("entries replayed"), array.startRecovery());
            for (long row = 0; row < ROWS_WRITTEN; row++) {
                int index = sparedIndex(row);
                if (index >= 0) {
                    int at = (int) (row * rowBytes + (long) index * CHUNK);
                    ByteBuffer chunk = ByteBuffer.allocate(CHUNK);
                    array.read(at, chunk);
                    assertArrayEquals(Arrays.copyOfRange(model, at, at + CHUNK), chunk.array(),
                            "row " + row + " chunk " + index + " on the missing member");
                }
            }
        }
    }

    /**
     * Linux's start: of each member's log only the newest unit is replayed, the last of the chain of headers from the
     * start of the area whose generations do not fall (raid5-ppl.c's ppl_load_distributed and ppl_recover_entry,
     * redone here over the images); afterwards every row's parity is the XOR of its data.
     */
    private static void assertTheNewestUnitsMakeParityConsistent(byte[][] images, int rowBytes) {
        Md1Superblock sb = Md1Superblock.decode(ByteBuffer.wrap(images[0], (int) Md1Superblock.OFFSET_BYTES,
                Md1Superblock.BLOCK_BYTES).slice(), "m0");
        long area = PartialParityLog.areaOffset(sb);
        int areaBytes = sb.pplSize * 512;
        int signature = PplHeader.signature(sb.setUuid);
        CRC32C crc = new CRC32C();
        for (int m = 0; m < N; m++) {
            ByteBuffer log = ByteBuffer.wrap(images[m], (int) area, areaBytes).slice().order(ByteOrder.LITTLE_ENDIAN);
            int newest = -1;
            long generation = Long.MIN_VALUE;
            for (int at = 0; at < kernelHeaderLimit(sb); ) {
                ByteBuffer h = log.slice(at, PplHeader.BYTES).order(ByteOrder.LITTLE_ENDIAN);
                if (!PplHeader.isValid(h, signature, crc) || PplHeader.generation(h) < generation) {
                    break;
                }
                generation = PplHeader.generation(h);
                newest = at;
                at += PplHeader.BYTES;
                for (int e = 0; e < PplHeader.entries(h); e++) {
                    at += PplHeader.ppSize(h, e);
                }
            }
            assertTrue(newest >= 0, "member " + m + " has a valid header");
            ByteBuffer h = log.slice(newest, PplHeader.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            int pp = newest + PplHeader.BYTES;
            for (int e = 0; e < PplHeader.entries(h); e++) {
                int ppSize = PplHeader.ppSize(h, e);
                assertEquals(PplHeader.entryChecksum(h, e), PplHeader.ppChecksum(log, pp, ppSize, crc),
                        "member " + m + " entry " + e + ": log writes are durable, so no partial parity is torn");
                replayEntry(images, log, pp, PplHeader.dataSector(h, e), ppSize, PplHeader.dataSize(h, e), rowBytes);
                pp += ppSize;
            }
        }
        for (long row = 0; row < ROWS_WRITTEN; row++) {
            long at = DATA_OFFSET + row * CHUNK;
            byte[] xor = new byte[CHUNK];
            for (int m = 0; m < N; m++) {
                for (int i = 0; i < CHUNK; i++) {
                    xor[i] ^= images[m][(int) at + i];
                }
            }
            assertArrayEquals(new byte[CHUNK], xor, "row " + row + ": parity is the XOR of the data");
        }
    }

    /** The kernel's replay of one entry (ppl_recover_entry), 512-byte blocks, on the images. */
    private static void replayEntry(byte[][] images, ByteBuffer log, int ppAt, long dataSector, int ppSize,
                                    int dataSize, int rowBytes) {
        long first = dataSector * 512;
        int dataDisks = N - 1;
        int strip;
        long last;
        if (ppSize < CHUNK) {
            int disks = ppSize > 0 ? dataSize / ppSize : dataDisks;
            strip = ppSize > 0 ? ppSize : dataSize / dataDisks;
            last = first + (long) (disks - 1) * CHUNK + strip;
        } else {
            strip = CHUNK;
            last = first + dataSize;
        }
        long row = first / rowBytes;
        int firstIndex = (int) (first % rowBytes / CHUNK);
        int memberAt = (int) (DATA_OFFSET + row * CHUNK + first % CHUNK);
        byte[] parity = new byte[strip];
        if (ppSize > 0) {
            log.get(ppAt, parity);
        }
        for (int k = 0; k < dataDisks && first + (long) k * CHUNK < last; k++) {
            byte[] data = images[Raid5Layout.LEFT_SYMMETRIC.dataMember(row, firstIndex + k, N)];
            for (int i = 0; i < strip; i++) {
                parity[i] ^= data[memberAt + i];
            }
        }
        System.arraycopy(parity, 0, images[Raid5Layout.LEFT_SYMMETRIC.parityMember(row, N)], memberAt, strip);
    }
}
