package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Members made by the kernel may carry md's bad-block log: space reserved by mdadm (bblog_offset/size, what
 * mdadm prints as "Bad Block Log : 512 entries available at offset 16 sectors") and, once Linux has recorded
 * bad sectors, feature_map bit 3 with entries in that space. The superblocks are crafted here the way mdadm
 * writes them: the log 16 sectors after the superblock (after the 8 sectors it keeps for a bitmap), 8
 * sectors long, initialised with 0xff.
 */
class MdBadBlockLogTest {
    static final long MEMBER = 8 << 20;
    static final Raid5Config CONFIG = Raid5Config.defaults("bbl").withChunk(65536);
    static final int LOG_OFFSET = 16;
    static final int LOG_SECTORS = 8;

    @TempDir
    Path dir;

    private List<Path> create(int n, long seed) throws Exception {
        List<Path> paths = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            paths.add(dir.resolve("m" + i + ".img"));
        }
        try (Raid5Array array = Raid5Files.create(paths, MEMBER, CONFIG, Raid5Options.defaults())) {
            byte[] data = new byte[1 << 20];
            new Random(seed).nextBytes(data);
            array.write(0, ByteBuffer.wrap(data));
        }
        for (Path p : paths) {
            reserveLog(p);
        }
        return paths;
    }

    static Md1Superblock superblock(Path member) throws Exception {
        ByteBuffer block = ByteBuffer.allocate(Md1Superblock.BLOCK_BYTES);
        try (FileChannel ch = FileChannel.open(member)) {
            ch.read(block, Md1Superblock.OFFSET_BYTES);
        }
        return Md1Superblock.decode(block.flip(), member.toString());
    }

    static void patch(Path member, Consumer<Md1Superblock> change) throws Exception {
        Md1Superblock sb = superblock(member);
        change.accept(sb);
        try (FileChannel ch = FileChannel.open(member, StandardOpenOption.WRITE)) {
            ch.write(sb.encode(), Md1Superblock.OFFSET_BYTES);
        }
    }

    /** What mdadm --create does: log space reserved and filled with 0xff, feature bit clear. */
    static void reserveLog(Path member) throws Exception {
        patch(member, sb -> {
            sb.bblogOffset = LOG_OFFSET;
            sb.bblogSize = LOG_SECTORS;
            sb.bblogShift = 0;
        });
        writeLog(member);
    }

    /** Writes the log area: the given (sector, length) entries, then 0xff to its end. */
    static void writeLog(Path member, long... sectorLength) throws Exception {
        ByteBuffer area = ByteBuffer.allocate(LOG_SECTORS * 512).order(ByteOrder.LITTLE_ENDIAN);
        Arrays.fill(area.array(), (byte) 0xff);
        for (int i = 0; i < sectorLength.length; i += 2) {
            area.putLong(i * 4, sectorLength[i] << 10 | sectorLength[i + 1]);
        }
        try (FileChannel ch = FileChannel.open(member, StandardOpenOption.WRITE)) {
            ch.write(area, (8 + LOG_OFFSET) * 512L);
        }
    }

    static byte[] logArea(Path member) throws Exception {
        ByteBuffer area = ByteBuffer.allocate(LOG_SECTORS * 512);
        try (FileChannel ch = FileChannel.open(member)) {
            ch.read(area, (8 + LOG_OFFSET) * 512L);
        }
        return area.array();
    }

    private static byte[] allFf() {
        byte[] ff = new byte[LOG_SECTORS * 512];
        Arrays.fill(ff, (byte) 0xff);
        return ff;
    }

    @Test
    void theFieldsRoundTrip() {
        Md1Superblock sb = new Md1Superblock();
        sb.devRoles = new int[] {0, 1, 2};
        sb.bblogShift = 3;
        sb.bblogSize = 8;
        sb.bblogOffset = -16;
        ByteBuffer le = sb.encode().order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(3, le.get(185));
        assertEquals(8, le.getShort(186));
        assertEquals(-16, le.getInt(188));
        Md1Superblock back = Md1Superblock.decode(le, "x");
        assertEquals(3, back.bblogShift);
        assertEquals(8, back.bblogSize);
        assertEquals(-16, back.bblogOffset);
    }

    @Test
    void entriesParseLikeTheKernelUpToTheFirstAllOnes() {
        ByteBuffer area = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        Arrays.fill(area.array(), (byte) 0xff);
        area.putLong(0, 100L << 10 | 8);
        area.putLong(8, 5000L << 10 | 1);
        area.putLong(24, 7L << 10 | 1);                        // after the terminator: not read
        assertEquals(List.of(new MdBadBlockLog.Entry(800, 64), new MdBadBlockLog.Entry(40000, 8)),
                MdBadBlockLog.parse(area, 3));
        assertEquals(List.of(), MdBadBlockLog.parse(ByteBuffer.wrap(allFf()), 0));
    }

    /** mdadm --create's members: log space reserved, no bad blocks. It is kept, and never written. */
    @Test
    void aReservedLogIsKeptAndItsAreaNeverWritten() throws Exception {
        List<Path> paths = create(4, 1);
        try (Raid5Array array = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            assertEquals(Raid5Status.Health.CLEAN, array.status().health());
            assertTrue(array.assemblyProblems().isEmpty(), array.assemblyProblems().toString());
            array.write(0, ByteBuffer.allocate(4 << 20));
        }
        for (Path p : paths) {
            Md1Superblock sb = superblock(p);
            assertEquals(LOG_OFFSET, sb.bblogOffset, p.toString());
            assertEquals(LOG_SECTORS, sb.bblogSize, p.toString());
            assertFalse(sb.hasBadBlocks());
            assertArrayEquals(allFf(), logArea(p), "the log area is untouched: " + p);
            String out = MdadmExamineTest.examine(p);
            assertEquals("512 entries available at offset 16 sectors", MdadmExamineTest.field(out, "Bad Block Log"), out);
            assertTrue(MdadmExamineTest.field(out, "Checksum").endsWith("- correct"), out);
        }
    }

    /** Linux recorded bad sectors on a member: the array is refused, naming it, and no member is written. */
    @Test
    void aMemberWithBadBlocksIsRefusedAndNothingIsWritten() throws Exception {
        List<Path> paths = create(4, 2);
        Path bad = paths.get(2);
        patch(bad, sb -> sb.featureMap |= Md1Superblock.FEATURE_BAD_BLOCKS);
        writeLog(bad, 4096, 8, 9000, 1);
        assertTrue(MdadmExamineTest.examine(bad).contains("bad blocks present"), MdadmExamineTest.examine(bad));
        List<byte[]> before = new ArrayList<>();
        for (Path p : paths) {
            before.add(Files.readAllBytes(p));
        }
        Raid5AssembleException e = assertThrows(Raid5AssembleException.class,
                () -> Raid5Files.assemble(paths, Raid5Options.defaults(), false));
        assertTrue(e.getMessage().contains("bad-block log"), e.getMessage());
        assertEquals(1, e.problems().size(), e.problems().toString());
        String problem = e.problems().get(0);
        assertTrue(problem.startsWith(bad + ": ") && problem.contains("2 bad ranges") && problem.contains("4096+8")
                && problem.contains("9000+1") && problem.contains("nothing has been written"), problem);
        for (int i = 0; i < paths.size(); i++) {
            assertArrayEquals(before.get(i), Files.readAllBytes(paths.get(i)), "untouched: " + paths.get(i));
        }
        // Taken out of the list, the array starts degraded without it.
        try (Raid5Array array = Raid5Files.assemble(List.of(paths.get(0), paths.get(1), paths.get(3)),
                Raid5Options.defaults(), false)) {
            assertEquals(Raid5Status.Health.DEGRADED, array.status().health());
        }
    }

    /** The flag set over an empty log: the kernel would load no entries and clear it; so do we. */
    @Test
    void aFlaggedButEmptyLogIsClearedLikeTheKernelDoes() throws Exception {
        List<Path> paths = create(3, 3);
        Path flagged = paths.get(1);
        patch(flagged, sb -> sb.featureMap |= Md1Superblock.FEATURE_BAD_BLOCKS);
        try (Raid5Array array = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            assertEquals(Raid5Status.Health.CLEAN, array.status().health());
            assertTrue(array.assemblyProblems().stream().anyMatch(p -> p.startsWith(flagged + ": ")
                    && p.contains("the log is empty")), array.assemblyProblems().toString());
        }
        Md1Superblock sb = superblock(flagged);
        assertFalse(sb.hasBadBlocks());
        assertEquals(LOG_OFFSET, sb.bblogOffset);
        assertEquals(LOG_SECTORS, sb.bblogSize);
        assertArrayEquals(allFf(), logArea(flagged));
    }

    /** A spare whose log lists bad sectors is not used, and left as it is. */
    @Test
    void aSpareWithBadBlocksIsLeftUnusedAndUntouched() throws Exception {
        List<Path> paths = create(3, 4);
        Path spare = dir.resolve("spare.img");
        try (Raid5Array array = Raid5Files.assemble(paths, Raid5Options.defaults(), false)) {
            Raid5Files.addSpare(array, spare, 0);
        }
        patch(spare, sb -> sb.featureMap |= Md1Superblock.FEATURE_BAD_BLOCKS);
        writeLog(spare, 1234, 8);
        byte[] before = Files.readAllBytes(spare);
        List<Path> all = new ArrayList<>(paths);
        all.add(spare);
        try (Raid5Array array = Raid5Files.assemble(all, Raid5Options.defaults(), false)) {
            assertEquals(Raid5Status.Health.CLEAN, array.status().health());
            assertEquals(List.of(), array.status().spares());
            assertTrue(array.assemblyProblems().stream().anyMatch(p -> p.startsWith(spare + ": ")
                    && p.contains("not used as a spare")), array.assemblyProblems().toString());
        }
        assertArrayEquals(before, Files.readAllBytes(spare));
    }

    /** The bitmap the engine creates stops before the log: its chunk grows instead. */
    @Test
    void aNewBitmapNeverReachesIntoTheLog() {
        Md1Superblock sb = new Md1Superblock();
        sb.chunkSectors = 1024;
        sb.sizeSectors = 1L << 32;                                // 2 TiB per member: 32768 bits of 64 MiB
        sb.dataOffsetSectors = 262144;
        assertEquals(32768, WriteIntentBitmap.create(sb, 0).bits());
        sb.bblogOffset = LOG_OFFSET;
        sb.bblogSize = LOG_SECTORS;
        assertEquals(LOG_OFFSET - WriteIntentBitmap.OFFSET_SECTORS, WriteIntentBitmap.roomBeforeData(sb) / 512);
        WriteIntentBitmap bitmap = WriteIntentBitmap.create(sb, 0);
        assertEquals(16384, bitmap.bits());
        assertTrue(WriteIntentBitmap.blockBytes(bitmap.bits()) <= 8 * 512);
        sb.bblogOffset = 8;                                       // the log where the bitmap would start: no bitmap
        assertEquals(null, WriteIntentBitmap.create(sb, 0));
    }
}
