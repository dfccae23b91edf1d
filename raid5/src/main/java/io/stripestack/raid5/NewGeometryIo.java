package io.stripestack.raid5;

import io.stripestack.blockdev.BlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Reads and writes of the part of a reshaping array that is already in the new geometry (below the
 * reshape checkpoint), and the mover's writes of whole new rows. A healthy array only (a reshape does not
 * run degraded): reads go straight from the data member into the caller's buffer; a write reads the rest of
 * each row it touches, puts the new data in, recomputes the row's parity and writes the touched chunks and
 * the parity. No stripe cache: this path lives only while a reshape runs; the finished array gets the
 * standard parts ({@link ArrayParts}) for its new geometry.
 *
 * <p>Concurrency: any number of threads. Row updates of one row are serialized by one of
 * {@value #ROW_LOCKS} striped monitors (a row hashes to one); reads take no lock (a read racing a write of
 * the same blocks may see either, as on any block device). Each thread has its own row and parity buffers
 * ({@link ThreadLocal}, allocated on its first row update).
 */
final class NewGeometryIo {
    private static final int ROW_LOCKS = 64;

    private final StripeGeometry geo;
    /** The members by role in the new geometry. */
    private final BlockDevice[] devices;
    private final Xor xor;
    private final Object[] rowLocks = new Object[ROW_LOCKS];
    private final ThreadLocal<RowBuffers> buffers;
    /** Each thread's chunk walk, apart from its row buffers so that a reader allocates no row. */
    private final ThreadLocal<StripeGeometry.Pieces> walks = ThreadLocal.withInitial(StripeGeometry.Pieces::new);

    /** Per-thread scratch of one row: its data chunks, then its parity chunk. */
    private static final class RowBuffers {
        final ByteBuffer row;
        final ByteBuffer[] sources;
        final int[] sourceIndex;

        RowBuffers(StripeGeometry geo) {
            row = ByteBuffer.allocateDirect(geo.rowBytes + geo.chunk).order(ByteOrder.nativeOrder());
            sources = new ByteBuffer[geo.dataDisks];
            sourceIndex = new int[geo.dataDisks];
            for (int i = 0; i < geo.dataDisks; i++) {
                sources[i] = row;
                sourceIndex[i] = i * geo.chunk;
            }
        }
    }

    NewGeometryIo(StripeGeometry geo, BlockDevice[] devices, Xor xor) {
        this.geo = geo;
        this.devices = devices;
        this.xor = xor;
        for (int i = 0; i < ROW_LOCKS; i++) {
            rowLocks[i] = new Object();
        }
        this.buffers = ThreadLocal.withInitial(() -> new RowBuffers(geo));
    }

    StripeGeometry geometry() {
        return geo;
    }

    /** Reads {@code length} array bytes at {@code offset} into {@code dst} from {@code dstIndex}. */
    void read(long offset, ByteBuffer dst, int dstIndex, int length) throws IOException {
        StripeGeometry.Pieces p = geo.pieces(walks.get(), offset, length);
        while (p.next()) {
            devices[geo.dataMember(p.row, p.index)].read(geo.memberOffset(p.row) + p.inChunk,
                    dst.slice(dstIndex + p.done, p.length));
        }
    }

    /**
     * Writes {@code length} bytes of {@code src} from {@code srcIndex} at array {@code offset}, or zeros when
     * {@code src} is null (a discard).
     */
    void write(long offset, ByteBuffer src, int srcIndex, int length) throws IOException {
        while (length > 0) {
            long row = offset / geo.rowBytes;
            int inRow = (int) (offset % geo.rowBytes);
            int n = (int) Math.min(length, geo.rowBytes - inRow);
            synchronized (rowLocks[(int) (row % ROW_LOCKS)]) {
                updateRow(row, inRow, src, srcIndex, n);
            }
            offset += n;
            srcIndex += n;
            length -= n;
        }
    }

    /** Flushes every member of the new geometry. */
    void flush() throws IOException {
        for (BlockDevice d : devices) {
            d.flush();
        }
    }

    private void updateRow(long row, int inRow, ByteBuffer src, int srcIndex, int n) throws IOException {
        RowBuffers b = buffers.get();
        ByteBuffer buf = b.row;
        if (n < geo.rowBytes) {
            read(row * geo.rowBytes, buf, 0, geo.rowBytes);
        }
        if (src != null) {
            buf.put(inRow, src, srcIndex, n);
        } else {
            for (int i = 0; i < n; i++) {
                buf.put(inRow + i, (byte) 0);
            }
        }
        xor.xorAssign(buf, geo.rowBytes, b.sources, b.sourceIndex, geo.dataDisks, geo.chunk);
        StripeGeometry.Pieces p = geo.pieces(walks.get(), row * geo.rowBytes + inRow, n);
        while (p.next()) {
            devices[geo.dataMember(row, p.index)].write(geo.memberOffset(row),
                    buf.slice(p.index * geo.chunk, geo.chunk));
        }
        devices[geo.parityMember(row)].write(geo.memberOffset(row), buf.slice(geo.rowBytes, geo.chunk));
    }

    /**
     * Writes whole new rows {@code firstRow}.. from {@code data} ({@code rows} rows of array bytes from 0),
     * their parity computed into {@code parity} (one chunk per row): the reshape's copy, every member write
     * of the batch at once through {@code io}. No row lock: no request reaches rows being moved. The caller
     * (the mover, one thread) owns {@code sources} and {@code sourceIndex} (one entry per data chunk).
     *
     * @throws IOException the first member write that failed
     */
    void writeWholeRows(long firstRow, int rows, ByteBuffer data, ByteBuffer parity, ByteBuffer[] sources,
                        int[] sourceIndex, MemberIoExecutor io) throws IOException {
        MemberIoExecutor.Batch batch = io.batch();
        for (int k = 0; k < rows; k++) {
            long row = firstRow + k;
            int rowStart = k * geo.rowBytes;
            for (int i = 0; i < geo.dataDisks; i++) {
                sources[i] = data;
                sourceIndex[i] = rowStart + i * geo.chunk;
            }
            xor.xorAssign(parity, k * geo.chunk, sources, sourceIndex, geo.dataDisks, geo.chunk);
            long memberOffset = geo.memberOffset(row);
            for (int i = 0; i < geo.dataDisks; i++) {
                int member = geo.dataMember(row, i);
                batch.add(member, devices[member], memberOffset, data.slice(rowStart + i * geo.chunk, geo.chunk), true);
            }
            int member = geo.parityMember(row);
            batch.add(member, devices[member], memberOffset, parity.slice(k * geo.chunk, geo.chunk), true);
        }
        Arrays.fill(sources, null);
        batch.runThrowingFirstError();
    }
}
