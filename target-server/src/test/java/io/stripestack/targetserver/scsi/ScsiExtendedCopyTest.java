package io.stripestack.targetserver.scsi;

import static io.stripestack.targetserver.scsi.ScsiHarness.*;
import static org.junit.jupiter.api.Assertions.*;

import io.stripestack.blockdev.BlockDevice;
import io.stripestack.blockdev.Geometry;
import io.stripestack.blockdev.MemoryBlockDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * EXTENDED COPY(LID1) and RECEIVE COPY RESULTS (SPC-4 6.4, 6.18) between the LUNs of one target, and the
 * Third-party Copy VPD page that describes the copy manager: parameter lists built byte by byte as an initiator
 * (VMware, sg_xcopy, libiscsi) sends them, the copied blocks read back with READ.
 */
class ScsiExtendedCopyTest {
    private static final int MIB = 1 << 20;
    private static final int BLOCK = 512;

    /** LUN 0 and LUN 1 of one target, sharing one copy target registry; {@code readOnly} applies to LUN 1. */
    private static ScsiHarness twoLuns(BlockDevice lun0, BlockDevice lun1, boolean readOnly) {
        CopyTargets targets = new CopyTargets();
        return new ScsiHarness(List.of(new LogicalUnit(lun0, identity("lun0"), false, targets),
                new LogicalUnit(lun1, identity("lun1"), readOnly, targets)));
    }

    private static LogicalUnitIdentity identity(String name) {
        return LogicalUnitIdentity.of(LogicalUnitIdentity.stableIdFromName(name));
    }

    private static ScsiHarness twoLuns() {
        return twoLuns(new MemoryBlockDevice("m0", 4 * MIB, BLOCK), new MemoryBlockDevice("m1", 4 * MIB, BLOCK), false);
    }

    // ---- parameter lists (SPC-4 6.4.3, 6.4.5, 6.4.6.2)

    /** An identification target descriptor (E4h) naming {@code unit} by its NAA designator. */
    private static byte[] identifies(LogicalUnit unit) {
        return identifies(unit.identity().naa(), unit.blockSize());
    }

    private static byte[] identifies(byte[] naa, int blockSize) {
        byte[] d = new byte[32];
        d[0] = (byte) 0xE4;
        d[4] = 0x01;                     // code set: binary
        d[5] = 0x03;                     // association: logical unit; designator type: NAA
        d[7] = (byte) naa.length;
        System.arraycopy(naa, 0, d, 8, naa.length);
        d[29] = (byte) (blockSize >>> 16); // DISK BLOCK LENGTH
        d[30] = (byte) (blockSize >>> 8);
        d[31] = (byte) blockSize;
        return d;
    }

    /** A block device to block device segment descriptor (02h). */
    private static byte[] segment(int source, int destination, int blocks, long sourceLba, long destinationLba) {
        byte[] d = new byte[28];
        d[0] = 0x02;
        Cdb.put16(d, 2, 24);
        Cdb.put16(d, 4, source);
        Cdb.put16(d, 6, destination);
        Cdb.put16(d, 10, blocks);
        Cdb.put64(d, 12, sourceLba);
        Cdb.put64(d, 20, destinationLba);
        return d;
    }

    /** A LID1 parameter list: the header (LIST ID USAGE {@code usage}), then the descriptors as given. */
    private static byte[] parameterList(int listId, int usage, List<byte[]> targets, List<byte[]> segments) {
        int targetBytes = targets.stream().mapToInt(t -> t.length).sum();
        int segmentBytes = segments.stream().mapToInt(s -> s.length).sum();
        byte[] p = new byte[16 + targetBytes + segmentBytes];
        p[0] = (byte) listId;
        p[1] = (byte) (usage << 3);
        Cdb.put16(p, 2, targetBytes);
        Cdb.put32(p, 8, segmentBytes);
        int at = 16;
        for (byte[] d : targets) {
            System.arraycopy(d, 0, p, at, d.length);
            at += d.length;
        }
        for (byte[] d : segments) {
            System.arraycopy(d, 0, p, at, d.length);
            at += d.length;
        }
        return p;
    }

