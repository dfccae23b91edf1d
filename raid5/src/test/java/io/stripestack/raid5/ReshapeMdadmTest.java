package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The real {@code mdadm --examine} reads an interrupted reshape and the grown array from the members. */
class ReshapeMdadmTest {
    static final int CHUNK = 64 * 1024;
    static final long MEMBER_BYTES = 2048 * 512 + 64L * CHUNK;

    @TempDir
    Path dir;

    @Test
    void examineShowsTheReshapePositionThenTheNewGeometry() throws Exception {
        MdadmExamineTest.mdadm();
        List<Path> paths = MemberFiles.paths(dir, "m", 5);
        Raid5Config config = new Raid5Config("grow", CHUNK, Raid5Layout.LEFT_SYMMETRIC, 2048);
        Raid5Options options = Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.PPL);
        ByteBuffer buf = ByteBuffer.allocateDirect(CHUNK);
        try (Raid5Array a = Raid5Files.create(paths.subList(0, 3), MEMBER_BYTES, config, options)) {
            for (long off = 0; off < a.size(); off += CHUNK) {
                buf.clear();
                buf.putLong(0, off);
                a.write(off, buf.clear());
            }
            Raid5Files.addSpare(a, paths.get(3), MEMBER_BYTES);
            a.setSyncSpeedMin(1);
            a.setSyncSpeedMax(1);   // the first batch moves, then the reshape crawls until close
            a.setRaidDevices(4);
            assertEquals(ConsistencyPolicy.RESYNC, a.consistencyPolicy(), "ppl is off for the reshape");
            String mdstat = a.status().mdstat();
            assertTrue(mdstat.contains("reshape =") && mdstat.contains("[4/4] [UUUU]"), mdstat);
        }
        String interrupted = MdadmExamineTest.examine(paths.get(0));
        assertEquals("4", MdadmExamineTest.field(interrupted, "Raid Devices"));
        assertTrue(MdadmExamineTest.field(interrupted, "Delta Devices").startsWith("1 (3->4)"), interrupted);
        String position = MdadmExamineTest.field(interrupted, "Reshape pos'n");
        assertFalse(position.startsWith("0 "), interrupted);
        assertTrue(MdadmExamineTest.field(MdadmExamineTest.examine(paths.get(3)), "Device Role").contains("3"));

        try (Raid5Array a = Raid5Files.assemble(paths.subList(0, 4), options, false)) {
            a.setSyncSpeedMax(Raid5Array.DEFAULT_SYNC_SPEED_MAX);
            assertTrue(a.awaitReshape(60, TimeUnit.SECONDS));
            assertEquals(4, a.memberCount());
            assertEquals(ConsistencyPolicy.PPL, a.consistencyPolicy(), "ppl again after the reshape");
            Raid5Files.addSpare(a, paths.get(4), MEMBER_BYTES);
            a.setRaidDevices(5);
            assertTrue(a.awaitReshape(60, TimeUnit.SECONDS));
            assertEquals(5, a.memberCount());
            for (long off = 0; off < 2L * 64 * CHUNK; off += CHUNK) {
                buf.clear();
                a.read(off, buf);
                assertEquals(off, buf.getLong(0), "chunk at " + off);
            }
        }
        for (Path member : paths) {
            String grown = MdadmExamineTest.examine(member);
            assertEquals("5", MdadmExamineTest.field(grown, "Raid Devices"), grown);
            assertFalse(grown.contains("Reshape pos'n"), grown);
            assertEquals("clean", MdadmExamineTest.field(grown, "State"));
            assertTrue(MdadmExamineTest.field(grown, "Checksum").endsWith("correct"), grown);
            assertEquals("AAAAA", MdadmExamineTest.field(grown, "Array State").split(" ")[0]);
        }
    }
    @Test
    void examineShowsTheNewChunkWhileItChangesThenTheNewChunk() throws Exception {
        MdadmExamineTest.mdadm();
        List<Path> paths = MemberFiles.paths(dir, "c", 4);
        Raid5Config config = new Raid5Config("rechunk", CHUNK, Raid5Layout.LEFT_SYMMETRIC, 2048);
        Raid5Options options = Raid5Options.defaults().withConsistencyPolicy(ConsistencyPolicy.RESYNC);
        ByteBuffer buf = ByteBuffer.allocateDirect(CHUNK);
        try (Raid5Array a = Raid5Files.create(paths, MEMBER_BYTES, config, options)) {
            for (long off = 0; off < a.size(); off += CHUNK) {
                buf.clear();
                buf.putLong(0, off);
                a.write(off, buf.clear());
            }
            a.setSyncSpeedMin(1);
            a.setSyncSpeedMax(1);   // the first batch moves, then the reshape crawls until close
            a.setChunkSize(2 * CHUNK);
            assertTrue(a.status().mdstat().contains("reshape ="), a.status().mdstat());
        }
        String interrupted = MdadmExamineTest.examine(paths.get(0));
        assertEquals("64K", MdadmExamineTest.field(interrupted, "Chunk Size"), interrupted);
        assertEquals("128K", MdadmExamineTest.field(interrupted, "New Chunksize"), interrupted);
        assertFalse(MdadmExamineTest.field(interrupted, "Reshape pos'n").startsWith("0 "), interrupted);

        try (Raid5Array a = Raid5Files.assemble(paths, options, false)) {
            a.setSyncSpeedMax(Raid5Array.DEFAULT_SYNC_SPEED_MAX);
            assertTrue(a.awaitReshape(60, TimeUnit.SECONDS));
            assertEquals(2 * CHUNK, a.chunkBytes());
            for (long off = 0; off < a.size(); off += CHUNK) {
                buf.clear();
                a.read(off, buf);
                assertEquals(off, buf.getLong(0), "chunk at " + off);
            }
        }
        for (Path member : paths) {
            String done = MdadmExamineTest.examine(member);
            assertEquals("128K", MdadmExamineTest.field(done, "Chunk Size"), done);
            assertFalse(done.contains("New Chunksize") || done.contains("Reshape pos'n"), done);
            assertEquals("clean", MdadmExamineTest.field(done, "State"));
            assertTrue(MdadmExamineTest.field(done, "Checksum").endsWith("correct"), done);
            assertEquals("AAAA", MdadmExamineTest.field(done, "Array State").split(" ")[0]);
        }
    }
}
