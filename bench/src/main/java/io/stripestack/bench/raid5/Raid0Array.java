package io.stripestack.bench.raid5;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MeteredBlockDevice;
import io.stripestack.raid5.MemberIoExecutor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * Plain striping (md RAID-0 placement: chunk c on member {@code c mod n} at row {@code c / n}), no parity
 * and no superblock: the baseline the RAID-5 benchmark compares against, over the same member files.
 * Reads and writes go straight between the caller's buffer and the members, pieces on different members
 * in parallel.
 *
 * <p>Concurrency: no mutable state besides the member I/O threads ({@link MemberIoExecutor}); any number
 * of callers may run at once. Closing closes the members.
 */
public final class Raid0Array extends MeteredBlockDevice {
    private final String name;
    private final BlockDevice[] members;
    private final int chunk;
    private final int chunkShift;
    private final long dataOffset;
    private final long size;
    private final int blockSize;
    private final Geometry geometry;
    private final MemberIoExecutor io;

    /**
     * @param dataOffset bytes skipped at the start of every member (use the RAID-5 data offset to stripe over
     *                   the same region of the same files)
     */
    public Raid0Array(String name, List<? extends BlockDevice> members, int chunk, long dataOffset) {
        super(name);
        if (members.size() < 2) {
            throw new IllegalArgumentException(name + ": RAID-0 needs at least 2 members, got " + members.size());
        }
        if (chunk < 4096 || Integer.bitCount(chunk) != 1) {
            throw new IllegalArgumentException(name + ": chunk " + chunk + " must be a power of two >= 4096");
        }
        this.name = name;
        this.members = members.toArray(new BlockDevice[0]);
        this.chunk = chunk;
        this.chunkShift = Integer.numberOfTrailingZeros(chunk);
        this.dataOffset = dataOffset;
        long perMember = Long.MAX_VALUE;
        int block = 512;
        for (BlockDevice d : this.members) {
            perMember = Math.min(perMember, (d.size() - dataOffset) / chunk * chunk);
            block = Math.max(block, d.logicalBlockSize());
        }
        if (perMember <= 0) {
            throw new IllegalArgumentException(name + ": members are too small for one chunk after the data offset");
        }
        this.size = perMember * this.members.length;
        this.blockSize = block;
        int stripe = chunk * this.members.length;
        this.geometry = new Geometry(chunk, stripe, 0, Math.max(1, (16 << 20) / stripe) * stripe);
        this.io = new MemberIoExecutor(name, MemberIoExecutor.defaultThreads(this.members.length));
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public int logicalBlockSize() {
        return blockSize;
    }

    @Override
    public Geometry geometry() {
        return geometry;
    }

    @Override
    protected void readBlocks(long offset, ByteBuffer dst) throws IOException {
        transfer(offset, dst, false);
    }

    @Override
    protected void writeBlocks(long offset, ByteBuffer src) throws IOException {
        transfer(offset, src, true);
    }

    private void transfer(long offset, ByteBuffer buf, boolean write) throws IOException {
        MemberIoExecutor.Batch batch = io.batch();
        long pos = offset;
        int index = buf.position();
        int left = buf.remaining();
        int n = members.length;
        while (left > 0) {
            long chunkNo = pos >>> chunkShift;
            int inChunk = (int) (pos & (chunk - 1));
            int len = Math.min(left, chunk - inChunk);
            int member = (int) (chunkNo % n);
            batch.add(member, members[member], dataOffset + (chunkNo / n) * chunk + inChunk,
                    buf.slice(index, len), write);
            pos += len;
            index += len;
            left -= len;
        }
        batch.runThrowingFirstError();
        buf.position(buf.limit());
    }

    @Override
    protected void flushDevice() throws IOException {
        for (BlockDevice d : members) {
            d.flush();
        }
    }

    @Override
    public void close() throws IOException {
        io.close();
        for (BlockDevice d : members) {
            d.close();
        }
    }
}