    /** A list without a list identifier (LIST ID USAGE 11b). */
    private static byte[] parameterList(List<byte[]> targets, List<byte[]> segments) {
        return parameterList(0, CopyParameterList.NO_LIST_ID, targets, segments);
    }

    private static byte[] extendedCopy(int length) {
        byte[] c = new byte[16];
        c[0] = (byte) 0x83;
        Cdb.put32(c, 10, length);
        return c;
    }

    private static Result xcopy(ScsiHarness h, String nexus, long lun, byte[] list) {
        return h.run(nexus, lun, extendedCopy(list.length), list);
    }

    private static Result xcopy(ScsiHarness h, byte[] list) {
        return xcopy(h, NEXUS_A, 0, list);
    }

    private static byte[] receiveCopyResults(int serviceAction, int listId, int allocation) {
        byte[] c = new byte[16];
        c[0] = (byte) 0x84;
        c[1] = (byte) serviceAction;
        c[2] = (byte) listId;
        Cdb.put32(c, 10, allocation);
        return c;
    }

    private static LogicalUnit lun(ScsiHarness h, long lun) {
        return h.target.logicalUnit(lun);
    }

    /** Writes {@code data} at {@code lba} of {@code lun}, at most 1 MiB per WRITE(16). */
    private static void write(ScsiHarness h, long lun, long lba, byte[] data) {
        for (int at = 0; at < data.length; at += MIB) {
            int n = Math.min(MIB, data.length - at);
            h.run(NEXUS_A, lun, rw16(0x8A, lba + at / BLOCK, n / BLOCK), Arrays.copyOfRange(data, at, at + n))
                    .assertGood();
        }
    }

    private static byte[] read(ScsiHarness h, long lun, long lba, int blocks) {
        byte[] out = new byte[blocks * BLOCK];
        for (int at = 0; at < out.length; at += MIB) {
            int n = Math.min(MIB, out.length - at);
            byte[] d = h.run(NEXUS_A, lun, rw16(0x88, lba + at / BLOCK, n / BLOCK), null).assertGood().data();
            System.arraycopy(d, 0, out, at, n);
        }
        return out;
    }

    // ---- copies

    @Test
    void copyBetweenTwoLunsReadsBackAndLeavesTheNeighboursAlone() {
        try (ScsiHarness h = twoLuns()) {
            byte[] data = pattern(300 * BLOCK, 1);
            write(h, 0, 10, data);
            byte[] list = parameterList(List.of(identifies(lun(h, 0)), identifies(lun(h, 1))),
                    List.of(segment(0, 1, 300, 10, 50)));
            xcopy(h, list).assertGood();
            assertArrayEquals(data, read(h, 1, 50, 300));
            assertArrayEquals(new byte[BLOCK], read(h, 1, 49, 1), "block before the destination untouched");
            assertArrayEquals(new byte[BLOCK], read(h, 1, 350, 1), "block after the destination untouched");

            // The copy manager of the destination unit copies as well, and segments run in list order.
            byte[] back = parameterList(List.of(identifies(lun(h, 1)), identifies(lun(h, 0))),
                    List.of(segment(0, 1, 100, 50, 1000), segment(1, 1, 100, 1000, 2000)));
            xcopy(h, NEXUS_A, 1, back).assertGood();
            assertArrayEquals(Arrays.copyOf(data, 100 * BLOCK), read(h, 0, 2000, 100));
        }
    }

    @Test
    void aCopyLargerThanTheBufferMovesInPiecesOfAtMostOneMebibyte() {
        AtomicInteger largestRead = new AtomicInteger();
        AtomicInteger largestWrite = new AtomicInteger();
        BlockDevice source = new ShapedBlockDevice(new MemoryBlockDevice("m0", 8 * MIB, BLOCK), Geometry.simple(BLOCK),
                true) {
            @Override
            public void read(long offset, ByteBuffer dst) throws IOException {
                largestRead.accumulateAndGet(dst.remaining(), Math::max);
                super.read(offset, dst);
            }
        };
        BlockDevice destination = new ShapedBlockDevice(new MemoryBlockDevice("m1", 8 * MIB, BLOCK),
                Geometry.simple(BLOCK), true) {
            @Override
            public void write(long offset, ByteBuffer src) throws IOException {
                largestWrite.accumulateAndGet(src.remaining(), Math::max);
                super.write(offset, src);
            }
        };
        try (ScsiHarness h = twoLuns(source, destination, false)) {
            byte[] data = pattern(6 * MIB, 2);
            write(h, 0, 0, data);
            largestRead.set(0);
            int blocks = data.length / BLOCK;
            xcopy(h, parameterList(List.of(identifies(lun(h, 0)), identifies(lun(h, 1))),
                    List.of(segment(0, 1, blocks, 0, 7)))).assertGood();
            assertEquals(CopyManager.COPY_BUFFER_BYTES, largestRead.get(), "reads of one buffer at most");
            assertEquals(CopyManager.COPY_BUFFER_BYTES, largestWrite.get(), "writes of one buffer at most");
            assertArrayEquals(data, read(h, 1, 7, blocks));
        }
    }

