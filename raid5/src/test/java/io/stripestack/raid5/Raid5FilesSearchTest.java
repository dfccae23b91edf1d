package io.stripestack.raid5;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Assembly from the files of the array's UUID in the members' directories, not only from a list. */
class Raid5FilesSearchTest {
    static final long MEMBER = 3 << 20;
    static final Raid5Config CONFIG = Raid5Config.defaults("scan").withChunk(16384);

    @TempDir
    Path dir;

    private List<Path> paths(String prefix, int n) {
        return MemberFiles.paths(dir, prefix, n);
    }

    private static byte[] readAll(Raid5Array array) throws Exception {
        byte[] got = new byte[(int) array.size()];
        array.read(0, ByteBuffer.wrap(got));
        return got;
    }

    /** Member 1 fails, a spare no list names is added and rebuilt in: the next assembly finds it by UUID. */
    @Test
    void aSpareRebuiltInIsFoundByItsUuid() throws Exception {
        List<Path> members = paths("m", 4);
        Path spare = dir.resolve("added-later.img");
        byte[] data;
        try (Raid5Array array = Raid5Files.create(members, MEMBER, CONFIG, Raid5Options.defaults())) {
            data = new byte[(int) array.size()];
            new Random(5).nextBytes(data);
            array.write(0, ByteBuffer.wrap(data));
            array.setSyncSpeedMax(Integer.MAX_VALUE);
            array.failMember(1);
            Raid5Files.addSpare(array, spare, 0);
            assertTrue(array.awaitSyncIdle(60, java.util.concurrent.TimeUnit.SECONDS));
            assertEquals(Raid5Status.Health.CLEAN, array.status().health());
        }
        try (Raid5Array other = Raid5Files.create(paths("other", 3), MEMBER, CONFIG, Raid5Options.defaults())) {
            other.write(0, ByteBuffer.allocate(4096));                  // another array's members in the same place
        }
        Files.write(dir.resolve("notes.txt"), "not a member".getBytes());

        // (Assembling from the list alone would start degraded and record the rebuilt spare as faulty.)
        try (Raid5Array array = Raid5Files.assemble(members, List.of(dir), Raid5Options.defaults(), false)) {
            assertEquals(Raid5Status.Health.CLEAN, array.status().health(), array.assemblyProblems().toString());
            assertEquals(spare.toString(), array.status().members().get(1).device());
            assertArrayEquals(data, readAll(array));
            assertTrue(array.assemblyProblems().stream().noneMatch(p -> p.contains("other")),
                    "another array's files are not this array's business: " + array.assemblyProblems());
            assertTrue(array.assemblyProblems().stream().anyMatch(p -> p.startsWith(members.get(1) + ": ")),
                    "the failed member is still reported: " + array.assemblyProblems());
        }
    }

    /**
     * A member file renamed in its directory (m3.img -> m3.img.gone) is still a member by md's rule (its superblock
     * says so and it is given, here by its directory): the log names the file used and its role, and the listed name
     * that is not found is not said to leave the array degraded.
     */
    @Test
    void aRenamedMemberIsReportedAsWhatItIs() throws Exception {
        List<Path> members = paths("m", 4);
        byte[] data;
        try (Raid5Array array = Raid5Files.create(members, MEMBER, CONFIG, Raid5Options.defaults())) {
            data = new byte[(int) array.size()];
            new Random(7).nextBytes(data);
            array.write(0, ByteBuffer.wrap(data));
        }
        Path renamed = Files.move(members.get(3), dir.resolve(members.get(3).getFileName() + ".gone"));
        java.io.PrintStream original = System.err;
        java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(captured, true, java.nio.charset.StandardCharsets.UTF_8));
        String log;
        try (Raid5Array array = Raid5Files.assemble(members, List.of(dir), Raid5Options.defaults(), false)) {
            log = captured.toString(java.nio.charset.StandardCharsets.UTF_8);
            assertEquals(Raid5Status.Health.CLEAN, array.status().health(), array.assemblyProblems().toString());
            assertEquals(renamed.toString(), array.status().members().get(3).device());
            assertArrayEquals(data, readAll(array));
            String problems = String.join("\n", array.assemblyProblems());
            assertTrue(problems.contains(members.get(3) + ": not found, and not needed"), problems);
            assertTrue(!problems.contains("degraded"), problems);
        } finally {
            System.setErr(original);
        }
        System.err.print(log);
        assertTrue(log.contains(renamed + " is not in the configured lists; its superblock makes it member 3 (active), "
                + "and it is used as such"), log);
        assertTrue(!log.contains("runs degraded") && !log.contains("assembled with it"), log);
    }

    /** A copy of a member lying next to it (a backup) is not taken for a second claimant of its role. */
    @Test
    void aCopyOfAMemberIsNotUsed() throws Exception {
        List<Path> members = paths("m", 3);
        byte[] data;
        try (Raid5Array array = Raid5Files.create(members, MEMBER, CONFIG, Raid5Options.defaults())) {
            data = new byte[(int) array.size()];
            new Random(6).nextBytes(data);
            array.write(0, ByteBuffer.wrap(data));
        }
        Files.copy(members.get(0), dir.resolve("backup-of-m0.img"));
        Files.copy(members.get(2), dir.resolve("backup-of-m2.old"));
        try (Raid5Array array = Raid5Files.assemble(members, List.of(dir), Raid5Options.defaults(), false)) {
            assertEquals(Raid5Status.Health.CLEAN, array.status().health());
            for (int role = 0; role < 3; role++) {
                assertEquals(members.get(role).toString(), array.status().members().get(role).device());
            }
            assertArrayEquals(data, readAll(array));
        }
    }
}