    /** Overlapping copies within one unit leave the destination holding what the source held, both ways. */
    @Test
    void aCopyOntoItselfThatOverlapsCopiesTheOriginalBlocks() {
        try (ScsiHarness h = new ScsiHarness(new MemoryBlockDevice("m0", 8 * MIB, BLOCK), false)) {
            int blocks = 5000; // more than four buffers: the pieces' order matters
            byte[] data = pattern(blocks * BLOCK, 3);
            write(h, 0, 1000, data);
            List<byte[]> self = List.of(identifies(h.unit));

            xcopy(h, parameterList(self, List.of(segment(0, 0, blocks, 1000, 1100)))).assertGood();
            assertArrayEquals(data, read(h, 0, 1100, blocks), "forwards: the destination lies above the source");
            assertArrayEquals(Arrays.copyOf(data, 100 * BLOCK), read(h, 0, 1000, 100), "source below it unchanged");

            xcopy(h, parameterList(self, List.of(segment(0, 0, blocks, 1100, 900)))).assertGood();
            assertArrayEquals(data, read(h, 0, 900, blocks), "backwards: the destination lies below the source");
        }
    }

    @Test
    void aSegmentPastTheEndOfAMediumIsAbortedBeforeAnythingIsCopied() {
        try (ScsiHarness h = twoLuns()) {
            long last = lun(h, 1).blockCount() - 1;
            byte[] data = pattern(2 * BLOCK, 4);
            write(h, 0, 0, data);
            List<byte[]> targets = List.of(identifies(lun(h, 0)), identifies(lun(h, 1)));
            // The first segment is in range; the second is not, so neither may be copied.
            xcopy(h, parameterList(targets, List.of(segment(0, 1, 2, 0, 0), segment(0, 1, 2, 0, last))))
                    .assertCheck(SenseException.COPY_ABORTED, 0x0D, 0x02);
            xcopy(h, parameterList(targets, List.of(segment(0, 1, 2, last, 0))))
                    .assertCheck(SenseException.COPY_ABORTED, 0x0D, 0x02);
            xcopy(h, parameterList(targets, List.of(segment(0, 1, 1, -1L, 0))))
                    .assertCheck(SenseException.COPY_ABORTED, 0x0D, 0x02);
            assertArrayEquals(new byte[2 * BLOCK], read(h, 1, 0, 2), "nothing copied");
            assertArrayEquals(new byte[BLOCK], read(h, 1, last, 1), "nothing copied");
            xcopy(h, parameterList(targets, List.of(segment(0, 1, 1, 0, last)))).assertGood();
        }
    }

    @Test
    void aWriteProtectedDestinationIsRefusedAndAReadOnlySourceIsCopiedFrom() {
        try (ScsiHarness h = twoLuns(new MemoryBlockDevice("m0", MIB, BLOCK), new MemoryBlockDevice("m1", MIB, BLOCK),
                true)) {
            byte[] data = pattern(4 * BLOCK, 5);
            write(h, 0, 0, data);
            List<byte[]> targets = List.of(identifies(lun(h, 0)), identifies(lun(h, 1)));
            xcopy(h, parameterList(targets, List.of(segment(0, 1, 4, 0, 0))))
                    .assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
            assertArrayEquals(new byte[4 * BLOCK], read(h, 1, 0, 4));
            xcopy(h, NEXUS_A, 1, parameterList(targets, List.of(segment(0, 0, 4, 0, 8)))).assertGood();
            assertArrayEquals(data, read(h, 0, 8, 4), "the read-only unit's copy manager copies between others");
        }
    }

    @Test
    void softwareWriteProtectOnTheDestinationRefusesTheCopy() {
        try (ScsiHarness h = twoLuns()) {
            byte[] control = h.run(NEXUS_A, 1, cdb(0x5A, 0x08, 0x0A, 0, 0, 0, 0, 0, 255, 0), null).assertGood().data();
            byte[] select = new byte[8 + 12];
            System.arraycopy(control, 8, select, 8, 12);
            select[8] &= 0x7f;
            select[12] |= 0x08; // SWP
            h.run(NEXUS_A, 1, cdb(0x55, 0x10, 0, 0, 0, 0, 0, 0, select.length, 0), select).assertGood();
            xcopy(h, parameterList(List.of(identifies(lun(h, 0)), identifies(lun(h, 1))),
                    List.of(segment(0, 1, 1, 0, 0)))).assertCheck(SenseException.DATA_PROTECT, 0x27, 0x00);
        }
    }

    @Test
    void aReservationOfAnotherNexusOnACopyTargetIsAConflict() {
        try (ScsiHarness h = twoLuns()) {
            write(h, 0, 0, pattern(BLOCK, 6));
            h.run(NEXUS_B, 1, cdb(0x16, 0, 0, 0, 0, 0), null).assertGood(); // RESERVE(6) of LUN 1 by B
            byte[] list = parameterList(List.of(identifies(lun(h, 0)), identifies(lun(h, 1))),
                    List.of(segment(0, 1, 1, 0, 0)));
            assertEquals(ScsiCommand.RESERVATION_CONFLICT, xcopy(h, list).status(), "LUN 1 as destination");
            assertEquals(ScsiCommand.RESERVATION_CONFLICT, xcopy(h, parameterList(
                    List.of(identifies(lun(h, 1)), identifies(lun(h, 0))), List.of(segment(0, 1, 1, 0, 0)))).status(),
                    "LUN 1 as source");
            xcopy(h, NEXUS_B, 0, list).assertGood();
        }
    }

    @Test
    void aMediumErrorOnTheWayAbortsTheCopyAfterTheSegmentsBeforeIt() {
        ShapedBlockDevice destination = new ShapedBlockDevice(new MemoryBlockDevice("m1", MIB, BLOCK),
                Geometry.simple(BLOCK), true);
        try (ScsiHarness h = twoLuns(new MemoryBlockDevice("m0", MIB, BLOCK), destination, false)) {
            destination.failAt(100L * BLOCK, true);
            byte[] list = parameterList(7, CopyParameterList.HOLD_STATUS,
                    List.of(identifies(lun(h, 0)), identifies(lun(h, 1))),
                    List.of(segment(0, 1, 10, 0, 0), segment(0, 1, 10, 0, 95), segment(0, 1, 10, 0, 200)));
            xcopy(h, list).assertCheck(SenseException.COPY_ABORTED, 0x0D, 0x02);
            byte[] status = h.run(receiveCopyResults(0x00, 7, 64)).assertGood().data();
            assertEquals(0x02, status[4], "COPY MANAGER STATUS: completed with errors");
            assertEquals(1, Cdb.u16(status, 5), "SEGMENTS PROCESSED");
            assertEquals(10L * BLOCK, Cdb.u32(status, 8), "TRANSFER COUNT in bytes");
        }
    }

    // ---- refused parameter lists

    @Test
    void descriptorsTheCopyManagerDoesNotSupportAreNamed() {
        try (ScsiHarness h = twoLuns()) {
            byte[] self = identifies(h.unit);
            byte[] b2b = segment(0, 0, 1, 0, 1);

            byte[] fibreChannel = self.clone();
            fibreChannel[0] = (byte) 0xE0;
            Result r = xcopy(h, parameterList(List.of(fibreChannel), List.of(b2b)))
                    .assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x07);
            assertEquals(16, Cdb.u16(r.sense(), 16), "field pointer at the descriptor's type code");

            byte[] streamToStream = new byte[20];
            streamToStream[0] = 0x03;
            Cdb.put16(streamToStream, 2, 16);
            r = xcopy(h, parameterList(List.of(self), List.of(streamToStream)))
                    .assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x09);
            assertEquals(16 + 32, Cdb.u16(r.sense(), 16), "field pointer at the segment's type code");

            byte[] tape = self.clone();
            tape[1] = 0x01; // PERIPHERAL DEVICE TYPE: sequential access
            xcopy(h, parameterList(List.of(tape), List.of(b2b))).assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x00);

            byte[] proxy = self.clone();
            proxy[1] = (byte) 0x80; // LU ID TYPE 10b, reserved: ignored under SPC-4 (libiscsi expects GOOD)
            xcopy(h, parameterList(List.of(proxy), List.of(b2b))).assertGood();
        }
    }

    @Test
    void listsBeyondTheLimitsAreRefusedAsLibiscsiExpects() {
        try (ScsiHarness h = twoLuns()) {
            byte[] self = identifies(h.unit);
            byte[] b2b = segment(0, 0, 1, 0, 1);
            List<byte[]> tooManyTargets = new ArrayList<>();
            for (int i = 0; i <= CopyParameterList.MAX_TARGET_DESCRIPTORS; i++) {
                tooManyTargets.add(self);
            }
            xcopy(h, parameterList(tooManyTargets, List.of(b2b))).assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x06);
            List<byte[]> tooManySegments = new ArrayList<>();
            for (int i = 0; i <= CopyParameterList.MAX_SEGMENT_DESCRIPTORS; i++) {
                tooManySegments.add(b2b);
            }
            xcopy(h, parameterList(List.of(self), tooManySegments))
                    .assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x08);
            List<byte[]> overLong = new ArrayList<>();
            for (int i = 0; i < 36; i++) {
                overLong.add(b2b); // 36 * 28 + 32 > MAXIMUM DESCRIPTOR LIST LENGTH
            }
            byte[] list = parameterList(List.of(self), overLong);
            h.run(extendedCopy(list.length), list).assertCheck(SenseException.ILLEGAL_REQUEST, 0x1A, 0x00);

            byte[] good = parameterList(List.of(self), List.of(b2b));
            byte[] cut = Arrays.copyOf(good, good.length - 1);
            xcopy(h, cut).assertCheck(SenseException.ILLEGAL_REQUEST, 0x1A, 0x00);
            xcopy(h, Arrays.copyOf(good, 15)).assertCheck(SenseException.ILLEGAL_REQUEST, 0x1A, 0x00);
            h.run(extendedCopy(0), null).assertGood(); // PARAMETER LIST LENGTH 0: nothing to do
        }
    }

    @Test
    void copyTargetsTheManagerCannotReachAreAborted() {
        try (ScsiHarness h = twoLuns()) {
            byte[] self = identifies(h.unit);
            xcopy(h, parameterList(List.of(self), List.of(segment(0, 1, 1, 0, 0))))
                    .assertCheck(SenseException.COPY_ABORTED, 0x08, 0x04);
            LogicalUnit elsewhere = new LogicalUnit(new MemoryBlockDevice("m9", MIB, BLOCK), identity("elsewhere"), false);
            xcopy(h, parameterList(List.of(self, identifies(elsewhere)), List.of(segment(0, 1, 1, 0, 0))))
                    .assertCheck(SenseException.COPY_ABORTED, 0x0D, 0x02);
            byte[] t10 = self.clone();
            t10[5] = 0x01; // designator type T10 vendor ID: not one the copy manager looks units up by
            xcopy(h, parameterList(List.of(t10), List.of(segment(0, 0, 1, 0, 1))))
                    .assertCheck(SenseException.COPY_ABORTED, 0x0D, 0x02);
            Result r = xcopy(h, parameterList(List.of(identifies(h.unit.identity().naa(), 4096)),
                    List.of(segment(0, 0, 1, 0, 1)))).assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x00);
            assertEquals(16 + 29, Cdb.u16(r.sense(), 16), "field pointer at DISK BLOCK LENGTH");
        }
    }

    @Test
    void aListIdentifierWithoutUsageMustBeZero() {
        try (ScsiHarness h = twoLuns()) {
            byte[] list = parameterList(5, CopyParameterList.NO_LIST_ID, List.of(identifies(h.unit)),
                    List.of(segment(0, 0, 1, 0, 1)));
            Result r = xcopy(h, list).assertCheck(SenseException.ILLEGAL_REQUEST, 0x26, 0x00);
            assertEquals(0, Cdb.u16(r.sense(), 16), "field pointer at LIST IDENTIFIER");
        }
    }

    // ---- RECEIVE COPY RESULTS and the Third-party Copy VPD page

    @Test
    void copyStatusIsKeptPerNexusAndListIdentifierUntilTheSessionEnds() {
        try (ScsiHarness h = twoLuns()) {
            h.run(receiveCopyResults(0x00, 1, 1024)).assertInvalidFieldInCdb(2);
            byte[] list = parameterList(1, CopyParameterList.HOLD_STATUS, List.of(identifies(h.unit)),
                    List.of(segment(0, 0, 300, 0, 1000)));
            xcopy(h, list).assertGood();
            byte[] status = h.run(receiveCopyResults(0x00, 1, 1024)).assertGood().data();
            assertEquals(12, status.length);
            assertEquals(8, Cdb.u32(status, 0), "AVAILABLE DATA");
            assertEquals(0x01, status[4], "HDD 0, COPY MANAGER STATUS: completed without errors");
            assertEquals(1, Cdb.u16(status, 5), "SEGMENTS PROCESSED");
            assertEquals(0, status[7], "TRANSFER COUNT UNITS: bytes");
            assertEquals(300L * BLOCK, Cdb.u32(status, 8), "TRANSFER COUNT");

            h.run(NEXUS_B, receiveCopyResults(0x00, 1, 1024), null).assertInvalidFieldInCdb(2);
            h.run(NEXUS_A, 1, receiveCopyResults(0x00, 1, 1024), null).assertInvalidFieldInCdb(2);
            h.target.nexusRemoved(NEXUS_A);
            h.run(receiveCopyResults(0x00, 1, 1024)).assertInvalidFieldInCdb(2);
        }
    }

    /** A second copy of one nexus with the list identifier of a running copy is refused; others are not. */
    @Test
    void aListIdentifierInUseByARunningCopyIsRefusedAsOperationInProgress() throws Exception {
        CountDownLatch reading = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        BlockDevice slow = new ShapedBlockDevice(new MemoryBlockDevice("m0", MIB, BLOCK), Geometry.simple(BLOCK), true) {
            @Override
            public void read(long offset, ByteBuffer dst) throws IOException {
                if (offset == 0) {
                    reading.countDown();
                    try {
                        assertTrue(release.await(10, TimeUnit.SECONDS));
                    } catch (InterruptedException e) {
                        throw new IOException(e);
                    }
                }
                super.read(offset, dst);
            }
        };
        try (ScsiHarness h = twoLuns(slow, new MemoryBlockDevice("m1", MIB, BLOCK), false)) {
            List<byte[]> targets = List.of(identifies(lun(h, 0)), identifies(lun(h, 1)));
            byte[] list = parameterList(3, CopyParameterList.HOLD_STATUS, targets, List.of(segment(0, 1, 8, 0, 0)));
            CompletableFuture<Result> running = CompletableFuture.supplyAsync(() -> xcopy(h, list));
            assertTrue(reading.await(10, TimeUnit.SECONDS), "the first copy reads its source");
            try {
                byte[] status = h.run(receiveCopyResults(0x00, 3, 64)).assertGood().data();
                assertEquals(0x00, status[4], "COPY MANAGER STATUS: in progress");
                xcopy(h, list).assertCheck(SenseException.ILLEGAL_REQUEST, 0x00, 0x16);
                byte[] otherList = parameterList(4, CopyParameterList.HOLD_STATUS, targets,
                        List.of(segment(0, 1, 8, 8, 8)));
                xcopy(h, otherList).assertGood();
                byte[] sameIdOfAnotherNexus = parameterList(3, CopyParameterList.HOLD_STATUS, targets,
                        List.of(segment(0, 1, 8, 16, 16)));
                xcopy(h, NEXUS_B, 0, sameIdOfAnotherNexus).assertGood();
            } finally {
                release.countDown();
            }
            running.get(10, TimeUnit.SECONDS).assertGood();
            assertEquals(0x01, h.run(receiveCopyResults(0x00, 3, 64)).assertGood().data()[4], "completed");
        }
    }

    @Test
    void operatingParametersReportTheLimitsTheParserEnforces() {
        try (ScsiHarness h = twoLuns()) {
            byte[] d = h.run(receiveCopyResults(0x03, 0, 1024)).assertGood().data();
            assertEquals(d.length - 4, Cdb.u32(d, 0), "AVAILABLE DATA");
            assertEquals(0x01, d[4] & 0x01, "SNLID");
            assertEquals(CopyParameterList.MAX_TARGET_DESCRIPTORS, Cdb.u16(d, 8));
            assertEquals(CopyParameterList.MAX_SEGMENT_DESCRIPTORS, Cdb.u16(d, 10));
            assertEquals(CopyParameterList.MAX_DESCRIPTOR_LIST_LENGTH, Cdb.u32(d, 12));
            assertEquals(0xFFFFL * BLOCK, Cdb.u32(d, 16), "MAXIMUM SEGMENT LENGTH");
            assertEquals(0, Cdb.u32(d, 20), "MAXIMUM INLINE DATA LENGTH");
            assertEquals(9, d[37], "DATA SEGMENT GRANULARITY: 2^9 bytes");
            assertEquals(2, d[43], "IMPLEMENTED DESCRIPTOR LIST LENGTH");
            assertArrayEquals(new byte[] {0x02, (byte) 0xE4}, Arrays.copyOfRange(d, 44, 46));
            assertArrayEquals(Arrays.copyOf(d, 10), h.run(receiveCopyResults(0x03, 0, 10)).assertGood().data(),
                    "cut to the allocation length");
        }
    }

    @Test
    void thirdPartyCopyPageDescribesTheSameCopyManager() {
        try (ScsiHarness h = twoLuns()) {
            byte[] d = h.run(inquiry(true, 0x8F, 1024)).assertGood().data();
            assertEquals(0x8F, d[1] & 0xff);
            assertEquals(d.length - 4, Cdb.u16(d, 2), "PAGE LENGTH");
            List<Integer> types = new ArrayList<>();
            for (int at = 4; at < d.length; at += 4 + Cdb.u16(d, at + 2)) {
                int type = Cdb.u16(d, at);
                int length = Cdb.u16(d, at + 2);
                assertEquals(0, length % 4, "descriptor 0x" + Integer.toHexString(type) + " padded to four bytes");
                types.add(type);
                byte[] body = Arrays.copyOfRange(d, at + 4, at + 4 + length);
                switch (type) {
                    case 0x0001 -> assertArrayEquals(new byte[] {7, (byte) 0x83, 1, 0x00, (byte) 0x84, 2, 0x00, 0x03},
                            body, "Supported Commands: EXTENDED COPY(LID1), COPY STATUS, OPERATING PARAMETERS");
                    case 0x0004 -> {
                        assertEquals(CopyParameterList.MAX_TARGET_DESCRIPTORS, Cdb.u16(body, 4));
                        assertEquals(CopyParameterList.MAX_SEGMENT_DESCRIPTORS, Cdb.u16(body, 6));
                        assertEquals(CopyParameterList.MAX_DESCRIPTOR_LIST_LENGTH, Cdb.u32(body, 8));
                    }
                    case 0x0008 -> assertArrayEquals(new byte[] {2, 0x02, (byte) 0xE4}, Arrays.copyOf(body, 3));
                    case 0x000C -> assertEquals(0, Cdb.u16(body, 0), "no CSCD descriptor IDs");
                    case 0x8001 -> {
                        assertEquals(0xFFFFL * BLOCK, Cdb.u32(body, 8), "MAXIMUM SEGMENT LENGTH");
                        assertEquals(9, body[12], "DATA SEGMENT GRANULARITY");
                    }
                    default -> fail("unexpected descriptor type 0x" + Integer.toHexString(type));
                }
            }
            assertEquals(List.of(0x0001, 0x0004, 0x0008, 0x000C, 0x8001), types);
        }
    }
}
